/**
 * Sharding end to end (docs/operations.md, "Sharding"): three real exporters, configured as shards 0, 1 and 2 of the
 * same six accounts and pointed at one simulator, each poll only the accounts rendezvous hashing gives them, and
 * together every account exactly once. The environment (SHARD / SHARDS, as a StatefulSet passes them) picks the
 * same share as the file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { loadConfig } from '../../src/config/index.js';
import { Exporter } from '../../src/exporter/exporter.js';
import { silentLogger } from '../../src/log.js';
import { accountsForShard, shardOf } from '../../src/sharding.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { demoWorld } from '../../src/simulator/world.js';
import type { Scrape } from '../helpers/exposition.js';
import { answeredWindows, cursorOf, expectExact, expectTiles, reader } from '../helpers/ground-truth.js';
import { configFrom, type Stack, startStack, waitFor } from '../helpers/stack.js';

const SHARDS = 3;
/** Chosen so that rendezvous hashing gives each of 3 shards two of them (checked below, not assumed). */
const NAMES = ['demo', 'acme', 'globex', 'initech', 'umbrella', 'wayne'] as const;
const LOOKBACK = 30 * MINUTE;
const WINDOW = 5 * MINUTE;

/** Six accounts sharing demo's token: demo and acme as in the demo world, the others copies of acme's. */
function world(): SimAccount[] {
  const [demo, acme] = demoWorld() as [SimAccount, SimAccount];
  const copies = NAMES.slice(2).map((name, i) => ({
    ...acme,
    name,
    resources: acme.resources.map((r, j) => ({
      id: String(3001 + 100 * i + j),
      name: r.name,
      cname: r.cname.replace('acme', name),
    })),
  }));
  return [demo, acme, ...copies].map((a) => ({ ...a, token: 'demo-token' }));
}

const accountList = () => NAMES.map((name) => ({ name }));
const owned = (shard: number) => accountsForShard(accountList(), shard, SHARDS).map((a) => a.name);

/** Every `account` label value anywhere on /metrics. */
function exposedAccounts(scrape: Scrape): Set<string> {
  return new Set(scrape.samples.map((s) => s.labels.account).filter((a): a is string => a !== undefined));
}

const sorted = (names: Iterable<string>) => [...names].sort();

let sim: Simulator | undefined;
let stacks: Stack[] = [];
afterEach(async () => {
  await Promise.allSettled(stacks.map((s) => s.stop()));
  stacks = [];
  await sim?.close();
  sim = undefined;
});

