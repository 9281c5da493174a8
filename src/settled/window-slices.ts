/**
 * One window's work in slices of the event loop (the applier's slices are as long, src/discovery/slices.ts): its
 * answer turned into series and totals (./window-series.ts, ./running-totals.ts) a few records at a time, and its
 * totals applied a range at a time. A window of a million series is taken in pieces, and scrapes and `/healthz`
 * are answered between them. The caller keeps the account busy meanwhile: nothing else touches those totals.
 */
import { SLICE_MS } from '../discovery/slices.js';
import type { TrafficResponse } from '../traffic/response.js';
import type { RunningTotals, TakenWindow } from './running-totals.js';
import type { WindowSeries } from './window-series.js';

export interface WindowSlicing {
  /** Longest stretch of event-loop time before yielding (default SLICE_MS). */
  sliceMs?: number;
  /** Records turned into points between two looks at the time (default PART). */
  partRecords?: number;
}

/** Records turned into points between two looks at the time (a record is about 70 series with every metric). */
const PART = 4;

/** Totals applied between two looks at the time. */
const COMMIT_PART = 2048;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The window's series and the totals they leave on `totals`, not yet applied (`commitInSlices` applies them). */
export async function takeInSlices(
  totals: RunningTotals,
  series: WindowSeries,
  account: string,
  start: number,
  end: number,
  response: TrafficResponse,
  o: WindowSlicing,
): Promise<TakenWindow> {
  const taken = totals.begin(start, end);
  const records = response.records;
  const seen = new Set<string>();
  const seconds = (end - start) / 1000;
  const sliceMs = o.sliceMs ?? SLICE_MS;
  const part = o.partRecords ?? PART;
  let sliceStart = performance.now();
  for (let i = 0; i < records.length; i += part) {
    totals.add(taken, series.pointsOf(account, seconds, records, i, i + part, seen));
    if (performance.now() - sliceStart >= sliceMs && i + part < records.length) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
  return taken;
}

/** Applies a taken window's totals to `totals`. */
export async function commitInSlices(
  totals: RunningTotals,
  taken: TakenWindow,
  sliceMs = SLICE_MS,
): Promise<void> {
  let sliceStart = performance.now();
  for (let i = 0; i < taken.keys.length; i += COMMIT_PART) {
    totals.commitRange(taken, i, i + COMMIT_PART);
    if (performance.now() - sliceStart >= sliceMs && i + COMMIT_PART < taken.keys.length) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
  totals.committed(taken.endMs);
}
