/**
 * TrafficApplier: windows counted in time slices, in order, with the same result as one synchronous apply.
 * Time and yields are injected: `now` advances a fixed step per look, and a yield is a counted microtask.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { type AppliedCallback, TrafficApplier } from '../../src/traffic/applier.js';
import { type ApplyResult, TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';

const T = Date.UTC(2026, 0, 1);
const WINDOW = 300_000;

function record(id: string, n: number): TrafficRecord {
  return {
    resource: id,
    resourceName: `name-${id}`,
    cname: `${id}.cdn.example`,
    edge: {
      codes: new Map([
        ['200', 10 * n],
        ['404', n],
      ]),
      classes: new Map([['2xx', 10 * n]]),
      requestTimeSeconds: new Map([['0_250k', 0.01 * n]]),
      requests: 11 * n,
      bandwidthBitsPerSecond: 8 * n,
      hitBytes: n,
      hitRatio: 0.5,
    },
    origin: { codes: new Map([['200', n]]), classes: new Map(), requestTimeSeconds: new Map(), requests: n },
  };
}

function answer(count: number, n: number): TrafficResponse {
  const records = Array.from({ length: count }, (_, i) => record(`r${i}`, n + i));
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

/** `beginMs`: what each window's begin() (the admission pass over every record) costs on the clock. */
function setup(sliceMs = 10, beginMs = 0) {
  const store = new SeriesStore();
  const families = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true });
  let clock = 0;
  const mapping = new (class extends TrafficMapping {
    override begin(...args: Parameters<TrafficMapping['begin']>) {
      const w = super.begin(...args);
      clock += beginMs;
      return w;
    }
  })(families, { metrics: [], resources: [] });
  let yields = 0;
  const applier = new TrafficApplier(mapping, {
    sliceMs,
    // Every look at the time costs 1 ms: a slice is `sliceMs` looks, 4 records each.
    now: () => clock++,
    yieldToLoop: async () => {
      yields++;
    },
  });
  return { store, families, applier, yields: () => yields };
}

function collect(): { done: AppliedCallback; results: (ApplyResult | undefined)[]; errors: unknown[] } {
  const results: (ApplyResult | undefined)[] = [];
  const errors: unknown[] = [];
  return {
    done: (r, err) => {
      results.push(r);
      if (err !== undefined) errors.push(err);
    },
    results,
    errors,
  };
}

describe('traffic applier', () => {
  it('counts a window that fits in one slice before apply returns', () => {
    const { store, applier, yields } = setup();
    const c = collect();
    applier.apply('acme', T, T + WINDOW, answer(3, 1), T, c.done);
    expect(c.results).toEqual([{ dropped: 0, resources: 3 }]);
    expect(applier.pending).toBe(0);
    expect(yields()).toBe(0);
    expect(store.render('text').toString()).toContain(
      'cdn_edge_requests_total{account="acme",resource="r2"} 33',
    );
  });

  it('yields between slices of a big window and ends with what one synchronous apply gives', async () => {
    const sliced = setup(2);
    const c = collect();
    const big = answer(1000, 1);
    sliced.applier.apply('acme', T, T + WINDOW, big, T, c.done);
    expect(c.results).toHaveLength(0);
    expect(sliced.applier.pending).toBe(1);
    await sliced.applier.idle();
    expect(c.results).toEqual([{ dropped: 0, resources: 1000 }]);
    // 1000 records, 4 between two looks at the time, a slice is over after two looks: about 125 slices.
    expect(sliced.yields()).toBeGreaterThanOrEqual(10);

    const store = new SeriesStore();
    const mapping = new TrafficMapping(
      createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true }),
      {
        metrics: [],
        resources: [],
      },
    );
    mapping.apply('acme', T, T + WINDOW, big, T);
    expect(sliced.store.render('text').equals(store.render('text'))).toBe(true);
  });

  it('starts the records in the next slice when begin() used up the slice', async () => {
    const { store, applier, yields } = setup(10, 10);
    const c = collect();
    applier.apply('acme', T, T + WINDOW, answer(3, 1), T, c.done);
    expect(c.results).toHaveLength(0);
    expect(store.render('text').toString()).not.toContain('cdn_edge_requests_total{');
    await applier.idle();
    expect(c.results).toEqual([{ dropped: 0, resources: 3 }]);
    expect(yields()).toBeGreaterThanOrEqual(1);
    expect(store.render('text').toString()).toContain(
      'cdn_edge_requests_total{account="acme",resource="r2"} 33',
    );
  });

  it('counts windows in the order they were handed in, even a small one behind a big one', async () => {
    const { store, families, applier } = setup(2);
    const c = collect();
    applier.apply('acme', T, T + WINDOW, answer(500, 1), T, c.done);
    // The next window has only r0: the others lose their gauges; it must not run before the big one finishes.
    applier.apply('acme', T + WINDOW, T + 2 * WINDOW, answer(1, 7), T, c.done);
    expect(c.results).toHaveLength(0);
    await applier.idle();
    expect(c.results).toEqual([
      { dropped: 0, resources: 500 },
      { dropped: 0, resources: 1 },
    ]);
    const text = store.render('text').toString();
    expect(text).toContain(
      `cdn_metrics_window_end_timestamp_seconds{account="acme"} ${(T + 2 * WINDOW) / 1000}`,
    );
    expect(text).toContain('cdn_edge_bandwidth_bytes_per_second{account="acme",resource="r0"} 7');
    expect(text).not.toContain('cdn_edge_bandwidth_bytes_per_second{account="acme",resource="r1"}');
    // Counters of r1 stay (a day's retention) with the first window's count.
    const slot = families.edge.requests.find(['acme', 'r1']);
    expect(slot === undefined ? undefined : families.edge.requests.get(slot)).toBe(22);
  });

  it('reports a window that cannot be counted and goes on with the next', async () => {
    const { store, applier } = setup(2);
    const c = collect();
    const bad = answer(200, 1);
    bad.records[150]!.edge.requests = -5; // a counter cannot go down: the store throws
    applier.apply('acme', T, T + WINDOW, bad, T, c.done);
    applier.apply('acme', T + WINDOW, T + 2 * WINDOW, answer(1, 1), T, c.done);
    await applier.idle();
    expect(c.results).toEqual([undefined, { dropped: 0, resources: 1 }]);
    expect(c.errors).toHaveLength(1);
    expect(String(c.errors[0])).toMatch(/non-negative/);
    expect(store.render('text').toString()).toContain(
      `cdn_metrics_window_end_timestamp_seconds{account="acme"} ${(T + 2 * WINDOW) / 1000}`,
    );
  });
});
