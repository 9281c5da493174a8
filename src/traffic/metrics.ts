/**
 * Traffic metric families (docs/metrics.md, "Traffic"). Counters step once per window; gauges show the newest window.
 * With `breakdown: account` the `resource` label is absent everywhere.
 */

import type { Breakdown, Side } from '../api/vocabulary.js';
import type { Family, SeriesStoreApi } from '../store/types.js';

export interface SideFamilies {
  responses: Family;
  responsesByClass: Family;
  requests: Family;
  transferredBytes: Family;
  bandwidth: Family;
  requestDurationMedian: Family;
  /** Edge only. */
  cacheHitBytes?: Family;
  cacheHitRatio?: Family;
  /** Only with `metrics.window_gauges: true`: the newest window's counts as gauges. */
  window?: {
    responses: Family;
    responsesByClass: Family;
    requests: Family;
    transferredBytes: Family;
    cacheHitBytes?: Family;
  };
}

export interface TrafficFamilies {
  breakdown: Breakdown;
  /** Label names every traffic series starts with: [account] or [account, resource]. */
  base: readonly string[];
  resourceInfo?: Family;
  /** Breakdown `resource` only: resources folded into `__other__` in the account's newest window (./fold.ts). */
  foldedResources?: Family;
  edge: SideFamilies;
  origin: SideFamilies;
  windowEnd: Family;
  windows: Family;
  skippedSeconds: Family;
  windowSize: Family;
  /** Only with `metrics.revisit` on: revisits of late data by direction, and the edge requests they added. */
  revisions?: Family;
  revisitEdgeRequests?: Family;
}

const SIDE_HELP: Record<Side, string> = { edge: 'edge servers', origin: 'origin servers' };

function sideFamilies(
  store: SeriesStoreApi,
  side: Side,
  base: readonly string[],
  windowGauges: boolean,
): SideFamilies {
  const where = SIDE_HELP[side];
  const f: SideFamilies = {
    responses: store.family({
      name: `cdn_${side}_responses_total`,
      help: `Responses of ${where} by exact HTTP status code (from ${side}_status_<code>).`,
      type: 'counter',
      labelNames: [...base, 'code'],
    }),
    responsesByClass: store.family({
      name: `cdn_${side}_responses_by_class_total`,
      help: `Responses of ${where} by status class 2xx..5xx (from ${side}_status_<class>); a separate family from the exact codes.`,
      type: 'counter',
      labelNames: [...base, 'class'],
    }),
    requests: store.family({
      name: `cdn_${side}_requests_total`,
      help: `Requests to ${where} (from ${side}_requests_total).`,
      type: 'counter',
      labelNames: base,
    }),
    transferredBytes: store.family({
      name: `cdn_${side}_transferred_bytes_total`,
      help: `Bytes transferred by ${where}: ${side}_bandwidth (bit/s) x window seconds / 8, rounded to whole bytes.`,
      type: 'counter',
      labelNames: base,
    }),
    bandwidth: store.family({
      name: `cdn_${side}_bandwidth_bytes_per_second`,
      help: `Average bandwidth of ${where} over the newest counted window, bytes per second.`,
      type: 'gauge',
      labelNames: base,
    }),
    requestDurationMedian: store.family({
      name: `cdn_${side}_request_duration_median_seconds`,
      help: `Median request time of successful (2xx) responses of ${where} per response size range, newest window.`,
      type: 'gauge',
      labelNames: [...base, 'size_range'],
    }),
  };
  if (side === 'edge') {
    f.cacheHitBytes = store.family({
      name: 'cdn_edge_cache_hit_bytes_total',
      help: 'Bytes served from cache hits at the edge (from edge_hit_bytes).',
      type: 'counter',
      labelNames: base,
    });
    f.cacheHitRatio = store.family({
      name: 'cdn_edge_cache_hit_ratio',
      help: 'Share of traffic served from cache in the newest window (edge_hit_ratio); aggregate with the byte counters instead.',
      type: 'gauge',
      labelNames: base,
    });
  }
  if (windowGauges) {
    f.window = {
      responses: store.family({
        name: `cdn_${side}_window_responses`,
        help: `Responses of ${where} by exact status code in the newest window only.`,
        type: 'gauge',
        labelNames: [...base, 'code'],
      }),
      responsesByClass: store.family({
        name: `cdn_${side}_window_responses_by_class`,
        help: `Responses of ${where} by status class in the newest window only.`,
        type: 'gauge',
        labelNames: [...base, 'class'],
      }),
      requests: store.family({
        name: `cdn_${side}_window_requests`,
        help: `Requests to ${where} in the newest window only.`,
        type: 'gauge',
        labelNames: base,
      }),
      transferredBytes: store.family({
        name: `cdn_${side}_window_transferred_bytes`,
        help: `Bytes transferred by ${where} in the newest window only.`,
        type: 'gauge',
        labelNames: base,
      }),
    };
    if (side === 'edge') {
      f.window.cacheHitBytes = store.family({
        name: 'cdn_edge_window_cache_hit_bytes',
        help: 'Bytes served from cache hits at the edge in the newest window only.',
        type: 'gauge',
        labelNames: base,
      });
    }
  }
  return f;
}

