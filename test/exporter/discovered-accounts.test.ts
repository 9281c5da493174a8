/**
 * accounts_discovery's loop (src/exporter/discovered-accounts.ts) against the simulator's inventory on loopback, on
 * a fake clock, with a recording stand-in for the account pollers (the narrow `pollers` it is given): which accounts
 * it starts, with what configuration; the listed accounts it never touches; the shard it keeps to; the
 * `max_accounts` cap, refused by name order, counted and logged once per change; the accounts that leave the
 * inventory stopped; and the loop's end at the exporter's stop. The whole stack's story is
 * test/scenarios/discovery.test.ts.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuthMetrics } from '../../src/auth/metrics.js';
import { MINUTE } from '../../src/clock.js';
import type { AccountConfig, TokenSource } from '../../src/config/index.js';
import { tokenSources } from '../../src/config/token.js';
import { startDiscovery } from '../../src/exporter/discovered-accounts.js';
import { createAgent } from '../../src/http/request.js';
import { type Logger, silentLogger } from '../../src/log.js';
import { createUpstream, type Upstream } from '../../src/poll/upstream.js';
import { shardOf } from '../../src/sharding.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { configFrom, trafficAccount, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0);
const TOKEN = 'inventory-token';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A simulator whose inventory lists `names` for one token. */
async function inventoryOf(names: readonly string[], clock: FakeClock): Promise<Simulator> {
  const sim = await startSimulator({
    seed: 3,
    clock,
    accounts: names.map((n) => ({ ...trafficAccount(n), token: TOKEN })),
  });
  cleanups.push(() => sim.close());
  return sim;
}

async function discover(
  sim: Simulator,
  clock: FakeClock,
  file: Record<string, unknown>,
  log: Logger = silentLogger,
) {
  const config = configFrom({
    api: { base_url: sim.url, token: TOKEN },
    accounts_discovery: { enabled: true, interval: '1m', ...(file.accounts_discovery as object) },
    ...(file.accounts ? { accounts: file.accounts } : {}),
    ...(file.sharding ? { sharding: file.sharding } : {}),
  });
  const registry = new Registry();
  const auth = createAuthMetrics(registry);
  const agent = createAgent();
  const stop = new AbortController();
  const upstreams = new Map<TokenSource, Upstream>();
  const upstreamFor = (token: TokenSource) => {
    let up = upstreams.get(token);
    if (!up) {
      up = createUpstream(token, {
        baseUrl: sim.url,
        requestsPerSecond: 20,
        concurrency: 2,
        clock,
        agent,
        onRequest: () => {},
        signal: stop.signal,
      });
      upstreams.set(token, up);
    }
    return up;
  };
  const polled = new Map<string, AccountConfig>();
  const events: string[] = [];
  let forgetAways = 0;
  const parseErrors: number[] = [];
  const loop = startDiscovery({
    config,
    clock,
    log,
    tokens: tokenSources(config),
    upstreamFor,
    auth: () => auth,
    self: { parseErrors: { inc: (_l: unknown, n?: number) => parseErrors.push(n ?? 1) } as never },
    pollers: {
      start: (account, _up, discovered) => {
        expect(discovered).toBe(true);
        polled.set(account.name, account);
        events.push(`start ${account.name}`);
      },
      stop: async (name) => {
        polled.delete(name);
        events.push(`stop ${name}`);
      },
      forgetAway: () => {
        forgetAways++;
      },
    },
    signal: stop.signal,
    sliceMs: 0,
  });
  cleanups.push(async () => {
    stop.abort();
    await loop;
    await agent.close();
  });
  const listings = () => sim.requestLog.filter((e) => e.api === 'inventory' && e.status !== 0).length;
  /** Waits (real time, bounded) for the next listing to be answered and applied; the clock moves to the next round. */
  const round = async (n = listings() + 1) => {
    await waitFor(async () => listings() >= n && forgetAways >= n, 30_000, `discovery round ${n}`);
  };
  const next = async () => {
    const n = listings() + 1;
    await clock.advance(MINUTE);
    await round(n);
  };
  return { config, registry, polled, events, round, next, stop, loop, forgetAways: () => forgetAways };
}

