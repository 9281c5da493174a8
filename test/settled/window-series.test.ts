/**
 * The settled side (src/settled/window-series.ts) folds as /metrics does (issue 35): a window's points carry the
 * series /metrics has after that window (the busiest resources apart, the rest as one `resource="__other__"` series
 * per family) with what the window added to each; counters of `__other__` are the sums of the folded records, its
 * bandwidth their sum, its hit ratio from the byte sums, and it has no median. Taken in parts (the writer's slices)
 * or whole, the same points.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type WindowPoint, WindowSeries } from '../../src/settled/window-series.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { ResourceRanking } from '../../src/traffic/ranking.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const T = Date.UTC(2026, 5, 1, 0, 0);
const W = 5 * MINUTE;
const RUNS = Number(process.env.FOLD_RUNS ?? 50);
const SEED = process.env.FOLD_SEED === undefined ? 3535 : Number(process.env.FOLD_SEED);

function side(n: number, bytes: number, edge: boolean): SideRecord {
  const r: SideRecord = {
    codes: new Map([
      ['200', n],
      ['404', n % 3],
    ]),
    classes: new Map([['2xx', n]]),
    requests: n + (n % 3),
    bandwidthBitsPerSecond: (bytes * 8) / 300,
    requestTimeSeconds: new Map([['0_250k', 0.01 + n / 1e6]]),
  };
  if (edge) {
    r.hitBytes = Math.floor(bytes / 3);
    r.hitRatio = bytes > 0 ? r.hitBytes / bytes : 0;
  }
  return r;
}

function rec(id: string, n: number, bytes: number): TrafficRecord {
  return {
    resource: id,
    resourceName: id,
    cname: '',
    edge: side(n, bytes, true),
    origin: side(n, bytes, false),
  };
}

function answer(records: TrafficRecord[]): TrafficResponse {
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function scraped(top: number) {
  const store = new SeriesStore();
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false });
  const mapping = new TrafficMapping(f, {
    metrics: [],
    resources: [],
    fold: { topResources: () => top, ranking: new ResourceRanking(86_400_000) },
  });
  const series = new WindowSeries({
    breakdown: 'resource',
    metrics: [],
    resources: [],
    maxLabelLength: 1024,
    fold: (a, r, records) => mapping.foldOf(a, r, records),
  });
  return { store, mapping, series };
}

/** The points of an answer taken `part` records at a time, as the settled writer takes them. */
function inParts(series: WindowSeries, response: TrafficResponse, part: number): WindowPoint[] {
  const seen = new Set<string>();
  const out: WindowPoint[] = [];
  for (let i = 0; i < response.records.length; i += part)
    out.push(...series.pointsOf('acme', W / 1000, response.records, i, i + part, seen));
  return out;
}

const labelsOf = (p: WindowPoint) =>
  Object.fromEntries(p.labels.filter(([k]) => k !== '__name__').map(([k, v]) => [k, v]));

describe('settled windows fold as /metrics does', () => {
  it('writes the series /metrics has after the window, with what the window added, and gauges of the sums', () => {
    const { store, mapping, series } = scraped(2);
    const a = answer([rec('a', 500, 900_000), rec('b', 300, 800_000), rec('c', 7, 7777), rec('d', 4, 3333)]);
    mapping.apply('acme', T, T + W, a, T + W);
    const points = series.points('acme', T, T + W, a);
    const s = Scrape.of(store.render('text').toString());
    // Every counter point is a /metrics series of the same labels, and its value what the window added (all of it:
    // the first window).
    const counters = points.filter((p) => p.kind === 'counter');
    const exposed = s.samples.filter((x) => x.name.endsWith('_total') && x.labels.resource !== undefined);
    expect(counters.length).toBe(exposed.length);
    for (const p of counters) expect(s.value(p.family, labelsOf(p))).toBe(p.value);
    const resources = new Set(points.map((p) => labelsOf(p).resource));
    expect([...resources].sort()).toEqual(['__other__', 'a', 'b']);
    const of = (family: string) =>
      points.find((p) => p.family === family && labelsOf(p).resource === '__other__');
    expect(of('cdn_edge_requests_total')!.value).toBe(7 + 1 + 4 + 1);
    expect(of('cdn_edge_transferred_bytes_total')!.value).toBe(7777 + 3333);
    expect(of('cdn_edge_bandwidth_bytes_per_second')!.value).toBeCloseTo((7777 + 3333) / 300, 9);
    expect(of('cdn_edge_cache_hit_ratio')!.value).toBeCloseTo((2592 + 1111) / (7777 + 3333), 12);
    expect(of('cdn_edge_request_duration_median_seconds')).toBeUndefined();
    expect(points.some((p) => p.family === 'cdn_edge_request_duration_median_seconds')).toBe(true);
  });

  it('without a fold hook, or when nothing is folded, writes every resource apart (unchanged)', () => {
    const plain = new WindowSeries({
      breakdown: 'resource',
      metrics: [],
      resources: [],
      maxLabelLength: 1024,
    });
    const a = answer([rec('a', 5, 50), rec('b', 3, 30)]);
    const ids = new Set(plain.points('acme', T, T + W, a).map((p) => labelsOf(p).resource));
    expect([...ids].sort()).toEqual(['a', 'b']);
    const { mapping, series } = scraped(5);
    mapping.apply('acme', T, T + W, a, T + W);
    expect(new Set(series.points('acme', T, T + W, a).map((p) => labelsOf(p).resource))).toEqual(ids);
  });

  it('generated answers: in any parts, the same points; counters add up to the answer exactly', () => {
    const records = fc.array(
      fc.record({
        id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', '__other__'),
        n: fc.integer({ min: 0, max: 10_000 }),
        bytes: fc.integer({ min: 0, max: 10_000_000 }),
      }),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4 }),
        fc.array(records, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 5 }),
        (top, windows, part) => {
          const { mapping, series } = scraped(top);
          windows.forEach((rs, i) => {
            const a = answer(rs.map((r) => rec(r.id, r.n, r.bytes)));
            mapping.apply('acme', T + i * W, T + (i + 1) * W, a, T + (i + 1) * W);
            const whole = series.points('acme', T + i * W, T + (i + 1) * W, a);
            expect(
              inParts(series, a, part)
                .map((p) => [p.key, p.value])
                .sort(),
            ).toEqual(whole.map((p) => [p.key, p.value]).sort());
            // Each resource once (the first record of an id), as the mapping counts it.
            const firsts = new Map<string, { n: number; bytes: number }>();
            for (const r of rs) if (!firsts.has(r.id)) firsts.set(r.id, r);
            const sum = (family: string) =>
              whole.filter((p) => p.family === family).reduce((x, p) => x + p.value, 0);
            const want = [...firsts.values()];
            expect(sum('cdn_edge_requests_total')).toBe(want.reduce((x, r) => x + r.n + (r.n % 3), 0));
            expect(sum('cdn_edge_transferred_bytes_total')).toBe(want.reduce((x, r) => x + r.bytes, 0));
            // At most N + 1 series per family.
            const keys = whole.filter((p) => p.family === 'cdn_edge_requests_total').length;
            if (top > 0) expect(keys).toBeLessThanOrEqual(top + 1);
          });
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
