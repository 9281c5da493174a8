/**
 * Account discovery end to end: the simulator's inventory lists accounts for the exporter's login; accounts added,
 * deactivated and removed at the simulator appear on and leave /metrics within one discovery interval; include and
 * exclude filter; an explicitly listed account keeps its own settings; two shards split the accounts exactly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { shardOf } from '../../src/sharding.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { expectExact, reader, walkers } from '../helpers/ground-truth.js';
import { runClock, type Stack, scrapeNow, startStack, trafficAccount } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const INTERVAL = 2 * MINUTE;

let stacks: Stack[] = [];
afterEach(async () => {
  for (const s of stacks) await s.stop();
  stacks = [];
});

const upAccounts = (sc: Scrape) =>
  sc
    .all('cdn_up')
    .filter((x) => x.labels.api === 'metrics')
    .map((x) => x.labels.account!)
    .sort();

function discoveryConfig(extra: Record<string, unknown> = {}) {
  return {
    api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
    metrics: { lookback: '30m', delay: '0m', window: '5m' },
    accounts_discovery: { enabled: true, interval: '2m', ...extra },
    accounts: [],
  };
}

describe('account discovery', () => {
  it('polls active accounts that match; follows additions, deactivations and removals within one interval', async () => {
    const clock = new FakeClock(T0);
    const world = [...demoWorld(), trafficAccount('prod-a'), trafficAccount('test-b')];
    const s = await startStack({
      clock,
      sim: { accounts: world },
      config: {
        ...discoveryConfig({ include: 'prod-.*|demo|acme', exclude: 'acme' }),
        // Listed explicitly: kept with its own settings (DVR) whatever the inventory says.
        accounts: [{ name: 'demo', dvr_streams: ['live/main'] }],
      },
    });
    stacks.push(s);
    await runClock(clock, 10_000, stacks);
    let sc = await scrapeNow(s);
    expect(upAccounts(sc)).toEqual(['demo', 'prod-a']);
    expect(sc.value('cdn_discovered_accounts', { login: DEMO_USER })).toBe(2);
    expect(sc.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    const page = await (await fetch(`${s.url}/`)).text();
    expect(page).toMatch(/prod-a <span class="none">\(discovered\)<\/span>/);

    s.sim.addAccount(trafficAccount('prod-c'));
    await runClock(clock, INTERVAL, stacks);
    sc = await scrapeNow(s);
    expect(upAccounts(sc)).toEqual(['demo', 'prod-a', 'prod-c']);
    // A new account starts at now - lookback.
    const cWalker = walkers(s.exporter).get('prod-c')!;
    await runClock(clock, 5000, stacks);
    sc = await scrapeNow(s);
    const cursor = cWalker.current.cursor;
    expect(cursor).toBeGreaterThan(floorMinute(T0 - 30 * MINUTE));
    expectExact(s.sim, reader(sc), 'prod-c', [[floorMinute(T0 + INTERVAL + 10_000 - 30 * MINUTE), cursor]]);

    s.sim.setAccountStatus('prod-a', 'inactive');
    s.sim.removeAccount('prod-c');
    await runClock(clock, INTERVAL, stacks);
    sc = await scrapeNow(s);
    expect(upAccounts(sc)).toEqual(['demo']);
    expect(sc.all('cdn_edge_requests_total').filter((x) => x.labels.account !== 'demo')).toEqual([]);
    expect(sc.value('cdn_discovered_accounts', { login: DEMO_USER })).toBe(1);

    // A failed listing keeps the last known list.
    s.sim.setAccountStatus('prod-a', 'active');
    await runClock(clock, INTERVAL, stacks);
    expect(upAccounts(await scrapeNow(s))).toEqual(['demo', 'prod-a']);
    s.sim.failInventory(503);
    s.sim.removeAccount('prod-a');
    await runClock(clock, INTERVAL, stacks);
    sc = await scrapeNow(s);
    s.sim.failInventory(undefined);
    expect(sc.all('cdn_up').some((x) => x.labels.account === 'prod-a')).toBe(true);
    expect(sc.value('cdn_api_requests_total', { api: 'inventory', code: '503' })).toBeGreaterThan(0);
  }, 60_000);

  it('two shards split the discovered accounts exactly, together once', async () => {
    const clock = new FakeClock(T0);
    const names = Array.from({ length: 12 }, (_, i) => `acct-${i}`);
    const world = names.map(trafficAccount);
    const users = [{ username: DEMO_USER, password: DEMO_PASSWORD, accounts: [...names] }];
    const first = await startStack({
      clock,
      sim: { accounts: world, users },
      config: { ...discoveryConfig(), sharding: { shard: 0, shards: 2 } },
    });
    stacks.push(first);
    const second = await startStack({
      clock,
      simulator: first.sim,
      config: { ...discoveryConfig(), sharding: { shard: 1, shards: 2 } },
    });
    stacks.push(second);
    await runClock(clock, 10_000, stacks);
    const a = upAccounts(await scrapeNow(first));
    const b = upAccounts(await scrapeNow(second));
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    expect([...a, ...b].sort()).toEqual([...names].sort());
    expect(a.every((n) => shardOf(n, 2) === 0)).toBe(true);
    expect(b.every((n) => shardOf(n, 2) === 1)).toBe(true);
  }, 60_000);
});
