/**
 * The simulator's ground truth against what the exporter counted: the windows the simulator answered (its request
 * log), the cursor /metrics shows, and every traffic counter of every resource of an account against the exact
 * truth over the ranges the cursor says are counted.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Exporter } from '../../src/exporter/exporter.js';
import type { RequestLogEntry, Simulator } from '../../src/simulator/server.js';
import type { SideTotals, TrafficTotals } from '../../src/simulator/traffic-model.js';
import type { AccountWalker } from '../../src/traffic/walker.js';
import type { Scrape } from './exposition.js';

/** A window, [start, end) in ms. */
export type Range = [start: number, end: number];
/** Reads one sample: undefined when it is absent. */
export type Reader = (name: string, labels: Record<string, string>) => number | undefined;

export function windowOf(e: RequestLogEntry): Range {
  return [Date.parse(`${e.query.start![0]}Z`), Date.parse(`${e.query.end![0]}Z`)];
}

/** Traffic requests of one account in arrival order, with their window. */
export function metricsRequests(sim: Simulator, account: string): Array<RequestLogEntry & { window: Range }> {
  return sim.requestLog
    .filter((e) => e.api === 'metrics' && e.query.account?.[0] === account && e.query.start)
    .map((e) => ({ ...e, window: windowOf(e) }));
}

/** The end of the last counted window (ms), as /metrics shows it; 0 before the first. */
export function cursorOf(scrape: Scrape, account: string): number {
  return (scrape.value('cdn_metrics_window_end_timestamp_seconds', { account }) ?? 0) * 1000;
}

const SIDES = ['edge', 'origin'] as const;

function addSide(a: SideTotals, b: SideTotals): SideTotals {
  const codes = { ...a.codes };
  for (const [k, v] of Object.entries(b.codes)) codes[k] = (codes[k] ?? 0) + v;
  const classes = { ...a.classes };
  for (const [k, v] of Object.entries(b.classes)) classes[k as keyof typeof classes] += v;
  return {
    codes,
    classes,
    requests: a.requests + b.requests,
    bytes: a.bytes + b.bytes,
    hitBytes: a.hitBytes + b.hitBytes,
    requestTime: {},
    requestTimeAll: 0,
  };
}

/** The exact counts of one resource over several ranges (counts only: medians do not add). */
export function truthOver(sim: Simulator, account: string, resource: string, ranges: readonly Range[]) {
  let sum: TrafficTotals | undefined;
  for (const [s, e] of ranges) {
    if (e <= s) continue;
    const t = sim.truth(account, resource, s, e);
    sum = sum ? { edge: addSide(sum.edge, t.edge), origin: addSide(sum.origin, t.origin) } : t;
  }
  return sum;
}

/**
 * Every traffic counter of every resource of the account equals the truth over `ranges`; returns how many
 * values were compared. An absent counter reads as 0 (a resource with no traffic yet has no series).
 */
export function expectExact(sim: Simulator, read: Reader, account: string, ranges: readonly Range[]): number {
  let checked = 0;
  const resources = sim.accounts.find((a) => a.name === account)!.resources;
  for (const r of resources) {
    const truth = truthOver(sim, account, r.id, ranges);
    if (!truth) throw new Error('expectExact: no range to check');
    const l = { account, resource: r.id };
    const get = (name: string, extra: Record<string, string> = {}) => read(name, { ...l, ...extra }) ?? 0;
    for (const side of SIDES) {
      const t = truth[side];
      for (const [code, n] of Object.entries(t.codes)) {
        expect(get(`cdn_${side}_responses_total`, { code }), `${account} ${side} ${r.id} ${code}`).toBe(n);
        checked++;
      }
      for (const [cls, n] of Object.entries(t.classes)) {
        expect(get(`cdn_${side}_responses_by_class_total`, { class: cls }), `${side} ${r.id} ${cls}`).toBe(n);
        checked++;
      }
      expect(get(`cdn_${side}_requests_total`), `${account} ${side} ${r.id} requests`).toBe(t.requests);
      expect(get(`cdn_${side}_transferred_bytes_total`), `${account} ${side} ${r.id} bytes`).toBe(t.bytes);
      checked += 2;
    }
    expect(get('cdn_edge_cache_hit_bytes_total'), `${account} ${r.id} hit bytes`).toBe(truth.edge.hitBytes);
    checked++;
  }
  return checked;
}

export const reader =
  (scrape: Scrape): Reader =>
  (name, labels) =>
    scrape.value(name, labels);

/** The cursor (ms) the state file at `path` holds for `account`, as a user reads the file; undefined if none. */
export function savedCursor(path: string, account: string): number | undefined {
  const state = JSON.parse(readFileSync(path, 'utf8')) as { cursors: Record<string, string> };
  const at = state.cursors[account];
  return at === undefined ? undefined : Date.parse(at);
}

/** Whether the simulator answered `e` with a usable 200: no fault, or a `slow` one (late, not wrong). */
export function usableAnswer(e: RequestLogEntry): boolean {
  return e.status === 200 && (e.fault === undefined || e.fault === 'slow');
}

/** The windows the simulator answered with a usable 200, sorted by start; those ending by `upTo` when given. */
export function answeredWindows(sim: Simulator, account: string, upTo = Number.POSITIVE_INFINITY): Range[] {
  return metricsRequests(sim, account)
    .filter(usableAnswer)
    .map((e) => e.window)
    .filter(([, end]) => end <= upTo)
    .sort((a, b) => a[0] - b[0]);
}

/** Asserts that every fault kind of `faults` (the simulator's fault rates) was met in `log`. */
export function expectEveryFaultMet(log: readonly RequestLogEntry[], faults: object): void {
  for (const kind of Object.keys(faults)) {
    expect(
      log.some((e) => e.fault === kind),
      kind,
    ).toBe(true);
  }
}

/** Asserts that `windows` (sorted) follow one another from `start` to `end`: at least one, no gap, no overlap. */
export function expectTiles(windows: readonly Range[], start: number, end: number, what = 'windows'): void {
  const iso = (t: number) => new Date(t).toISOString();
  expect(windows.length, `${what}: windows`).toBeGreaterThan(0);
  let at = start;
  for (const [i, [s, e]] of windows.entries()) {
    expect(iso(s), `${what}: window ${i} starts where the last ended`).toBe(iso(at));
    at = e;
  }
  expect(iso(at), `${what}: last end`).toBe(iso(end));
}

/** The most of `times` (ms, a request log's arrival times) within any one-second span: the peak rate the API saw. */
export function mostInOneSecond(times: readonly number[]): number {
  const t = [...times].sort((a, b) => a - b);
  let worst = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= 1000) j++;
    worst = Math.max(worst, i - j + 1);
  }
  return worst;
}

/**
 * Where the exporter began walking `account`: the start of the first window the simulator answered. The exporter
 * starts at the minute of its own start, `lookbackMs` back, and a minute may turn between the clock readings a test
 * takes before (`before`) and after (`after`) starting it: the start must be one of the two.
 */
export function walkStart(
  sim: Simulator,
  account: string,
  lookbackMs: number,
  before: number,
  after: number,
): number {
  const minute = 60_000;
  const startOf = (t: number) => Math.floor((t - lookbackMs) / minute) * minute;
  const first = answeredWindows(sim, account)[0]?.[0];
  expect(first, `${account}: no window answered`).toBeDefined();
  expect([startOf(before), startOf(after)]).toContain(first);
  return first!;
}

/** The exporter's walkers, by account (tests read their cursors). */
export function walkers(exporter: Exporter): Map<string, AccountWalker> {
  return new Map(exporter.walkers.map((w) => [w.current.account, w]));
}
