/**
 * What the failure and restart tests check against the simulator: the windows it answered (request log), the
 * cursor /metrics shows, counters against the exact truth, and a log sink.
 */
import { Writable } from 'node:stream';
import { expect } from 'vitest';
import { createLogger, type Logger } from '../../src/log.js';
import type { RequestLogEntry, Simulator } from '../../src/simulator/server.js';
import type { SideTotals, TrafficTotals } from '../../src/simulator/traffic.js';
import type { Scrape } from '../helpers/exposition.js';

export type Range = [start: number, end: number];
/** Reads one sample: undefined when it is absent. */
export type Reader = (name: string, labels: Record<string, string>) => number | undefined;

const SIDES = ['edge', 'origin'] as const;

export function windowOf(e: RequestLogEntry): Range {
  return [Date.parse(`${e.query.start![0]}Z`), Date.parse(`${e.query.end![0]}Z`)];
}

/** Traffic requests of one account in arrival order, with their window. */
export function metricsRequests(sim: Simulator, account: string): Array<RequestLogEntry & { window: Range }> {
  return sim.requestLog
    .filter((e) => e.api === 'metrics' && e.query.account?.[0] === account && e.query.start)
    .map((e) => ({ ...e, window: windowOf(e) }));
}

/** The windows the simulator answered with a usable 200 (no injected fault), sorted by start. */
export function answeredWindows(sim: Simulator, account: string): Range[] {
  return metricsRequests(sim, account)
    .filter((e) => e.status === 200 && e.fault === undefined)
    .map((e) => e.window)
    .sort((a, b) => a[0] - b[0]);
}

/** The end of the last counted window (ms), as /metrics shows it; 0 before the first. */
export function cursorOf(scrape: Scrape, account: string): number {
  return (scrape.value('cdn_metrics_window_end_timestamp_seconds', { account }) ?? 0) * 1000;
}

/** Asserts that `windows` (sorted) follow one another with no gap and no overlap from `start` to `end`. */
export function expectTiling(windows: readonly Range[], start: number, end: number, what: string): void {
  expect(windows.length, `${what}: windows`).toBeGreaterThan(0);
  expect(windows[0]![0], `${what}: first start`).toBe(start);
  for (let i = 1; i < windows.length; i++) {
    expect(windows[i]![0], `${what}: window ${i} starts where ${i - 1} ended`).toBe(windows[i - 1]![1]);
  }
  expect(windows.at(-1)![1], `${what}: last end`).toBe(end);
}

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

/** A debug-level JSON logger whose lines the test can read. */
export function captureLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(line);
      done();
    },
  });
  return { log: createLogger({ level: 'debug', destination }), lines };
}
