/**
 * Folding (issue 35) in the traffic mapping: with `limits.top_resources: N` the N resources with the most edge
 * traffic keep their own series and the rest are counted under `resource="__other__"`, whose counters add exactly
 * what they count; the window's gauges of `__other__` come from the folded sums (bandwidth added, hit ratio from the
 * byte sums, no median). A resource that drops out keeps its counters at their last value (its gauges go) and
 * continues them if it comes back; a revisit of late data lands where its first read counted.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { CountedBook } from '../../src/traffic/counted-book.js';
import { foldBook, mergeable } from '../../src/traffic/fold-book.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { ResourceRanking } from '../../src/traffic/ranking.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const T = Date.UTC(2026, 0, 1, 12, 0);
const W = 5 * MINUTE;

/** One side: `n` requests, all 200s; `bytes` over a 5-minute window; optional hit bytes and median. */
function side(n: number, bytes: number, hit?: number): SideRecord {
  const r: SideRecord = {
    codes: new Map([['200', n]]),
    classes: new Map([['2xx', n]]),
    requests: n,
    bandwidthBitsPerSecond: (bytes * 8) / 300,
    requestTimeSeconds: new Map([['0_250k', 0.02]]),
  };
  if (hit !== undefined) {
    r.hitBytes = hit;
    r.hitRatio = bytes > 0 ? hit / bytes : 0;
  }
  return r;
}

function rec(id: string, n: number, bytes = n * 1000): TrafficRecord {
  return {
    resource: id,
    resourceName: `name-${id}`,
    cname: `${id}.example`,
    edge: side(n, bytes, Math.floor(bytes / 2)),
    origin: side(Math.floor(n / 10), Math.floor(bytes / 10)),
  };
}

function answer(records: TrafficRecord[]): TrafficResponse {
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function setup(top: number, o: { revisit?: boolean; windowGauges?: boolean; resources?: string[] } = {}) {
  const store = new SeriesStore();
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: o.windowGauges ?? false });
  let book: CountedBook | undefined;
  if (o.revisit) {
    book = new CountedBook();
    for (const s of [f.edge, f.origin]) {
      s.responses = book.wrap(s.responses);
      s.responsesByClass = book.wrap(s.responsesByClass);
      s.requests = book.wrap(s.requests, s === f.edge);
      s.transferredBytes = book.wrap(s.transferredBytes);
      if (s.cacheHitBytes) s.cacheHitBytes = book.wrap(s.cacheHitBytes);
    }
  }
  const ranking = new ResourceRanking(86_400_000);
  const mapping = new TrafficMapping(f, {
    metrics: [],
    resources: o.resources ?? [],
    fold: {
      topResources: () => top,
      ranking,
      book: book ? foldBook(book) : undefined,
    },
  });
  const scrape = () => Scrape.of(store.render('text').toString());
  return { store, mapping, book, scrape, ranking };
}

/** The sum of every series of a family of the account, `__other__` included. */
function total(s: Scrape, name: string): number {
  return s.all(name, { account: 'acme' }).reduce((n, x) => n + x.value, 0);
}

