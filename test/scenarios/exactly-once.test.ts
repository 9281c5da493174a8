/**
 * The numbers must be true: after catch-up every counter equals the simulator's ground truth for
 * [first window start, cursor), per resource and per code, with and without faults.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { ParsePool } from '../../src/offloop/pool.js';
import { demoWorld } from '../../src/simulator/world.js';
import type { Scrape } from '../helpers/exposition.js';
import {
  answeredWindows,
  cursorOf,
  expectEveryFaultMet,
  expectExact,
  expectTiles,
  mostInOneSecond,
  reader,
  walkStart,
} from '../helpers/ground-truth.js';
import { BUILT_WORKER, expectBuiltWorker } from '../helpers/parse-pools.js';
import { perTest } from '../helpers/per-test.js';
import { waitFor } from '../helpers/stack.js';

const started = perTest();

describe('exactly once', () => {
  it.each([
    ['parsed inline', {}, 0],
    // With minBytes 0 every answer goes to the built worker.
    ['parsed in the worker thread', { trafficParser: { minBytes: 0, workerUrl: BUILT_WORKER } }, 1],
  ])(
    'counts 6 hours of catch-up exactly, in windows that tile the range with no overlap and no gap (%s)',
    async (_how, exporter, workers) => {
      expectBuiltWorker();
      // The exporter starts its walk at the minute of its own start, 6 h back: a minute may turn between the
      // clock readings around its start, so the first window starts at one of the two.
      const startOf = (t: number) => Math.floor((t - 6 * 60 * MINUTE) / MINUTE) * MINUTE;
      const before = Date.now();
      const s = await started.stack({
        config: { metrics: { lookback: '6h', delay: '0m', window: '5m' } },
        exporter,
      });
      const latest = startOf(Date.now());
      await waitFor(
        async () => cursorOf(await s.scrape(), 'demo') >= latest + 6 * 60 * MINUTE - 5 * MINUTE,
        20_000,
        'catch-up',
      );
      const scrape = await s.scrape();
      const cursor = cursorOf(scrape, 'demo');
      const windows = answeredWindows(s.sim, 'demo', cursor);
      const first = windows[0]![0];
      expect([startOf(before), latest]).toContain(first);
      for (let i = 1; i < windows.length; i++) expect(windows[i]![0]).toBe(windows[i - 1]![1]);
      expect(windows.at(-1)![1]).toBe(cursor);
      // Catch-up asks for 10-minute windows.
      expect(windows.slice(0, 30).every(([a, b]) => b - a === 10 * MINUTE)).toBe(true);
      expect(scrape.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(windows.length);
      expect(expectExact(s.sim, reader(scrape), 'demo', [[first, cursor]])).toBeGreaterThan(5 * 40);
      expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(1);
      expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'metrics' })).toBe(0);
      // The answers really took the path the test names (a missing worker would fall back to inline parsing).
      expect((s.exporter as unknown as { parser: ParsePool }).parser.started).toBe(workers);
    },
  );

  it('stays exact with 30 % faults of every kind and a rate limit, never above the limit', async () => {
    const limit = 8;
    const faults = {
      '429': 0.04,
      '500': 0.04,
      '502': 0.04,
      '503': 0.04,
      '504': 0.04,
      reset: 0.04,
      slow: 0.02,
      malformed: 0.04,
    };
    const before = Date.now();
    const s = await started.stack({
      sim: { faults, rateLimit: limit },
      config: {
        api: { requests_per_second: limit, concurrency: 4 },
        metrics: { lookback: '6h', delay: '0m', window: '5m' },
      },
    });
    const after = Date.now();
    const latest = Math.floor((after - 6 * 60 * MINUTE) / MINUTE) * MINUTE;
    await waitFor(
      async () => cursorOf(await s.scrape(), 'demo') >= latest + 6 * 60 * MINUTE - 5 * MINUTE,
      60_000,
      'catch-up',
    );
    const first = walkStart(s.sim, 'demo', 6 * 60 * MINUTE, before, after);
    const scrape = await s.scrape();
    const cursor = cursorOf(scrape, 'demo');
    expectExact(s.sim, reader(scrape), 'demo', [[first, cursor]]);
    // The windows answered with a usable 200 tile [first, cursor): no overlap, no gap, despite the retries.
    expectTiles(answeredWindows(s.sim, 'demo', cursor), first, cursor);
    const log = s.sim.requestLog.filter((e) => e.api === 'metrics');
    // Every kind of fault was met and survived.
    expectEveryFaultMet(log, faults);
    // No one-second span holds more requests than the limit, so the limiter never had to refuse one.
    expect(mostInOneSecond(log.map((e) => e.time))).toBeLessThanOrEqual(limit);
    expect(log.filter((e) => e.fault === 'rate-limit')).toHaveLength(0);
    // 429s were counted by code; failures by code or as "error".
    expect(scrape.value('cdn_api_requests_total', { api: 'metrics', code: '429' })).toBeGreaterThan(0);
    expect(scrape.value('cdn_api_requests_total', { api: 'metrics', code: 'error' })).toBeGreaterThan(0);
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'metrics' })).toBeGreaterThan(0);
  }, 90_000);

  it('keeps two accounts and all three APIs sharing one token under one budget, each account exact', async () => {
    // acme uses the demo account's token: one gate carries both accounts' windows, DVR streams and recordings.
    const accounts = demoWorld().map((a) => ({ ...a, token: 'demo-token' }));
    const limit = 6;
    const before = Date.now();
    const s = await started.stack({
      sim: { accounts, rateLimit: limit },
      config: {
        api: { requests_per_second: limit, concurrency: 2 },
        metrics: { lookback: '2h', delay: '0m', window: '5m' },
        dvr: { interval: '2s' },
        recordings: { interval: '2s' },
        accounts: [
          { name: 'demo', dvr_streams: ['live/main', 'sport/4k'], recordings: true },
          { name: 'acme', dvr_streams: ['tv/channel1'], recordings: true },
        ],
      },
    });
    const after = Date.now();
    const latest = Math.floor((after - 2 * 60 * MINUTE) / MINUTE) * MINUTE;
    const caughtUp = (scrape: Scrape) =>
      ['demo', 'acme'].every((a) => cursorOf(scrape, a) >= latest + 2 * 60 * MINUTE - 5 * MINUTE);
    await waitFor(async () => caughtUp(await s.scrape()), 30_000, 'both accounts caught up');
    const scrape = await s.scrape();
    for (const account of ['demo', 'acme']) {
      const first = walkStart(s.sim, account, 2 * 60 * MINUTE, before, after);
      expect(scrape.value('cdn_up', { api: 'dvr-net', account }), account).toBe(1);
      expect(scrape.value('cdn_up', { api: 'recorder-cloud', account }), account).toBe(1);
      expectExact(s.sim, reader(scrape), account, [[first, cursorOf(scrape, account)]]);
    }
    const log = s.sim.requestLog;
    expect(new Set(log.map((e) => e.api))).toEqual(new Set(['metrics', 'dvr-net', 'recorder-cloud']));
    expect(mostInOneSecond(log.map((e) => e.time))).toBeLessThanOrEqual(limit);
    expect(log.filter((e) => e.status === 429)).toHaveLength(0);
  }, 60_000);
});
