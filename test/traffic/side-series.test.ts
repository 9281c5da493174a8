/**
 * The series caches of TrafficMapping (src/traffic/side-series.ts, SideSeries) against the straightforward
 * implementation it replaced (reference-mapping.ts): random sequences of windows, with resources that come and go,
 * codes and ranges that appear and vanish, renames, repeats, allow-lists and gaps longer than the counter
 * retention, must expose exactly the same series and values after every window. Freed slots are reused by the
 * store, so a stale cached slot would show up here as a value written into another series, or a series that should
 * be gone.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 as prng } from '../../src/simulator/random.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { ReferenceTrafficMapping } from './reference-mapping.js';

const T = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const CODES = ['200', '204', '206', '304', '404', '500', '503', '599'];
const CLASSES = ['2xx', '3xx', '4xx', '5xx'];
const RANGES = ['0_250k', '250k_500k', '1m_2m', '4M+', 'all'];

function subset<T>(rand: () => number, xs: readonly T[], p: number): T[] {
  return xs.filter(() => rand() < p);
}

function side(rand: () => number, edge: boolean): SideRecord {
  const int = () => Math.floor(rand() * 1000);
  const s: SideRecord = {
    codes: new Map(subset(rand, CODES, 0.7).map((c) => [c, int()])),
    classes: new Map(subset(rand, CLASSES, 0.8).map((c) => [c, int()])),
    requestTimeSeconds: new Map(subset(rand, RANGES, 0.6).map((r) => [r, rand()])),
  };
  if (rand() < 0.9) s.requests = int();
  if (rand() < 0.9) s.bandwidthBitsPerSecond = rand() * 1e6;
  if (edge && rand() < 0.8) s.hitBytes = int();
  if (edge && rand() < 0.8) s.hitRatio = rand();
  return s;
}

function answer(rand: () => number, byResource: boolean): TrafficResponse {
  const records: TrafficRecord[] = [];
  const ids = byResource ? subset(rand, ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'], 0.6) : [undefined];
  for (const id of ids) {
    const rec: TrafficRecord = {
      resource: id,
      resourceName: id && rand() < 0.1 ? `renamed-${id}` : id && `name-${id}`,
      cname: id && `${id}.cdn.example`,
      edge: side(rand, true),
      origin: side(rand, false),
    };
    records.push(rec);
    // Now and then the same resource twice (not documented; the second is dropped).
    if (rand() < 0.05) records.push({ ...rec, edge: side(rand, true) });
  }
  if (byResource && rand() < 0.05) records.push({ edge: side(rand, true), origin: side(rand, false) });
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function sortedLines(store: SeriesStore): string[] {
  return store.render('text').toString().split('\n').sort();
}

interface Variant {
  name: string;
  breakdown: 'resource' | 'account';
  windowGauges: boolean;
  metrics: string[];
  resources: string[];
}

const VARIANTS: Variant[] = [
  { name: 'resource breakdown', breakdown: 'resource', windowGauges: false, metrics: [], resources: [] },
  { name: 'window gauges', breakdown: 'resource', windowGauges: true, metrics: [], resources: [] },
  {
    name: 'allow-lists',
    breakdown: 'resource',
    windowGauges: true,
    metrics: [
      'edge_status_200',
      'edge_status_5xx',
      'origin_request_time',
      'edge_hit_bytes',
      'origin_bandwidth',
    ],
    resources: ['r1', 'r2', 'r5'],
  },
  { name: 'account breakdown', breakdown: 'account', windowGauges: true, metrics: [], resources: [] },
];

describe('traffic mapping series caches', () => {
  for (const v of VARIANTS) {
    it(`expose what the uncached mapping exposes, window after window (${v.name})`, () => {
      for (let seed = 1; seed <= 6; seed++) {
        const rand = prng(seed * 7919 + v.name.length);
        const cached = new SeriesStore();
        const plain = new SeriesStore();
        const opts = { metrics: v.metrics, resources: v.resources, counterRetentionMs: 6 * HOUR };
        const fam = { breakdown: v.breakdown, windowGauges: v.windowGauges };
        const p = new TrafficMapping(createTrafficFamilies(cached, fam), opts);
        const ref = new ReferenceTrafficMapping(createTrafficFamilies(plain, fam), opts);
        let now = T;
        for (let w = 0; w < 40; w++) {
          const accounts = rand() < 0.2 ? ['acme', 'beta'] : ['acme'];
          // Mostly minutes apart; sometimes longer than the retention, so counters of absent resources go.
          now += rand() < 0.1 ? 7 * HOUR : 5 * 60_000;
          for (const account of accounts) {
            const res = { ...answer(rand, v.breakdown === 'resource'), account };
            const a = p.apply(account, now - 300_000, now, res, now);
            const b = ref.apply(account, now - 300_000, now, res, now);
            expect(a).toEqual(b);
          }
          expect(sortedLines(cached), `seed ${seed}, window ${w}`).toEqual(sortedLines(plain));
        }
      }
    });
  }

  it('keeps a returning resource apart from one that took its freed slots', () => {
    const store = new SeriesStore();
    const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false });
    const p = new TrafficMapping(f, { metrics: [], resources: [], counterRetentionMs: HOUR });
    const rec = (id: string, n: number): TrafficRecord => ({
      resource: id,
      edge: {
        codes: new Map([['200', n]]),
        classes: new Map(),
        requestTimeSeconds: new Map(),
        requests: n,
      },
      origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
    });
    const res = (...records: TrafficRecord[]): TrafficResponse => ({
      account: 'acme',
      metrics: [],
      records,
      issues: [],
      unknownKeys: [],
    });
    p.apply('acme', T, T + 60_000, res(rec('a', 5)), T);
    // `a` is gone for longer than the retention: its counters are deleted and `b` reuses their slots.
    p.apply('acme', T + 60_000, T + 120_000, res(rec('b', 7)), T + 2 * HOUR);
    p.apply('acme', T + 120_000, T + 180_000, res(rec('a', 1), rec('b', 2)), T + 2 * HOUR);
    const value = (id: string) => {
      const slot = f.edge.requests.find(['acme', id]);
      return slot === undefined ? undefined : f.edge.requests.get(slot);
    };
    expect(value('a')).toBe(1);
    expect(value('b')).toBe(9);
    const code200 = f.edge.responses.find(['acme', 'a', '200']);
    expect(code200 === undefined ? undefined : f.edge.responses.get(code200)).toBe(1);
  });
});