describe('top_resources: the busiest keep their series, the rest fold into __other__', () => {
  it('keeps N, folds the rest exactly, and gives __other__ the gauges of the folded sums (no median)', () => {
    const { mapping, scrape } = setup(2, { windowGauges: true });
    const records = [rec('a', 500), rec('b', 300), rec('c', 7, 7777), rec('d', 3, 3333)];
    const r = mapping.apply('acme', T, T + W, answer(records), T + W);
    expect(r.folded).toBe(2);
    const s = scrape();
    const resources = s.all('cdn_edge_requests_total').map((x) => x.labels.resource);
    expect(resources.sort()).toEqual(['__other__', 'a', 'b']);
    const other = { account: 'acme', resource: '__other__' };
    expect(s.value('cdn_edge_requests_total', other)).toBe(10);
    expect(s.value('cdn_edge_responses_total', { ...other, code: '200' })).toBe(10);
    expect(s.value('cdn_origin_requests_total', other)).toBe(0);
    // Bytes: each folded record's rounded bytes, added; bandwidth: the bandwidths added.
    expect(s.value('cdn_edge_transferred_bytes_total', other)).toBe(7777 + 3333);
    expect(s.value('cdn_edge_bandwidth_bytes_per_second', other)).toBeCloseTo((7777 + 3333) / 300, 9);
    expect(s.value('cdn_edge_cache_hit_bytes_total', other)).toBe(3888 + 1666);
    expect(s.value('cdn_edge_cache_hit_ratio', other)).toBeCloseTo((3888 + 1666) / (7777 + 3333), 12);
    expect(s.all('cdn_edge_request_duration_median_seconds', other)).toEqual([]);
    expect(s.all('cdn_edge_request_duration_median_seconds', { resource: 'a' }).length).toBe(1);
    expect(s.value('cdn_edge_window_requests', other)).toBe(10);
    expect(s.all('cdn_resource_info', other).map((x) => x.labels)).toEqual([
      { account: 'acme', resource: '__other__', resource_name: '', cname: '' },
    ]);
    expect(s.value('cdn_folded_resources', { account: 'acme' })).toBe(2);
    // The sums by account are the answer's.
    expect(total(s, 'cdn_edge_requests_total')).toBe(810);
    expect(total(s, 'cdn_edge_transferred_bytes_total')).toBe(500_000 + 300_000 + 7777 + 3333);
  });

  it('with metrics.resources, folds only allowed resources: the pages fold what cdn_folded_resources counts', () => {
    const { mapping, scrape } = setup(1, { resources: ['a', 'b', 'c'] });
    const records = [rec('a', 500), rec('b', 300), rec('c', 7), rec('x', 900), rec('y', 1)];
    mapping.apply('acme', T, T + W, answer(records), T + W);
    const s = scrape();
    expect(s.value('cdn_folded_resources', { account: 'acme' })).toBe(2);
    // The decision the landing page and the settled series take: b and c folded, a own, x and y counted nowhere.
    const folded = records.filter((r) => mapping.foldOf('acme', r.resource!, records)).map((r) => r.resource);
    expect(folded).toEqual(['b', 'c']);
    expect(s.value('cdn_edge_requests_total', { account: 'acme', resource: '__other__' })).toBe(307);
    expect(total(s, 'cdn_edge_requests_total')).toBe(807);
  });

  it('a resource that climbs in gets series from that window; one that drops out stops at its last value', () => {
    const { mapping, scrape } = setup(1);
    const seen: Scrape[] = [];
    const at = (i: number) => T + i * W;
    const win = (i: number, records: TrafficRecord[]) => {
      mapping.apply('acme', at(i), at(i + 1), answer(records), at(i + 1));
      seen.push(scrape());
    };
    win(0, [rec('a', 100), rec('b', 10)]);
    // b's traffic over the day passes a's in this window: b climbs in now, a drops out.
    win(1, [rec('a', 100), rec('b', 1000)]);
    let s = seen[1]!;
    expect(s.value('cdn_edge_requests_total', { resource: 'a' })).toBe(100);
    expect(s.value('cdn_edge_bandwidth_bytes_per_second', { resource: 'a' })).toBeUndefined();
    expect(s.all('cdn_resource_info', { resource: 'a' })).toEqual([]);
    expect(s.value('cdn_edge_requests_total', { resource: 'b' })).toBe(1000);
    expect(s.value('cdn_edge_requests_total', { resource: '__other__' })).toBe(10 + 100);
    // a comes back: its counter goes on from 100, the same series.
    win(2, [rec('a', 5000), rec('b', 1)]);
    s = seen[2]!;
    expect(s.value('cdn_edge_requests_total', { resource: 'a' })).toBe(5100);
    expect(s.value('cdn_edge_requests_total', { resource: 'b' })).toBe(1000);
    expect(s.value('cdn_edge_requests_total', { resource: '__other__' })).toBe(110 + 1);
    // At every window: gauges of N + 1 resources at most, counters never down, and the sums the truth.
    const truth = [110, 110 + 1100, 110 + 1100 + 5001];
    const last = new Map<string, number>();
    let sum = 0;
    seen.forEach((x, i) => {
      expect(x.all('cdn_edge_bandwidth_bytes_per_second').length).toBeLessThanOrEqual(2);
      expect(x.all('cdn_resource_info').length).toBeLessThanOrEqual(2);
      for (const series of x.all('cdn_edge_requests_total')) {
        const prev = last.get(series.labels.resource!) ?? 0;
        expect(series.value).toBeGreaterThanOrEqual(prev);
        sum += series.value - prev;
        last.set(series.labels.resource!, series.value);
      }
      expect(sum).toBe(truth[i]);
    });
  });

  it('the counters of a resource out of the top N go a counter retention after it was last counted on its own', () => {
    const { mapping, scrape } = setup(1);
    mapping.apply('acme', T, T + W, answer([rec('a', 100), rec('b', 10)]), T + W);
    mapping.apply('acme', T + W, T + 2 * W, answer([rec('a', 1), rec('b', 1000)]), T + 2 * W);
    expect(scrape().value('cdn_edge_requests_total', { resource: 'a' })).toBe(100);
    const day = T + 2 * W + 86_400_000;
    mapping.apply('acme', day, day + W, answer([rec('a', 1), rec('b', 1000)]), day + W);
    expect(scrape().all('cdn_edge_requests_total', { resource: 'a' })).toEqual([]);
    expect(scrape().value('cdn_edge_requests_total', { resource: '__other__' })).toBe(10 + 1 + 1);
  });
});

