/**
 * `metrics.revisit`: late data. The simulator's minutes are complete only `lag` after they end; the exporter
 * reads each window `delay` after its end and once more `delay + revisit` after it. Driven on a FakeClock over
 * hours; checked against the simulator's final truth and its request log.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { Simulator } from '../../src/simulator/server.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import {
  cursorOf,
  expectEveryFaultMet,
  expectExact,
  metricsRequests,
  mostInOneSecond,
  type Range,
  reader,
} from '../helpers/ground-truth.js';
import { perTest } from '../helpers/per-test.js';
import { quiet, type Stack } from '../helpers/stack.js';

const started = perTest();

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);

/** Moves the fake clock to `until` in steps, letting the exporter finish what each step started. */
async function walk(clock: FakeClock, stack: Stack, until: number, stepMs = 30_000): Promise<void> {
  while (clock.now() < until) {
    await clock.advance(Math.min(stepMs, until - clock.now()));
    await quiet(stack);
  }
}

/**
 * After the lag was set to 0 at `changeAt`: walks on until every minute first read before then, and not final at
 * that read (delay + revisit = 6 minutes), has been read a second time. From then on the counters hold only final
 * data. (The exporter's own pace in fake time varies with faults, so the test waits for the reads, not a time.)
 */
async function awaitRevisits(
  clock: FakeClock,
  stack: Stack,
  changeAt: number,
  stepMs = 30_000,
): Promise<void> {
  const open = () => {
    const first = new Map<number, { at: number; end: number }>();
    const reads = new Map<number, number>();
    for (const e of metricsRequests(stack.sim, 'demo')) {
      if (e.status !== 200 || (e.fault !== undefined && e.fault !== 'slow')) continue;
      for (let m = e.window[0]; m < e.window[1]; m += MINUTE) {
        if (!first.has(m)) first.set(m, { at: e.time, end: e.window[1] });
        reads.set(m, (reads.get(m) ?? 0) + 1);
      }
    }
    return [...first].filter(([m, f]) => f.at <= changeAt && f.at < f.end + 6 * MINUTE && reads.get(m)! < 2);
  };
  for (let i = 0; i < 400 && open().length > 0; i++) await walk(clock, stack, clock.now() + stepMs, stepMs);
  expect(open()).toEqual([]);
  // The last answer is in the simulator's log before the exporter has parsed and counted it.
  await walk(clock, stack, clock.now() + 1000, 1000);
}

/** For every minute of [from, to): the usable 200 answers (no fault) that covered it. */
function readsPerMinute(s: Simulator, account: string, from: number, to: number): Map<number, number> {
  const out = new Map<number, number>();
  for (let m = from; m < to; m += MINUTE) out.set(m, 0);
  for (const e of metricsRequests(s, account)) {
    if (e.status !== 200 || (e.fault !== undefined && e.fault !== 'slow')) continue;
    for (let m = e.window[0]; m < e.window[1]; m += MINUTE) if (out.has(m)) out.set(m, out.get(m)! + 1);
  }
  return out;
}

/** The usable answers, in arrival order, whose minutes none had been answered before: the first reads. */
function firstReads(s: Simulator, account: string): Range[] {
  const seen = new Set<number>();
  const out: Range[] = [];
  for (const e of metricsRequests(s, account)) {
    if (e.status !== 200 || (e.fault !== undefined && e.fault !== 'slow')) continue;
    const minutes: number[] = [];
    for (let m = e.window[0]; m < e.window[1]; m += MINUTE) minutes.push(m);
    if (minutes.every((m) => !seen.has(m))) out.push(e.window);
    for (const m of minutes) seen.add(m);
  }
  return out;
}

function revisions(scrape: Scrape, direction: string): number {
  return scrape.value('cdn_metrics_revisions_total', { account: 'demo', direction }) ?? 0;
}

/**
 * What Prometheus makes of two scrapes of a counter, the first process's last and the next one's: the increase
 * from 0, a drop being a reset and nothing else. (A restart continues the counters from the state file: no drop.)
 */
