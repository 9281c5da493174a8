/**
 * Each account's run (src/exporter/account-pollers.ts): its traffic poller and one poller per API of the table it
 * asks for, started and stopped as one, against the simulator on loopback on a fake clock, with the real pipeline,
 * store, API table and status board, and recording fakes of the narrow parts it reports to (cursor book, commits,
 * page history, settled writer). What a user sees: one status row per API the account asks for; an account stopped
 * alone leaves no series, no row, no commit and no history, and its counters are kept with their cursor; the
 * exporter's stop ends every loop; refusals by the caps are counted every time and logged once per change.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { AccountConfig, Config } from '../../src/config/index.js';
import { InlineToken } from '../../src/config/token.js';
import { AccountPollers, type SettledSink } from '../../src/exporter/account-pollers.js';
import { APIS, openApis } from '../../src/exporter/api-table.js';
import { trafficOptions } from '../../src/exporter/exporter.js';
import { StatusBoard } from '../../src/exporter/status-board.js';
import { createAgent } from '../../src/http/request.js';
import { type Logger, silentLogger } from '../../src/log.js';
import { createUpstream, type Upstream } from '../../src/poll/upstream.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { TrafficPipeline } from '../../src/traffic/pipeline.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { configFrom, trafficAccount, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0);
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** What the account pollers told the narrow parts around them, in order. */
interface Told {
  left: [string, number | undefined][];
  forgotten: string[];
  commits: string[];
  history: string[];
  settled: string[];
}

async function setUp(file: Record<string, unknown>, o: { log?: Logger; world?: SimAccount[] } = {}) {
  const log = o.log ?? silentLogger;
  const clock = new FakeClock(T0);
  const sim: Simulator = await startSimulator({
    seed: 9,
    clock,
    lagSeconds: 0,
    ...(o.world ? { accounts: o.world } : {}),
  });
  const config: Config = configFrom({
    api: { base_url: sim.url, token: 'demo-token' },
    metrics: { lookback: '10m', delay: '0m', window: '5m' },
    ...file,
  });
  const store = new SeriesStore({ clock, refreshLog: silentLogger });
  const limits = { ...config.limits, storeSize: () => store.size };
  // As the exporter opens it (Exporter.openTraffic), without a state file.
  const traffic = new TrafficPipeline(
    store,
    trafficOptions(config, limits.storeSize),
    new CountingLedger(store),
  );
  const apis = openApis({ store, limits });
  const registry = new Registry();
  const self = createSelfMetrics(registry, { version: 'test', apis: APIS, defaultMetrics: false });
  const board = new StatusBoard(self, clock, 'test');
  board.markStarted();
  const agent = createAgent();
  const stopAll = new AbortController();
  // One upstream per token, as the exporter has (src/exporter/upstreams.ts).
  const upstreams = new Map<string, Upstream>();
  const upstreamOf = (account: AccountConfig): Upstream => {
    const token = account.token ?? 'demo-token';
    let up = upstreams.get(token);
    if (!up) {
      up = createUpstream(new InlineToken(token), {
        baseUrl: sim.url,
        requestsPerSecond: 50,
        concurrency: 4,
        clock,
        agent,
        onRequest: () => {},
        signal: stopAll.signal,
      });
      upstreams.set(token, up);
    }
    return up;
  };
  const told: Told = { left: [], forgotten: [], commits: [], history: [], settled: [] };
  const settled: SettledSink = {
    attach: (account, _read, walkFrom) => told.settled.push(`attach ${account} ${walkFrom}`),
    detach: (account) => told.settled.push(`detach ${account}`),
    forget: (account) => told.settled.push(`forget ${account}`),
    settled: (account, start, end) => told.settled.push(`settled ${account} ${start} ${end}`),
    skipped: () => {},
  };
  const loops: Promise<void>[] = [];
  const pollers = new AccountPollers({
    traffic,
    apis,
    board,
    cursors: {
      get: () => undefined,
      leave: (name, cursor) => told.left.push([name, cursor]),
      touch: () => {},
      forget: (name) => told.forgotten.push(name),
    },
    clamped: new Map(),
    clock,
    log,
    config,
    self,
    commits: {
      set: (name, commit) => told.commits.push(`set ${name} ${JSON.stringify(commit ?? null)}`),
      remove: (name) => told.commits.push(`remove ${name}`),
    },
    history: {
      record: (name) => told.history.push(`record ${name}`),
      settle: (name) => told.history.push(`settle ${name}`),
      remove: (name) => told.history.push(`remove ${name}`),
    },
    settled,
    audit: { check: () => {} },
    signal: stopAll.signal,
    track: (loop) => loops.push(loop),
    sliceMs: 0,
  });
  cleanups.push(async () => {
    stopAll.abort();
    await Promise.allSettled(loops);
    await agent.close();
    await sim.close();
  });
  /** Starts the configured account `name` through its token's upstream. */
  const start = (name: string) => {
    const account = config.accounts.find((a) => a.name === name)!;
    pollers.start(account, upstreamOf(account), false);
  };
  /** Moves the clock 15 s at a time (real time bounded) until `done`, with what the pollers handed over counted. */
  const runUntil = (done: () => boolean, what: string) =>
    waitFor(
      async () => {
        await traffic.idle();
        if (done()) return true;
        await clock.advance(15_000);
        return false;
      },
      30_000,
      what,
    );
  const text = async () => {
    await store.refresh();
    return store.render('text').toString();
  };
  return {
    clock,
    sim,
    config,
    store,
    traffic,
    board,
    registry,
    pollers,
    told,
    loops,
    stopAll,
    start,
    runUntil,
    text,
  };
}

