/**
 * Series caps in the traffic mapping (issue 15, folding since issue 35): which new resources a cap keeps out of
 * series of their own depends on the answer, not on the order of its records; they are counted under
 * `resource="__other__"` instead of refused, so the account's sums stay exact; exported resources keep counting
 * exactly; the estimate per resource is never below what a resource creates, so the cap holds (up to the one
 * `__other__` set per account). Only an over-long id is refused.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const MIN = 60_000;
const T = Date.UTC(2026, 0, 1);

function side(n: number): SideRecord {
  return {
    codes: new Map([['200', 10 * n]]),
    classes: new Map([['2xx', 10 * n]]),
    requests: 12 * n,
    requestTimeSeconds: new Map([['0_250k', 0.01]]),
  };
}

function record(id: string, n = 1): TrafficRecord {
  return {
    resource: id,
    resourceName: `name-${id}`,
    cname: `${id}.cdn.example`,
    edge: side(n),
    origin: side(n),
  };
}

function answer(records: TrafficRecord[]): TrafficResponse {
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function setup(maxSeriesPerAccount: number) {
  const store = new SeriesStore();
  const families = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false });
  const p = new TrafficMapping(families, {
    metrics: [],
    resources: [],
    limits: { maxSeries: 1_000_000, maxSeriesPerAccount, maxLabelLength: 64, storeSize: () => store.size },
  });
  const scrape = () => Scrape.of(store.render('text').toString());
  return { p, store, scrape };
}

/** Series one record above creates: per side 1 code + 1 class + requests + 1 median; plus cdn_resource_info. */
const PER_RESOURCE = 9;

describe('series caps in the traffic mapping', () => {
  it('folds the same new resources whatever their order in the answer, and counts them under __other__', () => {
    const ids = Array.from({ length: 20 }, (_, i) => `r${String(i).padStart(2, '0')}`);
    const shuffled = [...ids].sort(
      (a, b) => ((a.charCodeAt(2) * 7) % 10) - ((b.charCodeAt(2) * 7) % 10) || (a < b ? 1 : -1),
    );
    const runs = [ids, [...ids].reverse(), shuffled].map((order) => {
      const { p, scrape } = setup(10 * PER_RESOURCE + 4);
      const r = p.apply('acme', T, T + MIN, answer(order.map((id) => record(id))), T + 2 * MIN);
      const kept = scrape()
        .all('cdn_edge_requests_total')
        .map((s) => s.labels.resource)
        .sort();
      return { r, kept };
    });
    expect(runs[0]!.kept).toEqual(['__other__', ...ids.slice(0, 10)]);
    for (const run of runs) {
      expect(run.kept).toEqual(runs[0]!.kept);
      expect(run.r.refused).toBeUndefined();
      expect(run.r.folded).toBe(10);
      expect(run.r.resources).toBe(20);
    }
  });

  it('keeps counting exported resources exactly while folding new ones, and gives them series when room frees', () => {
    const { p, store, scrape } = setup(3 * PER_RESOURCE);
    p.apply('acme', T, T + MIN, answer([record('a'), record('b'), record('c')]), T + 2 * MIN);
    expect(store.size - 5).toBeLessThanOrEqual(3 * PER_RESOURCE);
    for (let w = 1; w <= 5; w++) {
      const r = p.apply(
        'acme',
        T + w * MIN,
        T + (w + 1) * MIN,
        answer([record('0new'), record('a'), record('b'), record('c')]),
        T + (w + 2) * MIN,
      );
      expect(r.refused).toBeUndefined();
      expect(r.folded).toBe(1);
    }
    const s = scrape();
    for (const id of ['a', 'b', 'c'])
      expect(s.value('cdn_edge_requests_total', { resource: id })).toBe(12 * 6);
    expect(s.value('cdn_edge_requests_total', { resource: '0new' })).toBeUndefined();
    // Its five windows, under __other__: the account's sum is exact.
    expect(s.value('cdn_edge_requests_total', { resource: '__other__' })).toBe(12 * 5);
    expect(s.value('cdn_folded_resources', { account: 'acme' })).toBe(1);
    // A day later c has been gone long enough to lose its counters: 0new fits now.
    const later = T + 2 * 86_400_000;
    p.apply('acme', later, later + MIN, answer([record('a'), record('b')]), later + MIN);
    const r = p.apply(
      'acme',
      later + MIN,
      later + 2 * MIN,
      answer([record('a'), record('b'), record('0new')]),
      later + 2 * MIN,
    );
    expect(r.refused).toBeUndefined();
    expect(r.folded).toBeUndefined();
    expect(scrape().value('cdn_edge_requests_total', { resource: '0new' })).toBe(12);
    expect(scrape().value('cdn_folded_resources', { account: 'acme' })).toBe(0);
  });

  it('refuses an id over max_label_length and truncates a long name with the marker', () => {
    const { p, scrape } = setup(1_000_000);
    const longId = 'i'.repeat(65);
    const r = p.apply(
      'acme',
      T,
      T + MIN,
      answer([record(longId), { ...record('ok'), resourceName: 'é'.repeat(100) }]),
      T + 2 * MIN,
    );
    expect(r.refused).toEqual({ label_too_long: PER_RESOURCE });
    expect(r.truncated).toBe(1);
    const s = scrape();
    expect(s.all('cdn_edge_requests_total').map((x) => x.labels.resource)).toEqual(['ok']);
    const name = s.all('cdn_resource_info')[0]!.labels.resource_name!;
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(64);
    expect(name).toMatch(/^é+\.\.\.\(truncated\)$/);
  });

  it('a burst of new resources is bounded by the cap, and its series go once the burst is over (gauges at once, counters after a day)', () => {
    const { p, store, scrape } = setup(100_000);
    const steady = ['s1', 's2', 's3'].map((id) => record(id));
    p.apply('acme', T, T + MIN, answer(steady), T + MIN);
    const before = store.size;
    for (let w = 1; w <= 10; w++) {
      const burst = Array.from({ length: 2000 }, (_, i) => record(`b${w}-${i}`));
      p.apply('acme', T + w * MIN, T + (w + 1) * MIN, answer([...steady, ...burst]), T + (w + 1) * MIN);
      expect(store.size).toBeLessThanOrEqual(100_000 + 10);
    }
    const peak = store.size;
    expect(peak).toBeGreaterThan(10 * before);
    // What the cap kept out is counted under __other__: every window's requests are there, none lost.
    const all = scrape()
      .all('cdn_edge_requests_total')
      .reduce((n, x) => n + x.value, 0);
    expect(all).toBe(12 * (3 * 11 + 2000 * 10));
    // The burst is over: its gauges go with the next answer, its counters a day after it was last seen.
    p.apply('acme', T + 11 * MIN, T + 12 * MIN, answer(steady), T + 12 * MIN);
    expect(store.size).toBeLessThan(peak);
    const later = T + 11 * MIN + 86_400_000;
    p.apply('acme', later, later + MIN, answer(steady), later + MIN);
    // The steady resources' series, and cdn_folded_resources (0 now: nothing folded) once folding began.
    expect(store.size).toBe(before + 1);
    expect(scrape().value('cdn_folded_resources', { account: 'acme' })).toBe(0);
  });
});
