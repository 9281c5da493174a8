/**
 * What every account's traffic poller writes into: the traffic pipeline, writing the series store and tied to the
 * state file (src/state-file/checkpoints.ts). The API table's modules make their own sinks (./api-table.ts,
 * openApis).
 */
import { MINUTE } from '../clock.js';
import { type Config, METRIC_NAMES } from '../config/index.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { tieStateFile } from '../state-file/checkpoints.js';
import type { CursorBook } from '../state-file/cursor-book.js';
import type { SeriesStore } from '../store/series-store.js';
import type { TrafficBodyParser } from '../traffic/client.js';
import { CountingLedger } from '../traffic/counting-ledger.js';
import { TrafficPipeline } from '../traffic/pipeline.js';

export interface Sinks {
  traffic: TrafficPipeline;
}

export interface SinksDeps {
  store: SeriesStore;
  config: Pick<Config, 'metrics' | 'api' | 'limits'>;
  /** Loaded already: its revisit part restores the windows awaiting a revisit. */
  cursors: Pick<CursorBook, 'loadedRevisits' | 'loadedCounters' | 'shown' | 'revisits' | 'checkpoints'>;
  now: number;
  /** A state file is configured: checkpoints are copied for it. */
  stateFile?: boolean;
  /** Retries of failed traffic windows (default 1 s doubling to 2 min, full jitter). */
  backoff?: BackoffPolicy;
  /** Probing while a token is refused (default 1 min doubling to 10 min). */
  authBackoff?: BackoffPolicy;
  /** Reads traffic answers, big ones off the event loop (default: inline; src/offloop/pool.ts). */
  parseTraffic?: TrafficBodyParser;
}

export function createSinks(d: SinksDeps): Sinks {
  const { store, config, cursors } = d;
  const sinks: Sinks = {
    // Counted inside the store's render lock with traffic's ledger: each exposition shows whole windows and carries
    // their counted cursors.
    traffic: new TrafficPipeline(
      store,
      {
        breakdown: config.metrics.breakdown,
        windowGauges: config.metrics.windowGauges,
        metrics: config.metrics.metrics,
        allMetrics: METRIC_NAMES,
        resources: config.metrics.resources,
        windowMs: config.metrics.windowMs,
        delayMs: config.metrics.delayMs,
        lookbackMs: config.metrics.lookbackMs,
        revisitMs: config.metrics.revisitMs,
        counterRetentionMs: config.metrics.counterRetentionMs,
        maxInFlight: Math.max(1, config.api.concurrency),
        backoff: d.backoff ?? { baseMs: 1000, capMs: 120_000 },
        authBackoff: d.authBackoff ?? { baseMs: MINUTE, capMs: 10 * MINUTE },
        limits: { ...config.limits, storeSize: () => store.size },
        parse: d.parseTraffic,
      },
      new CountingLedger(store),
    ),
  };
  tieStateFile({ store, traffic: sinks.traffic, cursors, now: d.now, stateFile: d.stateFile });
  return sinks;
}
