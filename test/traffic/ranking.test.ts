/**
 * The ranking behind `limits.top_resources` (src/traffic/ranking.ts; docs/metrics.md, "Bounded series: top resources
 * and `__other__`"), through its exports: a resource's score is its edge traffic over the trailing period (bytes from
 * the edge bandwidth, else requests), the top N is a function of the traffic alone (ties to the smaller id), a
 * resource absent for a whole period is forgotten, a window is counted once, accounts are ranked apart, and the
 * ranking survives a save and a restore of the same period only.
 */
import { describe, expect, it } from 'vitest';
import { BUCKETS, edgeTraffic, ResourceRanking } from '../../src/traffic/ranking.js';
import type { SideRecord, TrafficRecord } from '../../src/traffic/response.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const W = 5 * 60_000;
/** A slice boundary, so that "a day later" lands in a known slice. */
const T = Date.UTC(2026, 2, 1, 0, 0);

function side(over: Partial<SideRecord>): SideRecord {
  return { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), ...over };
}

function rec(id: string | undefined, edge: Partial<SideRecord>): TrafficRecord {
  return {
    ...(id === undefined ? {} : { resource: id }),
    edge: side(edge),
    origin: side({ requests: 999_999 }),
  };
}

const byId = (x: TrafficRecord) => x.resource;

/** One window of `account` at `at`, ranked by requests. */
function feed(r: ResourceRanking, at: number, xs: Array<[string, number]>, account = 'acme'): void {
  r.observe(
    account,
    at,
    at + W,
    xs.map(([id, requests]) => rec(id, { requests })),
    byId,
  );
}

const top = (r: ResourceRanking, n: number, account = 'acme') => [...r.top(account, n)].sort();

describe('edge traffic', () => {
  it('is the edge bytes of the window when the answer has edge bandwidth, else edge requests, else 0', () => {
    // 8000 bit/s over 300 s = 300 000 bytes; requests are not added to bytes.
    expect(edgeTraffic(rec('a', { bandwidthBitsPerSecond: 8000, requests: 5 }), 300)).toBe(300_000);
    // Rounded to whole bytes.
    expect(edgeTraffic(rec('a', { bandwidthBitsPerSecond: 1 }), 3)).toBe(0);
    expect(edgeTraffic(rec('a', { bandwidthBitsPerSecond: 5 }), 3)).toBe(2);
    expect(edgeTraffic(rec('a', { requests: 42 }), 300)).toBe(42);
    expect(edgeTraffic(rec('a', {}), 300)).toBe(0);
  });

  it('ranks by the edge side only: origin traffic does not count', () => {
    const r = new ResourceRanking(DAY);
    r.observe(
      'acme',
      T,
      T + W,
      [rec('edge-heavy', { requests: 10 }), rec('origin-heavy', { requests: 1 })],
      byId,
    );
    expect([...r.top('acme', 1)]).toEqual(['edge-heavy']);
    expect(r.scoreOf('acme', 'edge-heavy')).toBe(10);
    expect(r.scoreOf('acme', 'origin-heavy')).toBe(1);
  });
});