describe('sharding across real exporters', () => {
  it('the fixture splits six accounts two per shard', () => {
    expect(NAMES.map((n) => shardOf(n, SHARDS)).sort()).toEqual([0, 0, 1, 1, 2, 2]);
  });

  it('three shards poll only their own accounts and together every account exactly once', async () => {
    sim = await startSimulator({ seed: 7, slowMs: 300, accounts: world() });
    const simulator = sim;
    const firstBefore = Math.floor((Date.now() - LOOKBACK) / MINUTE) * MINUTE;
    for (let shard = 0; shard < SHARDS; shard++) {
      stacks.push(
        await startStack({
          simulator,
          config: {
            metrics: { lookback: '30m', delay: '0m', window: '5m' },
            sharding: { shard, shards: SHARDS },
            accounts: accountList(),
          },
        }),
      );
    }
    const firstAfter = Math.floor((Date.now() - LOOKBACK) / MINUTE) * MINUTE;

    // Each exporter's own accounts caught up: the cursor within one window of now.
    const scrapes: Scrape[] = [];
    await waitFor(
      async () => {
        scrapes.length = 0;
        for (const s of stacks) scrapes.push(await s.scrape());
        return scrapes.every((scrape, shard) =>
          owned(shard).every((a) => cursorOf(scrape, a) >= firstBefore + LOOKBACK - WINDOW),
        );
      },
      10_000,
      'every shard caught up on its accounts',
    );

    // (a) Each exporter polls and exposes exactly its share; the shares partition the six accounts.
    const shares: string[][] = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      const scrape = scrapes[shard]!;
      const mine = owned(shard);
      shares.push(mine);
      expect(mine.length, `shard ${shard} owns some accounts`).toBeGreaterThan(0);
      expect(sorted(stacks[shard]!.exporter.accounts), `shard ${shard}: exporter.accounts`).toEqual(
        sorted(mine),
      );
      const windowEnds = scrape.all('cdn_metrics_window_end_timestamp_seconds').map((s) => s.labels.account!);
      expect(sorted(windowEnds), `shard ${shard}: window end gauges`).toEqual(sorted(mine));
      const up = scrape.all('cdn_up', { api: 'metrics' });
      expect(sorted(up.map((s) => s.labels.account!)), `shard ${shard}: cdn_up`).toEqual(sorted(mine));
      expect(
        up.every((s) => s.value === 1),
        `shard ${shard}: cdn_up all 1`,
      ).toBe(true);
      // No series of any kind about another shard's account.
      expect(sorted(exposedAccounts(scrape)), `shard ${shard}: every account label`).toEqual(sorted(mine));
    }
    expect(sorted(shares.flat())).toEqual(sorted(NAMES));
    expect(new Set(shares.flat()).size).toBe(NAMES.length);

    // (b) Per account, the simulator answered one walker's windows: they tile [first, cursor) once, no duplicate.
    const log = simulator.requestLog;
    expect(new Set(log.map((e) => e.api))).toEqual(new Set(['metrics']));
    expect(
      log.filter((e) => e.status !== 200 || e.fault !== undefined),
      'no failed request',
    ).toEqual([]);
    let windowsSeen = 0;
    for (let shard = 0; shard < SHARDS; shard++) {
      const scrape = scrapes[shard]!;
      for (const account of shares[shard]!) {
        const cursor = cursorOf(scrape, account);
        // Caught up (the next window is minutes away), so every window asked for is counted: none beyond the cursor.
        const windows = answeredWindows(simulator, account);
        const start = windows[0]?.[0] ?? Number.NaN;
        expect(start === firstBefore || start === firstAfter, `${account}: first window at lookback`).toBe(
          true,
        );
        expectTiles(windows, start, cursor, account);
        expect(scrape.value('cdn_metrics_windows_total', { account }), `${account}: windows counted`).toBe(
          windows.length,
        );
        // The owner's counters equal the simulator's truth: nothing double counted, nothing lost.
        expect(expectExact(simulator, reader(scrape), account, [[start, cursor]])).toBeGreaterThan(0);
        windowsSeen += windows.length;
      }
    }
    // Every metrics request the simulator saw is one of those windows: no exporter asked for a foreign account.
    expect(log.length, 'metrics requests in all').toBe(windowsSeen);
    expect(new Set(log.map((e) => e.query.account?.[0]))).toEqual(new Set(NAMES));
  }, 15_000);

  it('SHARD / SHARDS in the environment pick the same accounts as the sharding key', async () => {
    const fromFile = configFrom({
      api: { base_url: 'http://127.0.0.1:9', token: 'demo-token' },
      accounts: accountList(),
      sharding: { shard: 1, shards: SHARDS },
    });
    // The StatefulSet way: no file at all, everything from the environment.
    const fromEnv = loadConfig({
      env: {
        CDN_API_URL: 'http://127.0.0.1:9',
        CDN_API_TOKEN: 'demo-token',
        CDN_ACCOUNTS: NAMES.join(','),
        SHARD: '1',
        SHARDS: String(SHARDS),
      },
    });
    // The environment overrides the file's sharding key.
    const fileText =
      'api: {base_url: "http://127.0.0.1:9", token: demo-token}\nsharding: {shard: 0, shards: 1}\n';
    const overridden = loadConfig({
      file: 'shard.yml',
      env: { CDN_ACCOUNTS: NAMES.join(','), SHARD: '1', SHARDS: String(SHARDS) },
      readFile: () => fileText,
    });
    expect(fromEnv.sharding).toEqual({ shard: 1, shards: SHARDS });
    expect(overridden.sharding).toEqual({ shard: 1, shards: SHARDS });

    const exporters = [fromFile, fromEnv, overridden].map(
      (config) => new Exporter({ config, log: silentLogger, version: '0.0.0-test', defaultMetrics: false }),
    );
    try {
      for (const e of exporters) expect(sorted(e.accounts)).toEqual(sorted(owned(1)));
      expect(owned(1).length).toBeGreaterThan(0);
    } finally {
      await Promise.allSettled(exporters.map((e) => e.stop(100)));
    }
  });
});
