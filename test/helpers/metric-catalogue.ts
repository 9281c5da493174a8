/**
 * The metric catalogue (the contract of names, as docs/metrics.md lists it), as family name -> label
 * names. A dashboard or a rule that uses a name missing from this list is a broken contract, not a test to update
 * casually.
 */

const TRAFFIC = ['account', 'resource'];
const DVR = ['account', 'stream', 'host'];
const REC = ['account', 'id'];

function side(s: 'edge' | 'origin'): Record<string, string[]> {
  return {
    [`cdn_${s}_responses_total`]: [...TRAFFIC, 'code'],
    [`cdn_${s}_responses_by_class_total`]: [...TRAFFIC, 'class'],
    [`cdn_${s}_requests_total`]: TRAFFIC,
    [`cdn_${s}_transferred_bytes_total`]: TRAFFIC,
    [`cdn_${s}_bandwidth_bytes_per_second`]: TRAFFIC,
    [`cdn_${s}_request_duration_median_seconds`]: [...TRAFFIC, 'size_range'],
    // metrics.window_gauges: true
    [`cdn_${s}_window_responses`]: [...TRAFFIC, 'code'],
    [`cdn_${s}_window_responses_by_class`]: [...TRAFFIC, 'class'],
    [`cdn_${s}_window_requests`]: TRAFFIC,
    [`cdn_${s}_window_transferred_bytes`]: TRAFFIC,
  };
}

export const CATALOGUE: Readonly<Record<string, readonly string[]>> = {
  cdn_resource_info: ['account', 'resource', 'resource_name', 'cname'],
  ...side('edge'),
  ...side('origin'),
  cdn_edge_cache_hit_bytes_total: TRAFFIC,
  cdn_edge_cache_hit_ratio: TRAFFIC,
  cdn_edge_window_cache_hit_bytes: TRAFFIC,

  cdn_metrics_window_end_timestamp_seconds: ['account'],
  cdn_metrics_windows_total: ['account'],
  cdn_metrics_skipped_seconds_total: ['account', 'reason'],
  // Proposed with the exporter dashboard (not in the first catalogue): the current max window.
  cdn_metrics_window_seconds: ['account'],
  // metrics.revisit: the revisions counter, and the counter of the edge requests revisits added (named here; the
  // first catalogue only asked for one).
  cdn_metrics_revisions_total: ['account', 'direction'],
  cdn_metrics_revisit_edge_requests_total: ['account'],

  cdn_dvr_stream_alive: DVR,
  cdn_dvr_enabled: DVR,
  cdn_dvr_window_seconds: DVR,
  cdn_dvr_recorded_seconds: DVR,
  cdn_dvr_ranges: DVR,
  cdn_dvr_first_timestamp_seconds: DVR,
  cdn_dvr_last_timestamp_seconds: DVR,
  cdn_dvr_gap_seconds: DVR,
  cdn_dvr_largest_gap_seconds: DVR,
  cdn_dvr_coverage_ratio: DVR,
  // Issue 11: per configured stream, whether its own poll was answered (added after the first catalogue).
  cdn_dvr_stream_up: ['account', 'stream'],

  cdn_recording_info: [...REC, 'resource_id', 'stream_type', 'launch_type', 'source_domain', 'source_path'],
  cdn_recording_status: [...REC, 'status'],
  cdn_recording_instances: REC,
  cdn_recording_last_start_timestamp_seconds: REC,
  cdn_recording_last_stop_timestamp_seconds: REC,
  cdn_recording_dvr_enabled: REC,
  cdn_recording_dvr_window_seconds: REC,
  cdn_recording_storage_seconds: REC,

  cdn_up: ['api', 'account'],
  cdn_api_requests_total: ['api', 'code'],
  cdn_api_request_duration_seconds: ['api'],
  cdn_api_queue_length: [],
  cdn_exporter_last_success_timestamp_seconds: ['api', 'account'],
  cdn_exporter_parse_errors_total: ['api'],
  cdn_exporter_build_info: ['version'],
  cdn_series_refused_total: ['account', 'reason'],
  cdn_folded_resources: ['account'],
  cdn_auth_token_expiry_timestamp_seconds: ['login'],
  cdn_auth_logins_total: ['login', 'result'],
  cdn_discovered_accounts: ['login'],
  // Cost (issue 24): the contract's commit per account.
  cdn_commit_transfer_bytes: ['account'],
  cdn_commit_bandwidth_bits_per_second: ['account'],
};

