/**
 * What every account's pollers write into: the traffic pipeline (tied to the cursor book's revisit part), the DVR
 * and the recordings mappings, all writing the one series store.
 */
import { MINUTE } from '../clock.js';
import { type Config, METRIC_NAMES } from '../config/index.js';
import { DvrMapping } from '../dvr/mapping.js';
import { createDvrFamilies } from '../dvr/metrics.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { RecordingsMapping } from '../recordings/mapping.js';
import { createRecordingFamilies } from '../recordings/metrics.js';
import type { SeriesStore } from '../store/series-store.js';
import type { CountedCursors } from '../store/types.js';
import type { TrafficBodyParser } from '../traffic/client.js';
import { TrafficPipeline } from '../traffic/pipeline.js';
import type { Checkpoint, CursorBook } from './cursor-book.js';

export interface Sinks {
  traffic: TrafficPipeline;
  dvr: DvrMapping;
  recordings: RecordingsMapping;
}

export interface SinksDeps {
  store: SeriesStore;
  config: Pick<Config, 'metrics' | 'api' | 'limits'>;
  /** Loaded already: its revisit part restores the windows awaiting a re-read. */
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
    // The store is the counting lock: each exposition shows whole windows and carries their counted cursors.
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
      store,
    ),
    dvr: new DvrMapping(createDvrFamilies(store), { ...config.limits, storeSize: () => store.size }),
    recordings: new RecordingsMapping(createRecordingFamilies(store), {
      ...config.limits,
      storeSize: () => store.size,
    }),
  };
  const { traffic } = sinks;
  traffic.restoreRevisits(cursors.loadedRevisits, d.now);
  // After the revisit part: a restored series takes its saved number (CountedBook.restore) when it is made.
  traffic.restoreCounters(cursors.loadedCounters);
  if (traffic.book) {
    traffic.shownCursor = (account) => cursors.shown(account);
    cursors.revisits = {
      part: (saved, rereads) => traffic.savedRevisits(saved, rereads),
      shown: (rereads) => traffic.rereadsShown(rereads),
    };
  }
  // Every write of the state file is one moment of the counting state: cursors, counters, re-reads pending. It is
  // copied when the exposition's bodies are rendered from that moment (SeriesStore.settled), so a scrape never
  // waits for a window being counted: what it serves is that moment or an older one, never newer than the copy.
  if (d.stateFile) {
    let latest: Checkpoint | undefined;
    const take = (counted: CountedCursors): Checkpoint => {
      const rereads = counted.rereads ?? 0;
      return {
        cursors: counted,
        rereads,
        revisit: traffic.savedRevisits(counted, rereads),
        counters: traffic.savedCounters(),
      };
    };
    store.settled = (counted) => {
      latest = take(counted);
    };
    cursors.checkpoints = {
      take: async () => latest ?? (await store.whole(take)),
      // Kept as the newest too: a write of `take` queued behind this one (a scrape's) then holds this state or a
      // newer one, so the file never goes back to an older state, and a stop's last checkpoint stays the last.
      now: () => store.whole((counted) => (latest = take(counted))),
    };
  }
  return sinks;
}
