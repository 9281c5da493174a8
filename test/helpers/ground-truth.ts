/**
 * The simulator's ground truth against what the exporter counted: every traffic counter of every resource of an
 * account equals the truth over [start, end), and the answered windows tile that range.
 */
import { expect } from 'vitest';
import type { Exporter } from '../../src/exporter/exporter.js';
import type { Simulator } from '../../src/simulator/server.js';
import type { AccountWalker } from '../../src/traffic/walker.js';
import type { Scrape } from './exposition.js';

const SIDES = ['edge', 'origin'] as const;

/** Returns how many values were compared. */
export function expectExact(
  sim: Simulator,
  scrape: Scrape,
  account: string,
  start: number,
  end: number,
): number {
  let checked = 0;
  const resources = sim.accounts.find((a) => a.name === account)!.resources;
  for (const r of resources) {
    const truth = sim.truth(account, r.id, start, end);
    const l = { account, resource: r.id };
    for (const side of SIDES) {
      const t = truth[side];
      for (const [code, n] of Object.entries(t.codes)) {
        expect(
          scrape.value(`cdn_${side}_responses_total`, { ...l, code }) ?? 0,
          `${account} ${side} ${r.id} ${code}`,
        ).toBe(n);
        checked++;
      }
      for (const [cls, n] of Object.entries(t.classes)) {
        expect(
          scrape.value(`cdn_${side}_responses_by_class_total`, { ...l, class: cls }) ?? 0,
          `${account} ${side} ${r.id} ${cls}`,
        ).toBe(n);
        checked++;
      }
      expect(scrape.value(`cdn_${side}_requests_total`, l), `${account} ${side} ${r.id} requests`).toBe(
        t.requests,
      );
      expect(scrape.value(`cdn_${side}_transferred_bytes_total`, l), `${account} ${side} ${r.id} bytes`).toBe(
        t.bytes,
      );
      checked += 2;
    }
    expect(scrape.value('cdn_edge_cache_hit_bytes_total', l), `${account} ${r.id} hit bytes`).toBe(
      truth.edge.hitBytes,
    );
    checked++;
  }
  return checked;
}

/** The windows the simulator answered with a usable 200 (a `slow` one is late, not wrong), sorted: [start, end). */
export function answeredWindows(sim: Simulator, account: string): Array<[number, number]> {
  return sim.requestLog
    .filter(
      (e) =>
        e.api === 'metrics' &&
        e.status === 200 &&
        (e.fault === undefined || e.fault === 'slow') &&
        e.query.account?.[0] === account,
    )
    .map((e) => [Date.parse(`${e.query.start![0]}Z`), Date.parse(`${e.query.end![0]}Z`)] as [number, number])
    .sort((a, b) => a[0] - b[0]);
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

/** Consecutive half-open windows from `start` to `end`: no overlap, no gap. */
export function expectTiles(windows: Array<[number, number]>, start: number, end: number): void {
  let at = start;
  for (const [s, e] of windows) {
    expect(new Date(s).toISOString(), 'a window starts where the last ended').toBe(
      new Date(at).toISOString(),
    );
    at = e;
  }
  expect(new Date(at).toISOString()).toBe(new Date(end).toISOString());
}

/** The exporter's walkers, by account (tests read their cursors). */
export function walkers(exporter: Exporter): Map<string, AccountWalker> {
  const list = (exporter as unknown as { walkers: AccountWalker[] }).walkers;
  return new Map(list.map((w) => [w.current.account, w]));
}