function prometheus(before: Scrape, after: Scrape) {
  return (name: string, labels: Record<string, string>): number | undefined => {
    const a = before.value(name, labels);
    const b = after.value(name, labels);
    if (a === undefined && b === undefined) return undefined;
    return (b ?? 0) >= (a ?? 0) ? (b ?? 0) : (a ?? 0) + (b ?? 0);
  };
}

const LAG = { lagSeconds: 180 };
const CONFIG = { metrics: { lookback: '10m', delay: '1m', window: '5m', revisit: '5m' } };

describe('metrics.revisit', () => {
  it('ends every counter equal to the final truth over 6 hours of late data, each minute read at most twice', async () => {
    const clock = new FakeClock(T0);
    // An hour of catch-up first: its minutes are final (delay + revisit old) when first read.
    const stack = await started.stack({
      clock,
      sim: LAG,
      config: { metrics: { ...CONFIG.metrics, lookback: '1h' } },
    });
    const first = T0 - 60 * MINUTE;
    await quiet(stack);
    await walk(clock, stack, T0 + 6 * 60 * MINUTE);
    const before = await stack.scrape();
    // Late data was there to find: the first reads missed some, and the revisits added it.
    expect(before.value('cdn_metrics_revisit_edge_requests_total', { account: 'demo' })).toBeGreaterThan(0);
    expect(revisions(before, 'up')).toBeGreaterThan(60);
    expect(revisions(before, 'down')).toBe(0);
    // From now on the CDN is on time: windows read from here on are complete at their first read, so once the
    // windows read before are revisited, every counted minute is final.
    stack.sim.setLag(0);
    await awaitRevisits(clock, stack, clock.now());
    const scrape = await stack.scrape();
    const cursor = cursorOf(scrape, 'demo');
    expect(cursor).toBeGreaterThanOrEqual(T0 + 6 * 60 * MINUTE - 7 * MINUTE);
    expect(expectExact(stack.sim, reader(scrape), 'demo', [[first, cursor]])).toBeGreaterThan(100);

    const reads = readsPerMinute(stack.sim, 'demo', first, cursor);
    const counts = [...reads.values()];
    expect(Math.max(...counts), 'no minute read three times').toBe(2);
    // The catch-up's minutes were final at their first read: read once, never again.
    const catchUp = [...reads].filter(([m]) => m < T0 - 6 * MINUTE);
    expect(catchUp.length).toBe(54);
    expect(catchUp.every(([, n]) => n === 1)).toBe(true);
    // Every minute not final at its first read, in a window old enough, was read twice.
    const revisited = [...reads].filter(([m]) => m >= T0 - 6 * MINUTE && m + 11 * MINUTE < clock.now());
    expect(revisited.filter(([, n]) => n !== 2).map(([m, n]) => `${new Date(m).toISOString()} ${n}`)).toEqual(
      [],
    );
    // The request budget: in steady state a revisit per first read at most (merged ones save some).
    const requests = metricsRequests(stack.sim, 'demo').filter((e) => e.window[1] <= cursor);
    const firsts = firstReads(stack.sim, 'demo').filter(([, e]) => e <= cursor).length;
    expect(requests.length).toBeLessThanOrEqual(2 * firsts);
    if (process.env.REVISIT_FIGURES) {
      // Steady state: the windows from T0 on (the hour before was catch-up).
      const steady = requests.filter((e) => e.window[0] >= T0).length;
      process.stdout.write(
        `revisit 5m, steady state: ${(steady / ((cursor - T0) / MINUTE)).toFixed(3)} metrics requests per minute\n`,
      );
    }
    // Revisits change counters only: the windows counted are the first reads alone.
    expect(scrape.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(
      firstReads(stack.sim, 'demo').filter(([, e]) => e <= cursor).length,
    );
  }, 240_000);

  it('stays exact with 30 % faults of every kind and a rate limit, never above the limit', async () => {
    const clock = new FakeClock(T0);
    const limit = 4;
    // 30 % in all, spread evenly: at 2 % a kind could miss a whole run when load reorders the requests.
    const faults = {
      '429': 0.0375,
      '500': 0.0375,
      '502': 0.0375,
      '503': 0.0375,
      '504': 0.0375,
      reset: 0.0375,
      slow: 0.0375,
      malformed: 0.0375,
    };
    const stack = await started.stack({
      clock,
      sim: { ...LAG, faults, rateLimit: limit },
      config: { metrics: CONFIG.metrics, api: { requests_per_second: limit, concurrency: 2 } },
    });
    const first = T0 - 10 * MINUTE;
    await quiet(stack);
    await walk(clock, stack, T0 + 2 * 60 * MINUTE, 10_000);
    stack.sim.setLag(0);
    await awaitRevisits(clock, stack, clock.now(), 10_000);
    const scrape = await stack.scrape();
    const cursor = cursorOf(scrape, 'demo');
    expect(cursor).toBeGreaterThan(T0 + 60 * MINUTE);
    expect(Math.max(...readsPerMinute(stack.sim, 'demo', first, cursor).values())).toBe(2);
    expectExact(stack.sim, reader(scrape), 'demo', [[first, cursor]]);
    expect(revisions(scrape, 'up')).toBeGreaterThan(0);
    const log = stack.sim.requestLog.filter((e) => e.api === 'metrics');
    expectEveryFaultMet(log, faults);
    // Revisits met faults too, and were retried until answered (every minute was read twice, above).
    const all = metricsRequests(stack.sim, 'demo');
    const revisited = all.filter(
      (e) =>
        e.fault !== undefined &&
        all.some(
          (x) =>
            x.time < e.time &&
            x.status === 200 &&
            x.fault === undefined &&
            x.window[0] <= e.window[0] &&
            e.window[0] < x.window[1],
        ),
    );
    expect(revisited.length).toBeGreaterThan(0);
    expect(log.filter((e) => e.fault === 'rate-limit')).toHaveLength(0);
    expect(mostInOneSecond(log.map((e) => e.time))).toBeLessThanOrEqual(limit);
  }, 240_000);

  it('keeps a counter when the CDN corrects a window downward, and counts the revision', async () => {
    const clock = new FakeClock(T0);
    const stack = await started.stack({ clock, sim: { lagSeconds: 0 }, config: CONFIG });
    await quiet(stack);
    // The window [T0 - 6m, T0 - 1m) is read at T0 - complete, as the lag is 0 - and is due again at T0 + 5m.
    await walk(clock, stack, T0 + MINUTE);
    const counted = await stack.scrape();
    const l = { account: 'demo', resource: '1003' };
    const requests = counted.value('cdn_edge_requests_total', l)!;
    expect(requests).toBeGreaterThan(0);
    stack.sim.correctDown('demo', T0 - 6 * MINUTE, T0 - MINUTE, 0.5);
    await walk(clock, stack, T0 + 6 * MINUTE);
    const after = await stack.scrape();
    expect(revisions(after, 'down')).toBe(1);
    expect(revisions(after, 'up')).toBe(0);
    // The counter kept its value (plus the next window's, counted since): it never went down.
    const next = stack.sim.truth('demo', '1003', T0 - MINUTE, cursorOf(after, 'demo'));
    expect(after.value('cdn_edge_requests_total', l)).toBe(requests + next.edge.requests);
    expect(after.value('cdn_metrics_revisit_edge_requests_total', { account: 'demo' })).toBe(0);
    // The revisit of [T0 - 6m, T0 - 1m) came after the first read of [T0 - 1m, T0 + 4m): the gauges still show
    // that newest window as it was read, not the revisited one.
    const cursor = cursorOf(after, 'demo');
    expect(cursor).toBe(T0 + 4 * MINUTE);
    const newest = stack.sim.truth('demo', '1003', T0 - MINUTE, cursor);
    expect(after.value('cdn_edge_bandwidth_bytes_per_second', l)).toBeCloseTo(newest.edge.bytes / 300, 6);
  }, 60_000);

  it('counts the minutes of a revisit the API rejects (422) as skipped for the reason revisit', async () => {
    const clock = new FakeClock(T0);
    const stack = await started.stack({ clock, sim: { lagSeconds: 0 }, config: CONFIG });
    await quiet(stack);
    await walk(clock, stack, T0 + MINUTE);
    // [T0 - 6m, T0 - 1m) was read at T0; from now on the API refuses it.
    stack.sim.rejectWindows(T0 - 6 * MINUTE, T0 - 5 * MINUTE);
    await walk(clock, stack, T0 + 12 * MINUTE);
    const scrape = await stack.scrape();
    expect(scrape.value('cdn_metrics_skipped_seconds_total', { account: 'demo', reason: 'revisit' })).toBe(
      300,
    );
    expect(scrape.value('cdn_metrics_skipped_seconds_total', { account: 'demo', reason: 'rejected' })).toBe(
      0,
    );
    const refused = metricsRequests(stack.sim, 'demo').filter((e) => e.status === 422);
    expect(refused.map((e) => e.window)).toEqual([[T0 - 6 * MINUTE, T0 - MINUTE]]);
    // It kept what its first read counted (complete, as the lag is 0): every counter is still the truth.
    expectExact(stack.sim, reader(scrape), 'demo', [[T0 - 10 * MINUTE, cursorOf(scrape, 'demo')]]);
  }, 60_000);

  it('keeps the revisits pending across a restart with state_file: the two runs add up to the final truth', async () => {
    const dir = started.folder('cdn-revisit-');
    const stateFile = join(dir, 'state.json');
    const clock = new FakeClock(T0);
    const sim = await started.simulator({ seed: 7, clock, slowMs: 300, ...LAG });
    const config = { ...CONFIG, state_file: stateFile };
    const one = await started.stack({ clock, simulator: sim, config });
    const first = T0 - 10 * MINUTE;
    await quiet(one);
    await walk(clock, one, T0 + 33 * MINUTE);
    await one.stopExporter();
    const scrape1 = await one.scrape();
    // The windows read in the last delay + revisit were saved with what was counted for them.
    const saved = JSON.parse(readFileSync(stateFile, 'utf8')) as {
      cursors: Record<string, string>;
      revisit: { version: number; accounts: Record<string, { windows: unknown[] }> };
    };
    expect(saved.revisit.version).toBe(1);
    expect(saved.revisit.accounts.demo!.windows.length).toBeGreaterThan(0);
    const mark = sim.requestLog.length;

    const two = await started.stack({ clock, simulator: sim, config });
    await quiet(two);
    sim.setLag(0);
    await awaitRevisits(clock, two, clock.now());
    const scrape2 = await two.scrape();
    const cursor = cursorOf(scrape2, 'demo');
    expect(expectExact(sim, prometheus(scrape1, scrape2), 'demo', [[first, cursor]])).toBeGreaterThan(100);
    // The second run revisited what the first left pending, and read nothing a third time.
    expect(Math.max(...readsPerMinute(sim, 'demo', first, cursor).values())).toBe(2);
    expect(sim.requestLog.length).toBeGreaterThan(mark);
  }, 120_000);

  it.each([
    ['a crash (the state file as it is at that moment, nothing saved after)', 'crash' as const],
    ['a stop', 'stop' as const],
  ])(
    'after %s with revisits pending and windows counted but not scraped, a restart adds up to the final truth',
    async (_what, end) => {
      const dir = started.folder('cdn-revisit-');
      const stateFile = join(dir, 'state.json');
      const crashImage = join(dir, 'crash.json');
      const clock = new FakeClock(T0);
      const sim = await started.simulator({ seed: 11, clock, slowMs: 300, ...LAG });
      const one = await started.stack({
        clock,
        simulator: sim,
        config: { ...CONFIG, state_file: stateFile },
      });
      const first = T0 - 10 * MINUTE;
      await quiet(one);
      await walk(clock, one, T0 + 20 * MINUTE);
      // The last scrape Prometheus gets from the first run (its counters only grow within the run).
      const scrape1 = await one.scrape();
      const scraped = cursorOf(scrape1, 'demo');
      const scrapedAt = clock.now();
      // Windows read and revisited after it: counted, never scraped.
      await walk(clock, one, T0 + 26 * MINUTE);
      const after = metricsRequests(sim, 'demo').filter((e) => e.time >= scrapedAt);
      expect(
        after.some((e) => e.window[0] >= scraped),
        'first reads past the scraped cursor',
      ).toBe(true);
      expect(
        after.some((e) => e.window[1] <= scraped),
        'revisits of windows the scrape showed',
      ).toBe(true);
      if (end === 'crash') copyFileSync(stateFile, crashImage);
      await one.stopExporter();
      const saved = JSON.parse(readFileSync(end === 'crash' ? crashImage : stateFile, 'utf8')) as {
        cursors: Record<string, string>;
        revisit?: { accounts: Record<string, { windows: { start: string; end: string }[] }> };
      };
      // The state is a checkpoint at least as new as the scrape: its cursor, its counters' values, and no window
      // past that cursor pending a revisit.
      const savedCursor = Date.parse(saved.cursors.demo!);
      expect(savedCursor).toBeGreaterThanOrEqual(scraped);
      for (const w of saved.revisit?.accounts.demo?.windows ?? [])
        expect(Date.parse(w.end)).toBeLessThanOrEqual(savedCursor);

      const two = await started.stack({
        clock,
        simulator: sim,
        config: { ...CONFIG, state_file: end === 'crash' ? crashImage : stateFile },
      });
      await quiet(two);
      sim.setLag(0);
      await awaitRevisits(clock, two, clock.now());
      // On until the second run has counted past where the first stopped: how soon depends on what the crash
      // left pending, and on a busy machine on where the first run's last checkpoint fell.
      for (let i = 0; i < 40 && cursorOf(await two.scrape(), 'demo') <= T0 + 26 * MINUTE; i++)
        await walk(clock, two, clock.now() + 30_000);
      const scrape2 = await two.scrape();
      const cursor = cursorOf(scrape2, 'demo');
      expect(cursor).toBeGreaterThan(T0 + 26 * MINUTE);
      // Prometheus: the first run's last scraped values, then the second run's, which continue them.
      expect(expectExact(sim, prometheus(scrape1, scrape2), 'demo', [[first, cursor]])).toBeGreaterThan(100);
    },
    120_000,
  );

  it('with revisit 0 asks for exactly the windows it asked for before revisit existed', async () => {
    const logOf = async (config: Record<string, unknown>) => {
      const clock = new FakeClock(T0);
      const stack = await started.stack({ clock, sim: LAG, config });
      await quiet(stack);
      await walk(clock, stack, T0 + 60 * MINUTE);
      const out = stack.sim.requestLog.map((e) => `${e.time} ${e.path} ${JSON.stringify(e.query)}`);
      if (process.env.REVISIT_FIGURES) {
        const steady = metricsRequests(stack.sim, 'demo').filter((e) => e.window[0] >= T0).length;
        process.stdout.write(
          `revisit 0, steady state: ${(steady / 60).toFixed(3)} metrics requests per minute\n`,
        );
      }
      const scrape = await stack.scrape();
      expect(scrape.value('cdn_metrics_revisions_total', { account: 'demo', direction: 'up' })).toBe(
        undefined,
      );
      return out;
    };
    const metrics = { lookback: '10m', delay: '1m', window: '5m' };
    const without = await logOf({ metrics });
    const off = await logOf({ metrics: { ...metrics, revisit: '0m' } });
    expect(off).toEqual(without);
    expect(without.length).toBeGreaterThan(10);
  }, 60_000);
});