describe('the top N', () => {
  it('is the N busiest, all of them when there are N or fewer, and none for an account never seen', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['a', 50],
      ['b', 40],
      ['c', 30],
      ['d', 20],
    ]);
    expect(top(r, 2)).toEqual(['a', 'b']);
    expect(top(r, 3)).toEqual(['a', 'b', 'c']);
    expect(top(r, 4)).toEqual(['a', 'b', 'c', 'd']);
    expect(top(r, 10)).toEqual(['a', 'b', 'c', 'd']);
    expect(top(r, 0)).toEqual([]);
    expect(top(r, 5, 'nobody')).toEqual([]);
  });

  it('sums a resource over the windows of the period', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['a', 30],
      ['b', 20],
    ]);
    feed(r, T + W, [['b', 20]]);
    expect(r.scoreOf('acme', 'b')).toBe(40);
    expect([...r.top('acme', 1)]).toEqual(['b']);
  });

  it('breaks ties by the smaller id, whatever order the resources came in', () => {
    for (const order of [
      ['m', 'b', 'z', 'a'],
      ['a', 'z', 'b', 'm'],
      ['z', 'm', 'a', 'b'],
    ]) {
      const r = new ResourceRanking(DAY);
      feed(
        r,
        T,
        order.map((id) => [id, 7]),
      );
      expect(top(r, 1)).toEqual(['a']);
      expect(top(r, 3)).toEqual(['a', 'b', 'm']);
    }
    // A tie only at the cut: the busier one is in, the tie goes to the smaller id.
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['busy', 100],
      ['y', 5],
      ['x', 5],
      ['quiet', 1],
    ]);
    expect(top(r, 2)).toEqual(['busy', 'x']);
  });

  it('is the same Set when asked again with no window counted in between', () => {
    // The source's comment promises the same Set "while its members did not change", also across windows; no
    // caller relies on that (src/traffic/mapping.ts and src/backfill/kept-resources.ts read members only), and a
    // window counted gives a new Set today, so only this much is asserted.
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['a', 50],
      ['b', 40],
      ['c', 1],
    ]);
    const first = r.top('acme', 2);
    expect(r.top('acme', 2)).toBe(first);
    feed(r, T + W, [['c', 100]]);
    expect([...r.top('acme', 2)].sort()).toEqual(['a', 'c']);
  });

  it('leaves out records `keep` skips (no resource id, not allowed)', () => {
    const r = new ResourceRanking(DAY);
    r.observe(
      'acme',
      T,
      T + W,
      [rec(undefined, { requests: 1e9 }), rec('hidden', { requests: 1e9 }), rec('shown', { requests: 1 })],
      (x) => (x.resource === 'hidden' ? undefined : x.resource),
    );
    expect(r.size('acme')).toBe(1);
    expect([...r.top('acme', 5)]).toEqual(['shown']);
    expect(r.scoreOf('acme', 'hidden')).toBe(0);
  });

  it('ranks each account apart, and forget() drops one account only', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T, [['a', 10]], 'acme');
    feed(r, T, [['b', 10]], 'beta');
    expect([...r.top('acme', 5)]).toEqual(['a']);
    expect([...r.top('beta', 5)]).toEqual(['b']);
    r.forget('acme');
    expect(r.size('acme')).toBe(0);
    expect([...r.top('acme', 5)]).toEqual([]);
    expect([...r.top('beta', 5)]).toEqual(['b']);
  });
});

describe('the trailing period', () => {
  const slice = DAY / BUCKETS;

  it('covers the period: traffic a period old drops out of the score, newer traffic stays', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['old', 1_000],
      ['new', 1],
    ]);
    // Still within the period (the last slice of it): old leads.
    feed(r, T + DAY - slice, [['new', 1]]);
    expect(r.scoreOf('acme', 'old')).toBe(1_000);
    expect([...r.top('acme', 1)]).toEqual(['old']);
    // A period after its window, old's traffic is out; the newer traffic of `new` is still counted.
    feed(r, T + DAY, [['new', 1]]);
    expect(r.scoreOf('acme', 'old')).toBe(0);
    expect(r.scoreOf('acme', 'new')).toBe(2);
    expect([...r.top('acme', 1)]).toEqual(['new']);
  });

  it('forgets a resource absent from every answer for a whole period, and keeps one seen within it', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T, [
      ['gone', 5],
      ['kept', 5],
    ]);
    feed(r, T + 12 * HOUR, [['kept', 5]]);
    feed(r, T + DAY - slice, [['other', 1]]);
    expect(r.size('acme')).toBe(3);
    feed(r, T + DAY, [['other', 1]]);
    expect(r.size('acme')).toBe(2);
    expect(r.scoreOf('acme', 'gone')).toBe(0);
    expect([...r.top('acme', 5)].sort()).toEqual(['kept', 'other']);
    // A gap longer than the period clears everything that was not seen since.
    feed(r, T + 5 * DAY, [['fresh', 1]]);
    expect([...r.top('acme', 5)]).toEqual(['fresh']);
    expect(r.scoreOf('acme', 'fresh')).toBe(1);
  });

  it('keeps scores right as many resources come and go (rows reused after forgetting)', () => {
    const r = new ResourceRanking(DAY);
    for (let day = 0; day < 3; day++) {
      const ids = Array.from({ length: 150 }, (_, i) => `d${day}-r${String(i).padStart(3, '0')}`);
      feed(
        r,
        T + day * DAY,
        ids.map((id, i) => [id, i + 1]),
      );
      expect(r.size('acme')).toBe(150);
      expect(r.scoreOf('acme', ids[149]!)).toBe(150);
      expect(r.scoreOf('acme', ids[0]!)).toBe(1);
      expect(top(r, 2)).toEqual([ids[148], ids[149]]);
    }
  });
});

