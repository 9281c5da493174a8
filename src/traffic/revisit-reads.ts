/**
 * One account's revisits of late data (metrics.revisit): its RevisitQueue, wired to count each revisit in the
 * applier's order as the difference to what its first reads counted (./counted-book.ts), numbered in the counting
 * lock (CountingLedger.countRevisit, ./counting-ledger.ts) so a scrape that shows it is saved before it is served. Made by the pipeline's poller
 * (./pipeline.ts).
 */
import { MINUTE } from '../clock.js';
import { describeError } from '../http/errors.js';
import { REVISIT_PRIORITY } from '../poll/request-gate.js';
import type { KeptWindow } from '../state-file/revisit-keep.js';
import type { TrafficApplier } from './applier.js';
import type { CountedBook } from './counted-book.js';
import type { CountingLock } from './counting-ledger.js';
import { mergeable } from './fold-book.js';
import type { TrafficMapping } from './mapping.js';
import type { TrafficFamilies } from './metrics.js';
import type { TrafficPipelineOptions, TrafficPollerDeps } from './pipeline.js';
import type { TrafficResponse } from './response.js';
import { RevisitQueue } from './revisit.js';

/** What the revisits share with the pipeline. */
export interface RevisitReadsContext {
  opts: Pick<TrafficPipelineOptions, 'delayMs' | 'revisitMs' | 'backoff' | 'authBackoff'>;
  mapping: TrafficMapping;
  applier: TrafficApplier;
  families: TrafficFamilies;
  book: CountedBook;
  lock: CountingLock | undefined;
  /** The account's counted cursor in the newest exposition a scrape was given. */
  shownCursor(account: string): number;
  /** A revisit numbered `n` counted over windows a scrape had seen the first read of (RevisitKeep.revisitCounted). */
  revisitCounted(account: string, n: number, held: readonly KeptWindow[]): void;
}

/** What the revisits need of the poller's deps. */
export type RevisitReadDeps = Pick<
  TrafficPollerDeps,
  'clock' | 'log' | 'random' | 'audit' | 'windowSettled' | 'settledSkipped' | 'revisitsChanged' | 'refused'
>;

export function revisitReads(
  c: RevisitReadsContext,
  account: string,
  d: RevisitReadDeps,
  fetchWindow: (start: number, end: number, priority?: number) => Promise<TrafficResponse>,
): RevisitQueue {
  const { opts, mapping, applier, families: f, book } = c;
  f.revisions?.slot([account, 'up']);
  f.revisions?.slot([account, 'down']);
  f.revisions?.slot([account, 'none']);
  f.revisitEdgeRequests?.slot([account]);
  f.skippedSeconds.slot([account, 'revisit']);
  const queue = new RevisitQueue(
    {
      account,
      afterMs: opts.delayMs + (opts.revisitMs ?? 0),
      backoff: opts.backoff,
      authBackoff: opts.authBackoff,
    },
    {
      clock: d.clock,
      log: d.log,
      random: d.random,
      fetchWindow: (start, end) => fetchWindow(start, end, REVISIT_PRIORITY),
      apply: (windows, start, end, response, done) =>
        applier.apply(
          account,
          start,
          end,
          response,
          d.clock.now(),
          (r, err) => {
            const n = c.lock?.countRevisit?.();
            // Held only for a window whose first read a scrape was already given: any exposition a scrape gets
            // from now on includes this revisit, and one given before without its first read needs nothing.
            const shown = c.shownCursor(account);
            const held = windows.filter((w) => w.end <= shown);
            if (n !== undefined && held.length > 0) c.revisitCounted(account, n, held);
            if (!r) {
              book.abort();
              d.log.error({ error: describeError(err) }, 'counting a re-read of late data failed');
              done(undefined);
              return;
            }
            const o = book.endRevisit();
            const direction = o.down > 0 ? 'down' : o.up > 0 ? 'up' : 'none';
            f.revisions?.add(f.revisions.slot([account, direction]), 1);
            if (o.edgeRequests > 0)
              f.revisitEdgeRequests?.add(f.revisitEdgeRequests.slot([account]), o.edgeRequests);
            if (o.down > 0) {
              d.log.warn(
                { start: new Date(start).toISOString(), minutes: (end - start) / MINUTE, series: o.down },
                'the CDN now reports less than was counted for a window; counters keep what they had',
              );
            }
            d.audit(response, r.dropped);
            d.windowSettled?.(start, end, response);
            done(o);
          },
          {
            gauges: false,
            revisit: true,
            prepare: () =>
              book.beginRevisit(
                account,
                windows.map((w) => w.counted),
              ),
          },
        ),
      skip: (start, end) => {
        d.settledSkipped?.(start, end, 'revisit');
        mapping.skip(account, (end - start) / MINUTE, 'revisit');
        // A change of the counters outside any window: numbered as a revisit, so a scrape that shows it is
        // saved before it is served (CursorBook.commit).
        c.lock?.countRevisit?.();
      },
      changed: () => d.revisitsChanged?.(),
      authFailed: d.refused,
      mergeable: mergeable(() => mapping.folds(account)),
    },
  );
  return queue;
}
