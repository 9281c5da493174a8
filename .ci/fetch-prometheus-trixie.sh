#!/usr/bin/env bash
# Fetches Debian trixie's prometheus package (2.53.x: created-timestamp-zero-ingestion, otlp-write-receiver,
# native histograms) and unpacks it into DIR, without touching the system's apt sources or installed packages.
# Used by .ci/run (a copy of the project tool). Usage: fetch-prometheus-trixie.sh DIR   -> DIR/usr/bin/prometheus, DIR/usr/bin/promtool
set -euo pipefail
DIR=${1:?usage: fetch-prometheus-trixie.sh DIR}
[ -x "$DIR/usr/bin/prometheus" ] && { echo "$DIR/usr/bin/prometheus"; exit 0; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/lists/partial" "$W/archives/partial"
echo "deb http://deb.debian.org/debian trixie main" > "$W/sources.list"
APT=(-o Dir::Etc::sourcelist="$W/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$W/lists"
     -o Dir::Cache::archives="$W/archives" -o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1)
apt-get "${APT[@]}" update >/dev/null
(cd "$W" && apt-get "${APT[@]}" download prometheus >/dev/null 2>&1)
mkdir -p "$DIR"
dpkg -x "$W"/prometheus_*.deb "$DIR"
"$DIR/usr/bin/prometheus" --version 2>&1 | head -1 >&2
echo "$DIR/usr/bin/prometheus"
