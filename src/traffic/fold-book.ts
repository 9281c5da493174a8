/**
 * The traffic pipeline's side of folding (./fold.ts, ./entries.ts): each account's `top_resources`, the FoldBook
 * that tells a revisit where its first read counted, and the rule that keeps a revisit from merging windows counted
 * on either side of a change of where a resource is counted.
 */
import type { SeriesLimits } from './admission.js';
import type { CountedBook } from './counted-book.js';
import type { FoldBook } from './entries.js';
import type { PendingWindow } from './revisit.js';

const DAY_MS = 86_400_000;

/** The top_resources fields of the limits (the typed configuration's LimitsConfig has them too). */
type TopLimits = Pick<
  SeriesLimits,
  'topResources' | 'topResourcesPeriodMs' | 'topResourcesByAccount' | 'topResourcesDiscovered'
>;

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

/** The FoldBook of a CountedBook. */
export function foldBook(book: CountedBook): FoldBook {
  return { counted: (family, slot) => book.counted(family, slot) };
}

/**
 * Whether two neighbouring windows of an account may be revisited in one request: always while the account folds
 * nothing; else only windows of one fold epoch (TrafficMapping.foldEpoch) counted in this process. Windows read
 * from the state file are then revisited one by one, since the epochs they were counted in are not known.
 */
export function mergeable(folds: () => boolean): (prev: PendingWindow, next: PendingWindow) => boolean {
  return (prev, next) => !folds() || (prev.foldEpoch !== undefined && prev.foldEpoch === next.foldEpoch);
}