export function createTrafficFamilies(
  store: SeriesStoreApi,
  opts: { breakdown: Breakdown; windowGauges: boolean; revisit?: boolean },
): TrafficFamilies {
  const base = opts.breakdown === 'resource' ? ['account', 'resource'] : ['account'];
  return {
    breakdown: opts.breakdown,
    base,
    resourceInfo:
      opts.breakdown === 'resource'
        ? store.family({
            name: 'cdn_resource_info',
            help: 'A CDN resource as /resources describes it; always 1.',
            type: 'gauge',
            labelNames: ['account', 'resource', 'resource_name', 'cname'],
          })
        : undefined,
    foldedResources:
      opts.breakdown === 'resource'
        ? store.family({
            name: 'cdn_folded_resources',
            help: 'Resources counted under resource="__other__" in the newest window (limits.top_resources, or a full series cap).',
            type: 'gauge',
            labelNames: ['account'],
          })
        : undefined,
    edge: sideFamilies(store, 'edge', base, opts.windowGauges),
    origin: sideFamilies(store, 'origin', base, opts.windowGauges),
    windowEnd: store.family({
      name: 'cdn_metrics_window_end_timestamp_seconds',
      help: 'End of the last counted traffic window (Unix seconds); data freshness is time() minus this.',
      type: 'gauge',
      labelNames: ['account'],
    }),
    windows: store.family({
      name: 'cdn_metrics_windows_total',
      help: 'Traffic windows counted.',
      type: 'counter',
      labelNames: ['account'],
    }),
    skippedSeconds: store.family({
      name: 'cdn_metrics_skipped_seconds_total',
      help: 'Traffic time never counted, seconds (whole minutes), by reason (rejected: the API answered 422 for the window; revisit: it did for the re-read, and the late part of those minutes is lost).',
      type: 'counter',
      labelNames: ['account', 'reason'],
    }),
    windowSize: store.family({
      name: 'cdn_metrics_window_seconds',
      help: 'Largest window the exporter currently asks for per account (shrinks after 504s, grows back).',
      type: 'gauge',
      labelNames: ['account'],
    }),
    revisions: opts.revisit
      ? store.family({
          name: 'cdn_metrics_revisions_total',
          help: 'Re-reads of late traffic data (metrics.revisit) by what they found: up (late data added), down (the CDN now reports less than was counted; nothing is taken back) or none.',
          type: 'counter',
          labelNames: ['account', 'direction'],
        })
      : undefined,
    revisitEdgeRequests: opts.revisit
      ? store.family({
          name: 'cdn_metrics_revisit_edge_requests_total',
          help: 'Edge requests that arrived after the first read of their window and were added by its re-read (metrics.revisit).',
          type: 'counter',
          labelNames: ['account'],
        })
      : undefined,
  };
}
