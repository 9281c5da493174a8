/**
 * What the traffic mapping keeps per account and resource (src/traffic/entries.ts): `accountSeries`, the series an
 * account's resources hold, is what the series caps weigh an account by (max_series_per_account,
 * src/traffic/admission.ts): it must equal what those resources have in the store, counters, gauges, window
 * gauges and info alike, as series come and go, and leave the account's few per-account series and every other
 * account's out.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family } from '../../src/store/types.js';
import { type AccountState, accountSeries, type Entry } from '../../src/traffic/entries.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord } from '../../src/traffic/response.js';
import { emptySide, SideSeries } from '../../src/traffic/side-series.js';

const WINDOW_SECONDS = 300;

function side(codes: string[], edge: boolean): SideRecord {
  return {
    codes: new Map(codes.map((c) => [c, 10])),
    classes: new Map([['2xx', 10]]),
    requests: 12,
    bandwidthBitsPerSecond: 8000,
    requestTimeSeconds: new Map([
      ['0_250k', 0.01],
      ['4M+', 0.5],
    ]),
    ...(edge ? { hitBytes: 600, hitRatio: 0.6 } : {}),
  };
}

/** A store with every traffic family, and entries of `account` counted into it as the mapping counts them. */
function setup() {
  const store = new SeriesStore();
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true, revisit: true });
  const sides = new SideSeries(() => true, f.edge.responses);
  const state = (): AccountState => ({ entries: new Map(), windows: 0, epoch: 0 });
  const count = (s: AccountState, account: string, id: string, codes: string[], gauges = true) => {
    const entry: Entry = s.entries.get(id) ?? {
      base: [account, id],
      lastSeen: 0,
      window: 0,
      info: undefined,
      hasGauges: false,
      edge: emptySide(true),
      origin: emptySide(true),
    };
    sides.apply('edge', f.edge, entry.edge, entry.base, side(codes, true), WINDOW_SECONDS, gauges);
    sides.apply('origin', f.origin, entry.origin, entry.base, side(codes, false), WINDOW_SECONDS, gauges);
    if (gauges && entry.info === undefined) {
      entry.info = [account, id, `name-${id}`, `${id}.cdn.example`];
      f.resourceInfo!.set(f.resourceInfo!.slot(entry.info), 1);
    }
    s.entries.set(id, entry);
    return entry;
  };
  /** Series in the store labelled with `account` and a resource. */
  const inStore = (account: string) => {
    let n = 0;
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== 'object') return;
      if ('spec' in v && 'forEach' in v) {
        const fam = v as Family;
        if (fam.spec.labelNames[1] !== 'resource') return;
        fam.forEach((l) => {
          if (l[0] === account) n++;
        });
      } else for (const x of Object.values(v)) walk(x);
    };
    walk(f);
    return n;
  };
  return { f, sides, state, count, inStore };
}

describe('accountSeries', () => {
  it("equals the series the account's resources hold in the store, and no other account's", () => {
    const { f, state, count, inStore } = setup();
    const acme = state();
    const beta = state();
    expect(accountSeries(acme)).toBe(0);
    count(acme, 'acme', 'r1', ['200', '404']);
    count(acme, 'acme', 'r2', ['200']);
    count(beta, 'beta', 'r1', ['200', '500', '503']);
    // The account's own series are not its resources'.
    f.windows.add(f.windows.slot(['acme']), 1);
    f.windowEnd.set(f.windowEnd.slot(['acme']), 1);
    expect(accountSeries(acme)).toBe(inStore('acme'));
    expect(accountSeries(beta)).toBe(inStore('beta'));
    expect(accountSeries(acme)).toBeGreaterThan(20);
  });

  it('follows the store as a code is added and as gauges go', () => {
    const { f, sides, state, count, inStore } = setup();
    const acme = state();
    const r1 = count(acme, 'acme', 'r1', ['200']);
    const before = accountSeries(acme);
    count(acme, 'acme', 'r1', ['200', '302']);
    expect(accountSeries(acme)).toBe(inStore('acme'));
    expect(accountSeries(acme)).toBeGreaterThan(before);
    for (const s of ['edge', 'origin'] as const) sides.deleteGauges(f[s], r1[s], r1.base);
    f.resourceInfo!.delete(r1.info!);
    r1.info = undefined;
    expect(accountSeries(acme)).toBe(inStore('acme'));
  });
});