describe('a window is counted once', () => {
  it('does not count a window again, nor one ending before the newest fed (a restart reading it once more)', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T + W, [['a', 10]]);
    feed(r, T + W, [['a', 10]]);
    feed(r, T, [['a', 10]]);
    expect(r.scoreOf('acme', 'a')).toBe(10);
    feed(r, T + 2 * W, [['a', 10]]);
    expect(r.scoreOf('acme', 'a')).toBe(20);
  });

  it('does not count a window that starts a period or more before the newest counted (its slice is gone)', () => {
    const r = new ResourceRanking(DAY);
    feed(r, T + DAY, [['a', 10]]);
    // Ends after the newest fed, but starts a whole period before it.
    r.observe('acme', T, T + DAY + 2 * W, [rec('a', { requests: 1_000 })], byId);
    expect(r.scoreOf('acme', 'a')).toBe(10);
  });
});

describe('save and restore', () => {
  it('gives back the same scores and top N, through JSON; a ranking of another period is not taken', () => {
    const r = new ResourceRanking(DAY);
    for (let i = 0; i < 40; i++) {
      feed(r, T + i * HOUR, [
        [`r${i % 7}`, i * 13],
        ['steady', 50],
      ]);
      feed(r, T + i * HOUR, [[`b${i % 3}`, i]], 'beta');
    }
    const saved = JSON.parse(JSON.stringify(r.saved()));
    const back = new ResourceRanking(DAY);
    expect(back.restore(saved)).toBe(true);
    for (const account of ['acme', 'beta']) {
      expect(back.size(account)).toBe(r.size(account));
      expect(top(back, 3, account)).toEqual(top(r, 3, account));
    }
    for (const id of ['steady', 'r0', 'r6']) expect(back.scoreOf('acme', id)).toBe(r.scoreOf('acme', id));
    // The restored ranking goes on where it stopped: an old window is not counted again, a new one is.
    const steady = back.scoreOf('acme', 'steady');
    feed(back, T + 39 * HOUR, [['steady', 50]]);
    expect(back.scoreOf('acme', 'steady')).toBe(steady);
    feed(back, T + 40 * HOUR, [['steady', 70]]);
    feed(r, T + 40 * HOUR, [['steady', 70]]);
    // The slice a period back (50) leaves as the new one (70) comes in, on both.
    expect(back.scoreOf('acme', 'steady')).toBe(steady + 20);
    expect(back.scoreOf('acme', 'steady')).toBe(r.scoreOf('acme', 'steady'));

    expect(new ResourceRanking(2 * DAY).restore(saved)).toBe(false);
    expect(new ResourceRanking(DAY).restore({ ...saved, buckets: BUCKETS + 1 })).toBe(false);
  });

  it('saves no account without resources', () => {
    const r = new ResourceRanking(DAY);
    r.observe('empty', T, T + W, [], byId);
    feed(r, T, [['a', 1]]);
    expect(Object.keys(r.saved().accounts)).toEqual(['acme']);
  });
});
