import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficApplier } from '../../src/traffic/applier.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const T = Date.UTC(2026, 0, 1);

function side(n: number): SideRecord {
  return {
    codes: new Map([['200', 10 * n]]),
    classes: new Map([['2xx', 10 * n]]),
    requests: 10 * n,
    bandwidthBitsPerSecond: 8 * n,
    requestTimeSeconds: new Map([['0_250k', 0.01]]),
    hitBytes: 5 * n,
    hitRatio: 0.5,
  };
}

function answer(account: string, ...ids: string[]): TrafficResponse {
  const records: TrafficRecord[] = ids.map((id) => ({
    resource: id,
    resourceName: `name-${id}`,
    cname: `${id}.cdn.example`,
    edge: side(1),
    origin: side(1),
  }));
  return { account, metrics: [], records, issues: [], unknownKeys: [] };
}

describe('TrafficMapping.removeAccount (an account discovery stopped polling)', () => {
  it('removes every series of that account, keeps the others, and starts afresh if it comes back', () => {
    const store = new SeriesStore();
    const p = new TrafficMapping(
      createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true }),
      {
        metrics: [],
        resources: [],
      },
    );
    const scrape = () => Scrape.of(store.render('text').toString());
    for (const account of ['gone', 'kept']) {
      p.initAccount(account, 10);
      p.apply(account, T, T + 300_000, answer(account, 'r1', 'r2'), T);
      p.skip(account, 5, 'rejected');
    }
    const before = scrape().samples;
    expect(before.filter((x) => x.labels.account === 'gone').length).toBeGreaterThan(10);

    p.removeAccount('gone');
    const after = scrape().samples;
    expect(after.filter((x) => x.labels.account === 'gone')).toEqual([]);
    expect(after.filter((x) => x.labels.account === 'kept')).toEqual(
      before.filter((x) => x.labels.account === 'kept'),
    );

    // Back in the inventory: its counters start from zero, not from what it had before.
    p.apply('gone', T + 600_000, T + 900_000, answer('gone', 'r1'), T + 600_000);
    const back = scrape();
    expect(back.value('cdn_edge_requests_total', { account: 'gone', resource: 'r1' })).toBe(10);
    expect(back.all('cdn_edge_requests_total', { account: 'gone', resource: 'r2' })).toEqual([]);
  });
});

describe('TrafficApplier.remove (the counted cursor leaves with the series)', () => {
  it('an exposition after the removal carries no cursor of that account, so no scrape saves windows it never showed', async () => {
    const store = new SeriesStore();
    const p = new TrafficMapping(
      createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false }),
      { metrics: [], resources: [] },
    );
    const applier = new TrafficApplier(p, { lock: new CountingLedger(store) });
    for (const account of ['gone', 'kept']) {
      p.initAccount(account, 10);
      applier.startAt(account, T);
      applier.apply(account, T, T + 300_000, answer(account, 'r1'), T, () => {});
    }
    await applier.idle();
    store.render('text');
    expect(store.countedIn('text')).toEqual(
      new Map([
        ['gone', T + 300_000],
        ['kept', T + 300_000],
      ]),
    );

    // A window of the account still queued is counted first, then the account goes with its cursor.
    applier.apply('gone', T + 300_000, T + 600_000, answer('gone', 'r1'), T, () => {});
    await applier.remove('gone', () => p.removeAccount('gone'));
    const scrape = Scrape.of(store.render('text').toString());
    expect(scrape.samples.filter((x) => x.labels.account === 'gone')).toEqual([]);
    expect(store.countedIn('text')).toEqual(new Map([['kept', T + 300_000]]));

    // Back again: it starts at the cursor it is given (the saved one), not at what it had counted before.
    p.initAccount('gone', 10);
    applier.startAt('gone', T + 300_000);
    store.render('text');
    expect(store.countedIn('text')?.get('gone')).toBe(T + 300_000);
  });
});