const refusedGauge = async (registry: Registry) =>
  Object.fromEntries(
    (await registry.getSingleMetric('cdn_discovered_accounts_refused')!.get()).values.map((v) => [
      v.labels.reason,
      v.value,
    ]),
  );

describe('accounts_discovery', () => {
  it('starts every listed-by-the-inventory account not in the configuration, with the discovery settings', async () => {
    const clock = new FakeClock(T0);
    const sim = await inventoryOf(['prod-a', 'prod-b', 'listed'], clock);
    const d = await discover(sim, clock, {
      accounts: [{ name: 'listed' }],
      accounts_discovery: { recordings: true, commit: { monthly_transfer: '2TB' } },
    });
    await d.round(1);
    expect([...d.polled.keys()].sort()).toEqual(['prod-a', 'prod-b']);
    expect(d.polled.get('prod-a')).toEqual({
      name: 'prod-a',
      dvrStreams: [],
      recordings: true,
      commit: { monthlyTransferBytes: 2_000_000_000_000 },
    });
    // The next round finds the same: nothing started again, nothing stopped.
    await d.next();
    expect(d.events.sort()).toEqual(['start prod-a', 'start prod-b']);
  });

  it('stops an account the inventory no longer lists or marks inactive; never a listed one', async () => {
    const clock = new FakeClock(T0);
    const sim = await inventoryOf(['prod-a', 'prod-b', 'listed'], clock);
    const d = await discover(sim, clock, { accounts: [{ name: 'listed' }] });
    await d.round(1);
    sim.removeAccount('prod-a');
    sim.setAccountStatus('prod-b', 'inactive');
    sim.removeAccount('listed');
    await d.next();
    expect(d.events.filter((e) => e.startsWith('stop')).sort()).toEqual(['stop prod-a', 'stop prod-b']);
    expect(d.polled.size).toBe(0);
    // Back in the inventory: started again.
    sim.setAccountStatus('prod-b', 'active');
    await d.next();
    expect([...d.polled.keys()]).toEqual(['prod-b']);
    // What was kept for stopped accounts is looked at every round.
    expect(d.forgetAways()).toBeGreaterThanOrEqual(3);
  });

  it("polls only the accounts of this replica's shard", async () => {
    const clock = new FakeClock(T0);
    const names = Array.from({ length: 12 }, (_, i) => `acct-${i}`);
    const sim = await inventoryOf(names, clock);
    const d = await discover(sim, clock, { sharding: { shard: 1, shards: 3 } });
    await d.round(1);
    const mine = names.filter((n) => shardOf(n, 3) === 1);
    expect(mine.length).toBeGreaterThan(0);
    expect([...d.polled.keys()].sort()).toEqual(mine.sort());
  });

  it('keeps the first max_accounts by name, refuses the rest, counts them, and logs once per change', async () => {
    const clock = new FakeClock(T0);
    const { log, lines } = captureLog();
    const sim = await inventoryOf(['d', 'b', 'e', 'a', 'c'], clock);
    const d = await discover(sim, clock, { accounts_discovery: { max_accounts: 3 } }, log);
    await d.round(1);
    expect([...d.polled.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect((await refusedGauge(d.registry)).max_accounts).toBe(2);
    await d.next();
    const warned = () => lines.filter((l) => l.includes('accounts_discovery.max_accounts'));
    expect(warned()).toHaveLength(1);
    expect(JSON.parse(warned()[0]!)).toMatchObject({ max_accounts: 3, refused: 2, examples: ['d', 'e'] });

    // One leaves: the first refused one takes its place, the count and the log follow.
    sim.removeAccount('a');
    await d.next();
    expect([...d.polled.keys()].sort()).toEqual(['b', 'c', 'd']);
    expect((await refusedGauge(d.registry)).max_accounts).toBe(1);
    expect(warned()).toHaveLength(2);
  });

  it("ends its loop at the exporter's stop", async () => {
    const clock = new FakeClock(T0);
    const sim = await inventoryOf(['prod-a'], clock);
    const d = await discover(sim, clock, {});
    await d.round(1);
    d.stop.abort();
    await d.loop;
    const asked = sim.requestLog.length;
    await clock.advance(10 * MINUTE);
    expect(sim.requestLog.length).toBe(asked);
  });
});