const rowsOf = (board: StatusBoard, name: string) =>
  board
    .status()
    .accounts.filter((r) => r.name === name)
    .map((r) => `${r.api} ${r.up ? 'up' : 'down'}`);

describe('AccountPollers', () => {
  it("starts the account's traffic poller and one poller per API it asks for, each with its row", async () => {
    const s = await setUp({
      accounts: [
        { name: 'demo', dvr_streams: ['live/main'], recordings: true, commit: { monthly_transfer: '50TB' } },
        { name: 'acme', token: 'acme-token' },
      ],
    });
    s.start('demo');
    s.start('acme');
    expect(s.pollers.size).toBe(2);
    await s.runUntil(
      () => [...rowsOf(s.board, 'demo'), ...rowsOf(s.board, 'acme')].every((r) => r.endsWith(' up')),
      'every row up',
    );
    expect(rowsOf(s.board, 'demo')).toEqual(['metrics up', 'dvr-net up', 'recorder-cloud up']);
    // An account that asks only for traffic has only its traffic row.
    expect(rowsOf(s.board, 'acme')).toEqual(['metrics up']);
    expect(s.told.commits).toEqual(['set demo {"monthlyTransferBytes":50000000000000}', 'set acme null']);
    // The settled writer is given each account's walk start: the lookback's first minute.
    expect(s.told.settled.slice(0, 2)).toEqual([
      `attach demo ${T0 - 10 * MINUTE}`,
      `attach acme ${T0 - 10 * MINUTE}`,
    ]);
    const metrics = await s.text();
    expect(metrics).toMatch(/^cdn_dvr_\w+\{[^}]*account="demo"/m);
    expect(metrics).toMatch(/^cdn_recording\w*\{[^}]*account="demo"/m);
    expect(metrics).not.toMatch(/^cdn_(dvr|recording)\w*\{[^}]*account="acme"/m);
  });

  it('stops one account alone: its series, rows, commit and history go; its counters are kept with their cursor', async () => {
    const s = await setUp({
      accounts: [
        { name: 'demo', dvr_streams: ['live/main'], recordings: true, commit: { monthly_transfer: '1TB' } },
        { name: 'acme', token: 'acme-token' },
      ],
    });
    s.start('demo');
    s.start('acme');
    await s.runUntil(
      () =>
        s.pollers.walkers.every((w) => w.current.cursor >= T0) &&
        rowsOf(s.board, 'demo').every((r) => r.endsWith(' up')),
      'both walks caught up, every row of demo up',
    );
    await s.pollers.stop('demo');

    expect(s.pollers.size).toBe(1);
    expect(rowsOf(s.board, 'demo')).toEqual([]);
    expect(rowsOf(s.board, 'acme')).toEqual(['metrics up']);
    const metrics = await s.text();
    expect(metrics).not.toMatch(/account="demo"/);
    expect(metrics).toMatch(/account="acme"/);
    expect(s.told.commits.at(-1)).toBe('remove demo');
    expect(s.told.history.at(-1)).toBe('remove demo');
    expect(s.told.settled.at(-1)).toBe('detach demo');
    // The cursor its kept counters go with: the end of the last window it counted.
    expect(s.told.left).toEqual([['demo', T0]]);
    expect(JSON.stringify(s.traffic.savedCounters())).toContain('demo');
    // Stopping it again, or an account never started, does nothing.
    await s.pollers.stop('demo');
    await s.pollers.stop('nobody');
    expect(s.told.left).toHaveLength(1);

    // Away longer than metrics.counter_retention (a day by default): its cursor and its settled totals go too.
    s.clock.set(s.clock.now() + s.config.metrics.counterRetentionMs + MINUTE);
    s.pollers.forgetAway();
    expect(s.told.forgotten).toEqual(['demo']);
    expect(s.told.settled.at(-1)).toBe('forget demo');
  });

  it("ends every account's loops when the exporter stops", async () => {
    const s = await setUp({
      accounts: [
        { name: 'demo', dvr_streams: ['live/main'], recordings: true },
        { name: 'acme', token: 'acme-token' },
      ],
    });
    s.start('demo');
    s.start('acme');
    await s.runUntil(() => s.pollers.walkers.every((w) => w.current.tried), 'first windows tried');
    // Four pollers' loops (demo: traffic, DVR, recordings; acme: traffic) parked on the clock.
    expect(s.loops).toHaveLength(4);
    s.stopAll.abort();
    // Every loop ends (a poll loop never rejects), and no request is sent after, however far the clock goes.
    await Promise.all(s.loops);
    const sent = s.sim.requestLog.length;
    await s.clock.advance(30 * MINUTE);
    expect(s.sim.requestLog.length).toBe(sent);
  });

  it('counts what the caps refuse in every window, and logs it once while the reasons stay the same', async () => {
    const { log, lines } = captureLog();
    // A resource whose id is longer than limits.max_label_length (at its floor, 64 bytes): refused in every window.
    const longId = 'r'.repeat(80);
    const big: SimAccount = {
      ...trafficAccount('big'),
      resources: [
        { id: '5001', name: 'site', cname: 'site.cdn.big.example' },
        { id: longId, name: 'long', cname: 'long.cdn.big.example' },
      ],
    };
    const s = await setUp(
      { accounts: [{ name: 'big', token: 'big-token' }], limits: { max_label_length: 64 } },
      { log, world: [big] },
    );
    s.start('big');
    const refused = async () =>
      (await s.registry.getSingleMetric('cdn_series_refused_total')!.get()).values.map(
        (v) => [v.labels.account, v.labels.reason, v.value] as const,
      );
    // The lookback's two windows, then two more: each refuses the long id's series again, and is counted.
    await s.runUntil(() => s.pollers.walkers[0]!.current.cursor >= T0, 'the lookback counted');
    const early = await refused();
    expect(early.map(([account, reason]) => [account, reason])).toEqual([['big', 'label_too_long']]);
    await s.runUntil(
      () => s.pollers.walkers[0]!.current.cursor >= T0 + 10 * MINUTE,
      'two more windows counted',
    );
    const late = await refused();
    expect(late[0]![2]).toBeGreaterThan(early[0]![2]);
    expect(s.board.status().accounts[0]!.refused).toEqual({ label_too_long: expect.any(Number) });
    const warned = lines.filter((l) => l.includes('new series refused by limits'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!)).toMatchObject({
      account: 'big',
      api: 'metrics',
      reasons: ['label_too_long'],
    });
  });
});
