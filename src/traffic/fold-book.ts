/**
 * The traffic pipeline's side of folding (./fold.ts, ./entries.ts): each account's `top_resources`, the FoldBook
 * that moves what windows awaiting a re-read counted when a resource's series go into `__other__`, the rule that
 * keeps a re-read from merging windows counted on either side of a change of where a resource is counted, and the
 * name under which the state file's counter part keeps the counters of resources out of the top N.
 */
import type { Family, Slot } from '../store/types.js';
import type { SeriesLimits } from './admission.js';
import { type CountedBook, moveIn } from './counted-book.js';
import type { FoldBook } from './entries.js';
import type { PendingWindow } from './revisit.js';

const DAY_MS = 86_400_000;

/** The top_resources fields of the limits (the typed configuration's LimitsConfig has them too). */
type TopLimits = Pick<
  SeriesLimits,
  'topResources' | 'topResourcesPeriodMs' | 'topResourcesByAccount' | 'topResourcesDiscovered'
>;

/**
 * The counter part of the state file lists a kept counter (a resource out of the top N, ./entries.ts) under its
 * family's name with this ending: a space, which no metric name has, so an older version leaves it out (it does
 * not know the family) instead of making it a series.
 */
export const KEPT_SUFFIX = ' kept';

/** The `top_resources` of `account` (0: no limit): a configured account's own, a discovered one's, or limits'. */
export function topResourcesOf(limits: TopLimits | undefined, account: string): number {
  if (!limits) return 0;
  return limits.topResourcesByAccount?.[account] ?? limits.topResourcesDiscovered ?? limits.topResources ?? 0;
}

/** Whether any account may have a limit (the ranking is kept only then). */
export function anyTopResources(limits: TopLimits | undefined): boolean {
  if (!limits) return false;
  return (
    (limits.topResources ?? 0) > 0 ||
    (limits.topResourcesDiscovered ?? 0) > 0 ||
    Object.values(limits.topResourcesByAccount ?? {}).some((n) => n > 0)
  );
}

/** The ranking's trailing period (ms). */
export function rankingPeriodMs(limits: TopLimits | undefined): number {
  return limits?.topResourcesPeriodMs ?? DAY_MS;
}

/** The FoldBook of a CountedBook; `windowsOf(account)`: every window of the account awaiting its re-read. */
export function foldBook(
  book: CountedBook,
  windowsOf: (account: string) => Iterable<PendingWindow>,
): FoldBook {
  return {
    move(account: string, family: Family, from: Slot, to: Slot): void {
      const a = book.cidOf(family, from);
      const b = book.cidOf(family, to);
      if (a < 0 || b < 0) return;
      book.moveRecorded(account, a, b);
      for (const w of windowsOf(account)) {
        const moved = moveIn(w.counted, a, b);
        if (!moved) continue;
        w.counted = moved;
        w.encoded = undefined;
      }
    },
    counted: (family, slot) => book.counted(family, slot),
    outside: (fn) => book.outside(fn),
  };
}

/**
 * Whether two neighbouring windows of an account may be re-read in one request: always while the account folds
 * nothing; else only windows of one fold epoch (TrafficMapping.foldEpoch) counted in this process. Windows read
 * from the state file are then re-read one by one, since the epochs they were counted in are not known.
 */
export function mergeable(folds: () => boolean): (prev: PendingWindow, next: PendingWindow) => boolean {
  return (prev, next) => !folds() || (prev.foldEpoch !== undefined && prev.foldEpoch === next.foldEpoch);
}
