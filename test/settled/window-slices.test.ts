/**
 * One settled window's work in slices of the event loop (src/settled/window-slices.ts): taken a few records at a
 * time and applied a range at a time, yielding between slices so scrapes and /healthz are answered meanwhile, and
 * ending with exactly what the window taken and applied at once gives: the same series and samples (a resource
 * twice in an answer counted once, the folded resources summed into one `__other__` written once, after the last
 * part), the same totals.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { RunningTotals } from '../../src/settled/running-totals.js';
import { WindowSeries } from '../../src/settled/window-series.js';
import { commitInSlices, takeInSlices } from '../../src/settled/window-slices.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { turnsDuring } from '../helpers/loop-turns.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const DAY = 24 * 60 * MINUTE;

const side = (requests: number, hitRatio?: number): SideRecord => ({
  codes: new Map([['200', requests]]),
  classes: new Map([['2xx', requests]]),
  requestTimeSeconds: new Map(),
  requests,
  ...(hitRatio === undefined ? {} : { hitRatio }),
});
const record = (resource: string, requests: number): TrafficRecord => ({
  resource,
  edge: side(requests, 0.5),
  origin: side(Math.floor(requests / 10)),
});

/** 40 resources, one of them twice (the second ignored), small ones folded. */
function answer(scale: number): TrafficResponse {
  const records = Array.from({ length: 40 }, (_, i) => record(`r${i}`, (i + 1) * scale));
  records.splice(5, 0, record('r3', 999));
  return { account: 'acme', start: T, end: T + MINUTE, metrics: [], records, issues: [], unknownKeys: [] };
}

const series = () =>
  new WindowSeries({
    breakdown: 'resource',
    metrics: [],
    resources: [],
    maxLabelLength: 1024,
    extraLabels: [['job', 'settled']],
    fold: (_account, resource) => Number(resource.slice(1)) >= 30,
  });

describe('a settled window in slices', () => {
  it('takes the same series and totals as at once, yielding to the event loop between parts', async () => {
    const ws = series();
    const atOnce = new RunningTotals(DAY);
    const sliced = new RunningTotals(DAY);
    for (const [n, scale] of [1, 3].entries()) {
      const start = T + n * MINUTE;
      const response = answer(scale);
      const expected = atOnce.take(start, start + MINUTE, ws.points('acme', start, start + MINUTE, response));
      const { result: taken, turns } = await turnsDuring(() =>
        takeInSlices(sliced, ws, 'acme', start, start + MINUTE, response, { sliceMs: 0, partRecords: 2 }),
      );
      // 41 records in parts of 2 and a yield after each but the last.
      expect(turns).toBeGreaterThanOrEqual(20);
      expect(taken).toEqual(expected);
      // One __other__ per family side, written once.
      const others = taken.series.filter((s) =>
        s.labels.some(([k, v]) => k === 'resource' && v === '__other__'),
      );
      expect(new Set(others.map((s) => s.labels[0]![1])).size).toBe(others.length);
      expect(others.length).toBeGreaterThan(0);
      atOnce.commit(expected);
      await commitInSlices(sliced, taken, 0);
      expect(sliced.saved()).toEqual(atOnce.saved());
    }
  });

  it('changes no total until the window is applied', async () => {
    const totals = new RunningTotals(DAY);
    const taken = await takeInSlices(totals, series(), 'acme', T, T + MINUTE, answer(1), {
      sliceMs: 0,
      partRecords: 1,
    });
    expect(taken.keys.length).toBeGreaterThan(0);
    expect(totals.size).toBe(0);
    await commitInSlices(totals, taken);
    expect(totals.size).toBe(taken.keys.length);
  });

  it('applies thousands of totals a range at a time, yielding between ranges, to the same totals', async () => {
    const ws = new WindowSeries({ breakdown: 'resource', metrics: [], resources: [], maxLabelLength: 1024 });
    const records = Array.from({ length: 1000 }, (_, i) => record(`r${i}`, i + 1));
    const response: TrafficResponse = { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
    const atOnce = new RunningTotals(DAY);
    const expected = atOnce.take(T, T + MINUTE, ws.points('acme', T, T + MINUTE, response));
    atOnce.commit(expected);
    const sliced = new RunningTotals(DAY);
    const taken = sliced.take(T, T + MINUTE, ws.points('acme', T, T + MINUTE, response));
    expect(taken.keys.length).toBeGreaterThan(2 * 2048);
    const { turns } = await turnsDuring(() => commitInSlices(sliced, taken, 0));
    expect(turns).toBeGreaterThanOrEqual(2);
    expect(sliced.saved()).toEqual(atOnce.saved());
  });
});
