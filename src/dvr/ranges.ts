/**
 * Range arithmetic for DVR health. The API gives ranges as (from, duration) in seconds (units assumed, see
 * response.ts); they may come out of order, overlap, have zero length or reach past now. They are sorted, merged
 * (touching ranges join), clipped at now and stripped of empty pieces before anything is measured.
 */
import type { DvrRange } from './response.js';

export interface Interval {
  start: number;
  end: number;
}

export interface RangeHealth {
  /** Distinct recorded periods after merging. */
  ranges: number;
  /** Seconds recorded (merged, clipped at now). */
  recorded: number;
  /** Start of the oldest range, Unix seconds; undefined without ranges. */
  first?: number;
  /** End of the newest range, Unix seconds; undefined without ranges. */
  last?: number;
  /** Seconds of breaks between the first range's start and the last range's end. */
  gap: number;
  /** The longest of those breaks. */
  largestGap: number;
  /**
   * Share of [now - window, now] covered by ranges, 0..1; undefined when the window is unknown or not positive.
   * History shorter than the window counts as not covered: a DVR that cannot rewind the whole window is short.
   */
  coverage?: number;
}

export function mergeRanges(ranges: readonly DvrRange[], now: number): Interval[] {
  if (inOrder(ranges)) {
    const merged: Interval[] = [];
    eachMerged(ranges, now, (start, end) => merged.push({ start, end }));
    return merged;
  }
  const pieces: Interval[] = [];
  for (const r of ranges) {
    const start = r.from;
    const end = Math.min(r.from + r.duration, now);
    if (end > start) pieces.push({ start, end });
  }
  pieces.sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const p of pieces) {
    const last = merged[merged.length - 1];
    if (last && p.start <= last.end) last.end = Math.max(last.end, p.end);
    else merged.push({ ...p });
  }
  return merged;
}

export function rangeHealth(
  ranges: readonly DvrRange[],
  now: number,
  window: number | undefined,
): RangeHealth {
  const from = window !== undefined && window > 0 ? now - window : undefined;
  let count = 0;
  let recorded = 0;
  let largestGap = 0;
  let covered = 0;
  let first: number | undefined;
  let last: number | undefined;
  // One pass over the merged intervals, summing in their order.
  eachMerged(ranges, now, (start, end) => {
    recorded += end - start;
    if (last !== undefined) largestGap = Math.max(largestGap, start - last);
    first ??= start;
    last = end;
    count++;
    if (from !== undefined) covered += Math.max(0, Math.min(end, now) - Math.max(start, from));
  });
  const health: RangeHealth = {
    ranges: count,
    recorded,
    first,
    last,
    gap: first === undefined || last === undefined ? 0 : last - first - recorded,
    largestGap,
  };
  if (from !== undefined) health.coverage = covered / window!;
  return health;
}

/** Whether the ranges come by start, as the API gives them. */
function inOrder(ranges: readonly DvrRange[]): boolean {
  for (let i = 1; i < ranges.length; i++) if (ranges[i]!.from < ranges[i - 1]!.from) return false;
  return true;
}

/**
 * Calls `fn` with each interval mergeRanges gives, in order. Ranges already by start (the API's order) are merged
 * as they come, without a copy, a sort or an object per interval: a stream with 300k ranges cost ~60 ms of event
 * loop per poll with them.
 */
function eachMerged(
  ranges: readonly DvrRange[],
  now: number,
  fn: (start: number, end: number) => void,
): void {
  if (!inOrder(ranges)) {
    for (const m of mergeRanges(ranges, now)) fn(m.start, m.end);
    return;
  }
  let open = false;
  let s = 0;
  let e = 0;
  for (const r of ranges) {
    const start = r.from;
    const end = Math.min(r.from + r.duration, now);
    if (!(end > start)) continue;
    if (open && start <= e) e = Math.max(e, end);
    else {
      if (open) fn(s, e);
      s = start;
      e = end;
      open = true;
    }
  }
  if (open) fn(s, e);
}
