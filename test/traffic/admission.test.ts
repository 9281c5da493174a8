/**
 * Series admission under `limits` (src/traffic/admission.ts; docs/metrics.md on the caps), through admitResources:
 * a new resource gets all of its series or none; with breakdown `resource` one past a cap is folded into
 * `__other__` (counted all the same), with breakdown `account` it is refused with the cap that stopped it as the
 * reason; a resource id over `max_label_length` (UTF-8 bytes) is refused whatever the breakdown; known resources are
 * never refused; the choice depends on the answer's resources and the store only, not on their order.
 */
import { describe, expect, it } from 'vitest';
import { type AdmissionScope, admitResources, type SeriesLimits } from '../../src/traffic/admission.js';
import type { SideRecord, TrafficRecord } from '../../src/traffic/response.js';

function side(over: Partial<SideRecord> = {}): SideRecord {
  return { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), ...over };
}

/** A record whose resource would create `series` counters (edge requests and status codes), nothing else. */
function rec(id: string | undefined, series = 1): TrafficRecord {
  const codes = new Map<string, number>();
  for (let i = 1; i < series; i++) codes.set(String(200 + i), 1);
  return {
    ...(id === undefined ? {} : { resource: id }),
    edge: side({ requests: 1, codes }),
    origin: side(),
  };
}

function limits(over: Partial<Omit<SeriesLimits, 'storeSize'>> & { store?: number } = {}): SeriesLimits {
  const { store = 0, ...rest } = over;
  return {
    maxSeries: 1_000,
    maxSeriesPerAccount: 1_000,
    maxLabelLength: 128,
    storeSize: () => store,
    ...rest,
  };
}

function scope(l: SeriesLimits | undefined, over: Partial<AdmissionScope> = {}): AdmissionScope {
  return {
    limits: l,
    byResource: true,
    resourceAllow: undefined,
    resourceInfo: false,
    windowGauges: false,
    ...over,
  };
}

const none = () => false;

