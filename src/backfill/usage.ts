/** `cdn-exporter backfill --help`. docs/backfill.md says the same at length. */
export function backfillUsage(program = 'cdn-exporter'): string {
  return `Usage: ${program} backfill --config FILE (--from TIME --to TIME | --gaps) (--output FILE.om | --remote-write)
       [--accounts a,b] [--window 10m] [--resume] [--progress FILE]

Reads the closed traffic windows of the past through the CDN's metrics API, at the configured request rate
(api.requests_per_second, api.concurrency, pauses after a 429), and writes them as the settled series: the same
family names and labels as /metrics, plus job, instance and remote_write.external_labels, each counter a running
total at each window's end with a 0 one millisecond after its first window's start (docs/remote-write.md).

Flags:
  --config FILE        the exporter's configuration (api, accounts, metrics, remote_write, state_file)
  --from TIME          start of the range, on a whole minute, with its zone: 2026-10-01T00:00:00Z
  --to TIME            end of the range (exclusive); at most now - metrics.delay - metrics.revisit
  --gaps               instead of --from/--to: the spans the running exporter skipped, listed beside
                       state_file (state.gaps.json); each is written as a run of its own, then marked filled
  --accounts a,b       these configured accounts (default: every configured account this shard owns)
  --window DURATION    the window asked for, 1m to 10m in whole minutes (default 10m)
  --output FILE.om     OpenMetrics text with timestamps, for promtool tsdb create-blocks-from openmetrics
  --remote-write       push through remote_write instead (the receiver must take samples this old)
  --resume             continue an interrupted backfill (same flags) with the totals it had reached
  --progress FILE      with --remote-write: where the progress is kept (default beside state_file,
                       state.backfill.json); --output keeps FILE.om.progress
  --log.level LEVEL    debug | info | warn | error (default info)
  --log.format FORMAT  json | logfmt (default json)

Failures: 5xx, 429 and network errors are retried with backoff; a 504 reads the window in halves; a 422 skips the
window (counted, logged); 401/403 stop the backfill (exit 1) with its progress kept for --resume.
Exit codes: 0 done, 1 stopped by a failure, 2 bad flags or configuration, 130/143 interrupted by SIGINT/SIGTERM
(progress kept: run the same command with --resume).
`;
}