describe('the ranking', () => {
  it('ranks over the trailing period only, ties by id, and forgets what was not seen for a period', () => {
    const r = new ResourceRanking(24 * 3_600_000);
    const feed = (at: number, xs: Array<[string, number]>) =>
      r.observe(
        'acme',
        at,
        at + W,
        xs.map(([id, n]) => rec(id, n, n)),
        (x) => x.resource,
      );
    feed(T, [
      ['old', 1_000_000],
      ['x', 10],
      ['y', 10],
    ]);
    expect([...r.top('acme', 1)]).toEqual(['old']);
    expect([...r.top('acme', 2)].sort()).toEqual(['old', 'x']);
    // A day and more later, old's traffic is out of the period; it is still ranked (seen within it) until then.
    feed(T + 23 * 3_600_000, [
      ['x', 20],
      ['y', 5],
    ]);
    expect([...r.top('acme', 1)]).toEqual(['old']);
    feed(T + 25 * 3_600_000, [
      ['x', 1],
      ['y', 1],
    ]);
    expect([...r.top('acme', 1)]).toEqual(['x']);
    expect(r.size('acme')).toBe(2);
    // A window fed again (a restart reading it once more) is not counted twice.
    const before = r.scoreOf('acme', 'x');
    feed(T + 25 * 3_600_000, [['x', 1]]);
    expect(r.scoreOf('acme', 'x')).toBe(before);
  });

  it('survives a save and a restore with the same top set; another period is not taken', () => {
    const r = new ResourceRanking(3_600_000);
    for (let i = 0; i < 30; i++)
      r.observe('acme', T + i * MINUTE, T + (i + 1) * MINUTE, [rec(`r${i % 7}`, i * 13)], (x) => x.resource);
    const saved = JSON.parse(JSON.stringify(r.saved()));
    const back = new ResourceRanking(3_600_000);
    expect(back.restore(saved)).toBe(true);
    expect([...back.top('acme', 3)].sort()).toEqual([...r.top('acme', 3)].sort());
    expect(new ResourceRanking(7_200_000).restore(saved)).toBe(false);
  });
});

describe('folding with late data (metrics.revisit)', () => {
  it('a revisit lands where its first read counted, across a climb-in and a drop-out', () => {
    const { mapping, book, scrape } = setup(1, { revisit: true });
    const b = book!;
    const windows: Array<{ counted: Float64Array; epoch: number }> = [];
    const first = (i: number, records: TrafficRecord[]) => {
      b.beginRecord('acme');
      mapping.apply('acme', T + i * W, T + (i + 1) * W, answer(records), T + (i + 1) * W);
      windows.push({ counted: b.endRecord(), epoch: mapping.foldEpoch('acme') });
    };
    const revisit = (i: number, records: TrafficRecord[]) => {
      b.beginRevisit('acme', [windows[i]!.counted]);
      const apply = mapping.begin('acme', T + i * W, T + (i + 1) * W, answer(records), T + 9 * W, false);
      apply.records(0, apply.total);
      apply.finish();
      b.endRevisit();
    };
    first(0, [rec('a', 100), rec('b', 10)]);
    // b climbs in (counted under __other__ in window 0), a drops out.
    first(1, [rec('a', 100), rec('b', 1000)]);
    expect(windows[0]!.epoch).not.toBe(windows[1]!.epoch);
    // Late data for window 0: a was on its own then (120 - 100 to a), b was folded (15 - 10 to __other__).
    revisit(0, [rec('a', 120), rec('b', 15)]);
    // Late data for window 1: a folded then (nothing new), b on its own (1005 - 1000 to b).
    revisit(1, [rec('a', 100), rec('b', 1005)]);
    const s = scrape();
    expect(s.value('cdn_edge_requests_total', { resource: 'a' })).toBe(120);
    expect(s.value('cdn_edge_requests_total', { resource: 'b' })).toBe(1005);
    expect(s.value('cdn_edge_requests_total', { resource: '__other__' })).toBe(10 + 100 + 5);
    expect(total(s, 'cdn_edge_requests_total')).toBe(135 + 1105);
  });

  it('merges revisits of neighbours only within one fold epoch, and never of windows read from the state file, while the account folds', () => {
    const w = (foldEpoch?: number) => ({
      start: T,
      end: T + W,
      counted: new Float64Array(),
      countedAt: T,
      foldEpoch,
    });
    let folds = false;
    const may = mergeable(() => folds);
    expect(may(w(0), w(1))).toBe(true);
    expect(may(w(), w())).toBe(true);
    folds = true;
    expect(may(w(2), w(2))).toBe(true);
    expect(may(w(2), w(3))).toBe(false);
    expect(may(w(), w())).toBe(false);
  });
});