describe('admission', () => {
  it('admits everything when there are no limits, or when all new resources fit', () => {
    expect(admitResources(scope(undefined), none, () => 0, [rec('a', 10_000)])).toBeUndefined();
    expect(
      admitResources(scope(limits({ maxSeries: 3 })), none, () => 0, [rec('a'), rec('b'), rec('c')]),
    ).toBe(undefined);
  });

  it('with breakdown resource, folds the new resources past the cap (none refused), taken in the order of their ids', () => {
    const l = limits({ maxSeries: 10, store: 6 });
    // Room for 4: a (2) and b (2) fit; c and d do not. The answer's order does not change which.
    for (const list of [
      [rec('a', 2), rec('b', 2), rec('c', 2), rec('d', 1)],
      [rec('d', 1), rec('c', 2), rec('b', 2), rec('a', 2)],
    ]) {
      const got = admitResources(scope(l), none, () => 0, list)!;
      expect([...got.folded].sort()).toEqual(['c', 'd']);
      expect(got.ids.size).toBe(0);
      expect(got.refused).toEqual({});
    }
  });

  it('once one does not fit, the rest are folded too, even a smaller one that would (deterministic by id)', () => {
    const got = admitResources(scope(limits({ maxSeries: 3 })), none, () => 0, [
      rec('a', 2),
      rec('b', 2),
      rec('c', 1),
    ])!;
    expect([...got.folded].sort()).toEqual(['b', 'c']);
  });

  it('fills a cap exactly: a resource that lands on it is admitted, one series more is not', () => {
    const exact = admitResources(scope(limits({ maxSeries: 5, store: 2 })), none, () => 0, [rec('a', 3)]);
    expect(exact).toBeUndefined();
    const over = admitResources(scope(limits({ maxSeries: 5, store: 2 })), none, () => 0, [rec('a', 4)]);
    expect([...over!.folded]).toEqual(['a']);
  });

  it('with breakdown account, refuses the account past a cap and names the cap that stopped it', () => {
    const account = scope(undefined, { byResource: false });
    // The store is full: max_series.
    const store = admitResources({ ...account, limits: limits({ maxSeries: 10, store: 9 }) }, none, () => 0, [
      rec(undefined, 3),
    ])!;
    expect([...store.ids]).toEqual(['']);
    expect(store.refused).toEqual({ max_series: 3 });
    expect(store.folded.size).toBe(0);
    // The account is full and the store is not: max_series_per_account.
    const own = admitResources(
      { ...account, limits: limits({ maxSeries: 100, maxSeriesPerAccount: 10 }) },
      none,
      () => 9,
      [rec(undefined, 3)],
    )!;
    expect(own.refused).toEqual({ max_series_per_account: 3 });
    // Both equally short: max_series.
    const both = admitResources(
      { ...account, limits: limits({ maxSeries: 10, store: 8, maxSeriesPerAccount: 10 }) },
      none,
      () => 8,
      [rec(undefined, 3)],
    )!;
    expect(both.refused).toEqual({ max_series: 3 });
  });

  it('the per-account cap folds as the store cap does, with breakdown resource', () => {
    const got = admitResources(scope(limits({ maxSeriesPerAccount: 4 })), none, () => 2, [
      rec('a', 2),
      rec('b', 1),
    ])!;
    expect([...got.folded]).toEqual(['b']);
    expect(got.refused).toEqual({});
  });

  it('never refuses or folds a known resource, and its series are not charged to the new ones', () => {
    const l = limits({ maxSeries: 3, store: 3 });
    expect(
      admitResources(
        scope(l),
        (id) => id === 'old',
        () => 3,
        [rec('old', 50)],
      ),
    ).toBeUndefined();
    const got = admitResources(
      scope(limits({ maxSeries: 2 })),
      (id) => id === 'old',
      () => 0,
      [rec('old', 50), rec('new', 2)],
    );
    expect(got).toBeUndefined();
  });

  it('refuses a resource id over max_label_length in UTF-8 bytes, with its series, whatever the room', () => {
    const l = limits({ maxLabelLength: 8 });
    const eight = 'ab'.repeat(4);
    // 'é' is 2 bytes: 5 characters, 10 bytes.
    const wide = 'é'.repeat(5);
    const got = admitResources(scope(l), none, () => 0, [
      rec(eight, 2),
      rec(wide, 3),
      rec('x'.repeat(9), 1),
    ])!;
    expect([...got.ids].sort()).toEqual([wide, 'x'.repeat(9)].sort());
    expect(got.refused).toEqual({ label_too_long: 4 });
    expect(got.folded.size).toBe(0);
    // Refused, not charged: with room for only the one that fits, it is admitted.
    const tight = admitResources(scope(limits({ maxLabelLength: 8, maxSeries: 2 })), none, () => 0, [
      rec('x'.repeat(9), 50),
      rec(eight, 2),
    ])!;
    expect(tight.folded.size).toBe(0);
    expect([...tight.ids]).toEqual(['x'.repeat(9)]);
  });

  it('leaves out records without a resource id or outside metrics.resources, and counts a repeated id once', () => {
    const l = limits({ maxSeries: 2 });
    const allow = new Set(['a', 'b']);
    const got = admitResources(scope(l, { resourceAllow: allow }), none, () => 0, [
      rec(undefined, 100),
      rec('', 100),
      rec('not-allowed', 100),
      rec('a', 1),
      rec('a', 1),
      rec('b', 1),
    ]);
    expect(got).toBeUndefined();
  });

  it('charges a new resource every series its record may create: info, gauges beside counters, both sides', () => {
    const full: TrafficRecord = {
      resource: 'r',
      edge: side({
        codes: new Map([['200', 1]]),
        classes: new Map([['2xx', 1]]),
        requests: 1,
        bandwidthBitsPerSecond: 8,
        hitBytes: 1,
        hitRatio: 0.5,
        requestTimeSeconds: new Map([['all', 0.1]]),
      }),
      origin: side({ requests: 1 }),
    };
    // Edge: 5 counters + bandwidth gauge + request time + hit ratio = 8; origin: 1 counter. 9 in all;
    // with window gauges, each counter has one beside it (+6); with resource info, one more.
    const fits = (n: number, over: Partial<AdmissionScope> = {}) =>
      admitResources(scope(limits({ maxSeries: n }), over), none, () => 0, [full]) === undefined;
    expect(fits(9)).toBe(true);
    expect(fits(8)).toBe(false);
    expect(fits(15, { windowGauges: true })).toBe(true);
    expect(fits(14, { windowGauges: true })).toBe(false);
    expect(fits(16, { windowGauges: true, resourceInfo: true })).toBe(true);
    expect(fits(15, { windowGauges: true, resourceInfo: true })).toBe(false);
    // The info series is per resource: breakdown account has none.
    const account = (n: number) =>
      admitResources(
        scope(limits({ maxSeries: n }), { byResource: false, resourceInfo: true }),
        none,
        () => 0,
        [full],
      ) === undefined;
    expect(account(9)).toBe(true);
    expect(account(8)).toBe(false);
  });
});
