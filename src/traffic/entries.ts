/**
 * What TrafficMapping (./mapping.ts) keeps per account and resource, and the moves of folding (./fold.ts) that go
 * beyond one record: a resource dropping out of the top N (its series leave /metrics, their values are kept aside
 * so they continue if it comes back, and what the windows awaiting a re-read counted under them moves to
 * `__other__`), and one coming back (its series continue from those values).
 *
 * Why kept aside and continued rather than started again at 0: a counter that disappears and comes back higher
 * than its last scraped value is read by Prometheus (staleness markers do not reset counters) as having grown by
 * the difference, so the first window of its return would be lost to increase(). Continued, it comes back at
 * least as high as it left, and increase() counts exactly the windows it missed (they went to `__other__`).
 */
import type { Family, Slot } from '../store/types.js';
import { OTHER } from './fold.js';
import type { TrafficFamilies } from './metrics.js';
import { isSideCounter, type SideSeries, type SideSlots, sideSeries } from './side-series.js';

/** What one (account, resource) has in the store. With breakdown `account` the resource id is ''. */
export interface Entry {
  /** Label values every series of it starts with: [account, resource] or [account]. */
  base: string[];
  lastSeen: number;
  /** Windows of the account counted when it was last in an answer (to find the ones that vanished). */
  window: number;
  /** The label values of its cdn_resource_info series, when it has one. */
  info: string[] | undefined;
  hasGauges: boolean;
  edge: SideSlots;
  origin: SideSlots;
}

/** A counter series of a resource out of the top N: its value and start, to continue if it comes back. */
export interface KeptCounter {
  family: Family;
  labels: readonly string[];
  value: number;
  startMs: number;
}

export interface AccountState {
  entries: Map<string, Entry>;
  /** Windows begun so far: the stamp of the newest. */
  windows: number;
  /** Resources that dropped out of the top N: when, and their counters (forgotten after counter retention). */
  kept: Map<string, { at: number; rows: KeptCounter[] }>;
  /**
   * Grows each time a resource gets series of its own while `__other__` exists (it may have been folded in the
   * windows before): a re-read never merges windows counted on either side of such a change (./pipeline.ts).
   */
  epoch: number;
}

/** The moves of what windows awaiting a re-read counted, when folding moves a resource (CountedBook: ./pipeline.ts). */
export interface FoldBook {
  /** What the windows awaiting a re-read, and the window being recorded, counted under `from` moves to `to`. */
  move(account: string, family: Family, from: Slot, to: Slot): void;
  /** What the re-read being counted has for this series, summed over its windows (0: nothing counted there). */
  counted(family: Family, slot: Slot): number;
  /** Runs `fn` outside the window being recorded: a value continued is not what the window counted. */
  outside(fn: () => void): void;
}

/** Traffic series of an account's resources (its per-account series, a handful, are not counted). */
export function accountSeries(state: AccountState): number {
  let n = 0;
  for (const e of state.entries.values()) n += sideSeries(e.edge) + sideSeries(e.origin) + (e.info ? 1 : 0);
  return n;
}

/** The parts of the mapping the moves below use. */
export interface EntryOps {
  f: TrafficFamilies;
  sides: SideSeries;
  book: FoldBook | undefined;
  /** The account's `__other__` entry, made when missing. */
  other(account: string, state: AccountState): Entry;
  /** Deletes the entry's series (gauges, info and counters). */
  deleteAll(entry: Entry): void;
}

/** Calls `fn` with every counter series the entry has, with its slot. */
export function eachCounterSlot(
  ops: EntryOps,
  entry: Entry,
  fn: (side: 'edge' | 'origin', family: Family, labels: readonly string[], slot: Slot) => void,
): void {
  for (const side of ['edge', 'origin'] as const) {
    ops.sides.eachCounter(ops.f[side], entry[side], entry.base, (family, labels) => {
      const slot = family.find(labels);
      if (slot !== undefined) fn(side, family, labels, slot);
    });
  }
}

/**
 * The resource `id` leaves the top N at the end of a window starting at `startMs`: its counters are kept aside,
 * what windows awaiting a re-read counted under them moves to `__other__`'s series of the same labels (made if
 * missing, starting at `startMs`), and its series are deleted.
 */
export function dropOut(
  ops: EntryOps,
  account: string,
  state: AccountState,
  id: string,
  startMs: number,
  nowMs: number,
): void {
  const entry = state.entries.get(id);
  if (!entry) return;
  const rows: KeptCounter[] = [];
  const book = ops.book;
  const other = book ? ops.other(account, state) : undefined;
  eachCounterSlot(ops, entry, (side, family, labels, slot) => {
    rows.push({ family, labels, value: family.get(slot), startMs: family.startOf?.(slot) ?? 0 });
    if (!book || !other) return;
    const to = ops.sides.restore(
      side,
      ops.f[side],
      other[side],
      family,
      [account, OTHER, ...labels.slice(2)],
      startMs,
    );
    if (to >= 0) book.move(account, family, slot, to);
  });
  if (other) other.lastSeen = nowMs;
  if (rows.length > 0) state.kept.set(id, { at: nowMs, rows });
  ops.deleteAll(entry);
  state.entries.delete(id);
}

/**
 * A resource gets series of its own (new, back in the top N, or admitted under a cap): what was kept of it
 * continues (outside the window's record), and with `__other__` there the account's fold epoch moves on.
 */
export function comeBack(ops: EntryOps, state: AccountState, id: string, entry: Entry): void {
  if (state.entries.has(OTHER)) state.epoch++;
  const kept = state.kept.get(id);
  if (!kept) return;
  state.kept.delete(id);
  const put = () => {
    for (const row of kept.rows) {
      const side = isSideCounter(ops.f.edge, row.family) ? 'edge' : 'origin';
      const slot = ops.sides.restore(side, ops.f[side], entry[side], row.family, row.labels, row.startMs);
      if (slot >= 0) row.family.add(slot, row.value);
    }
  };
  if (ops.book) ops.book.outside(put);
  else put();
}
