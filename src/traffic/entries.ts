/**
 * What TrafficMapping (./mapping.ts) keeps per account and resource, and what folding (./fold.ts) adds to it.
 *
 * A resource that drops out of the top N keeps its entry: its counters stop at their last value (the windows it is
 * folded in count under `__other__`), its gauges and info go at once, and its counters go stale by the usual rule of
 * a resource missing from the answers: deleted once it has not been counted on its own for
 * `metrics.counter_retention` (./mapping-base.ts, sweepCounters). Deleted at once, the windows it counted since the
 * last scrape would never be seen by any scraper; kept, a scraper sees its last value, and if it climbs back its
 * series goes on from there (no counter reset, no first window lost to increase()).
 */
import type { Family, Slot } from '../store/types.js';
import type { SideSlots } from './side-series.js';
import { sideSeries } from './side-series.js';

/** What one (account, resource) has in the store. With breakdown `account` the resource id is ''. */
export interface Entry {
  /** Label values every series of it starts with: [account, resource] or [account]. */
  base: string[];
  /** When it was last counted on its own (not folded): its counters are kept counter retention from then. */
  lastSeen: number;
  /** Windows of the account counted when it was last in an answer (to find the ones that vanished). */
  window: number;
  /** The label values of its cdn_resource_info series, when it has one. */
  info: string[] | undefined;
  hasGauges: boolean;
  edge: SideSlots;
  origin: SideSlots;
  /** Folded in a window since it was last counted on its own (its traffic of that window is in `__other__`). */
  folded?: boolean;
}

export interface AccountState {
  entries: Map<string, Entry>;
  /** Windows begun so far: the stamp of the newest. */
  windows: number;
  /**
   * Grows each time a resource is counted on its own while it may have been folded before (it was, or `__other__`
   * exists): a revisit never merges windows counted on either side of such a change (./fold-book.ts).
   */
  epoch: number;
}

/** What folding reads of the records of windows awaiting a revisit (CountedBook, through ./fold-book.ts). */
export interface FoldBook {
  /** What the revisit being counted has for this series, summed over its windows (0: nothing counted there). */
  counted(family: Family, slot: Slot): number;
}

/** Traffic series of an account's resources (its per-account series, a handful, are not counted). */
export function accountSeries(state: AccountState): number {
  let n = 0;
  for (const e of state.entries.values()) n += sideSeries(e.edge) + sideSeries(e.origin) + (e.info ? 1 : 0);
  return n;
}