/**
 * The cost recording rules of rules/cdn-exporter.rules.yml (docs/metrics.md, "Cost", names the first two), by the
 * labels they keep: no target labels (they aggregate them away), `month` on the per-minute and per-window ones.
 */
export const RECORDED: Readonly<Record<string, readonly string[]>> = {
  'cdn:edge_bandwidth_bits_per_second:avg5m': ['account', 'month'],
  'cdn:edge_transferred_bytes:increase1h': ['account'],
  'cdn:edge_transferred_bytes:increase1m': ['account', 'month'],
  'cdn:metrics_window:new1m': ['account', 'job', 'instance'],
  'cdn_resource:edge_bandwidth_bits_per_second:avg5m': ['account', 'resource'],
  'cdn_resource:edge_transferred_bytes:increase1h': ['account', 'resource'],
  'cdn:edge_transferred_bytes:month_to_date': ['account'],
  'cdn:edge_bandwidth_bits_per_second:p95_month_to_date': ['account'],
  'cdn:metrics_window_seen:ratio_month_to_date': ['account'],
};

/** Histogram families: their samples are NAME_bucket{le}, NAME_sum and NAME_count. */
export const HISTOGRAMS: ReadonlySet<string> = new Set(['cdn_api_request_duration_seconds']);

/** Names outside the catalogue that dashboards may use: Prometheus' own and prom-client's defaults. */
export const EXTERNAL: Readonly<Record<string, readonly string[]>> = {
  up: [],
  process_cpu_seconds_total: [],
  process_resident_memory_bytes: [],
  nodejs_heap_size_used_bytes: [],
  nodejs_eventloop_lag_p99_seconds: [],
};

/** Labels every scraped series carries besides its own. */
export const TARGET_LABELS: readonly string[] = ['job', 'instance'];

/**
 * Counters that step once per traffic window (not per scrape): rate()/increase() over them need a range of at
 * least two of the largest window (10 minutes), docs/metrics.md, "How traffic is counted".
 */
export const WINDOW_STEPPED: ReadonlySet<string> = new Set(
  Object.keys(CATALOGUE).filter(
    (n) => n.endsWith('_total') && (/^cdn_(edge|origin)_/.test(n) || n.startsWith('cdn_metrics_')),
  ),
);

/**
 * The exporter's own API counters: they move with each request, but in steady state the metrics API is asked
 * about once per window and account, so `$__rate_interval` over them shows zeros and spikes as well.
 */
export const REQUEST_STEPPED: ReadonlySet<string> = new Set([
  'cdn_api_requests_total',
  'cdn_api_request_duration_seconds_bucket',
  'cdn_api_request_duration_seconds_sum',
  'cdn_api_request_duration_seconds_count',
  'cdn_exporter_parse_errors_total',
]);

/** Smallest literal range allowed over a window-stepped counter: twice the largest window. */
export const MIN_WINDOW_RANGE_SECONDS = 20 * 60;

/** The labels a sample name may carry, or undefined when the name is unknown. */
export function labelsOf(name: string): readonly string[] | undefined {
  const known = CATALOGUE[name] ?? EXTERNAL[name];
  if (known) return [...known, ...TARGET_LABELS];
  const recorded = RECORDED[name];
  if (recorded) return recorded;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = name.slice(0, -suffix.length);
    if (name.endsWith(suffix) && HISTOGRAMS.has(base)) {
      const labels = [...(CATALOGUE[base] ?? []), ...TARGET_LABELS];
      return suffix === '_bucket' ? [...labels, 'le'] : labels;
    }
  }
  return undefined;
}
