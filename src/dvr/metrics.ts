/**
 * DVR health families (docs/metrics.md, "DVR health"): per host (labels account, stream, host), and one per stream (labels
 * account, stream) saying whether the stream's own poll was answered.
 */
import type { Family, SeriesStoreApi } from '../store/types.js';

export interface DvrFamilies {
  alive: Family;
  enabled: Family;
  window: Family;
  recorded: Family;
  ranges: Family;
  first: Family;
  last: Family;
  gap: Family;
  largestGap: Family;
  coverage: Family;
  /** Per stream, not per host: whether the last poll of the stream was answered (1) or failed (0). */
  streamUp: Family;
}

const LABELS = ['account', 'stream', 'host'] as const;

export function createDvrFamilies(store: SeriesStoreApi): DvrFamilies {
  const gauge = (name: string, help: string) =>
    store.family({ name, help, type: 'gauge', labelNames: LABELS });
  return {
    alive: gauge('cdn_dvr_stream_alive', 'Whether the stream is alive on the host (is_alive), 1 or 0.'),
    enabled: gauge('cdn_dvr_enabled', 'Whether DVR is enabled for the stream on the host, 1 or 0.'),
    window: gauge(
      'cdn_dvr_window_seconds',
      'DVR depth (dvr.window; the API does not show its unit, seconds assumed).',
    ),
    recorded: gauge(
      'cdn_dvr_recorded_seconds',
      'Seconds recorded in the DVR ranges (merged, breaks excluded).',
    ),
    ranges: gauge('cdn_dvr_ranges', 'Number of distinct recorded periods after merging overlapping ranges.'),
    first: gauge('cdn_dvr_first_timestamp_seconds', 'Start of the oldest DVR range, Unix seconds.'),
    last: gauge(
      'cdn_dvr_last_timestamp_seconds',
      'End of the newest DVR range, Unix seconds; age is time() minus this.',
    ),
    gap: gauge(
      'cdn_dvr_gap_seconds',
      "Seconds of breaks between the first range's start and the last range's end.",
    ),
    largestGap: gauge('cdn_dvr_largest_gap_seconds', 'The longest break between two DVR ranges, seconds.'),
    coverage: gauge('cdn_dvr_coverage_ratio', 'Share of [now - window, now] covered by DVR ranges, 0..1.'),
    streamUp: store.family({
      name: 'cdn_dvr_stream_up',
      help: 'Whether the last poll of the configured stream was answered (1), or failed (0: unknown stream 404, or another error).',
      type: 'gauge',
      labelNames: ['account', 'stream'],
    }),
  };
}
