/**
 * `metrics.revisit`: late data. The simulator's minutes are complete only `lag` after they end; the exporter
 * reads each window `delay` after its end and once more `delay + revisit` after it. Driven on a FakeClock over
 * hours; checked against the simulator's final truth and its request log.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { TrafficPipeline } from '../../src/traffic/poller.js';
import type { Scrape } from '../helpers/exposition.js';
import { type Stack, startStack } from '../helpers/stack.js';
import { cursorOf, expectExact, metricsRequests, type Range, reader } from './failure-checks.js';

let stacks: Stack[] = [];
let sim: Simulator | undefined;
let dir: string | undefined;
afterEach(async () => {
  for (const s of stacks) await s.stop();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  stacks = [];
  sim = undefined;
  dir = undefined;
});

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);

function pipeline(stack: Stack): TrafficPipeline {
  return (stack.exporter as unknown as { traffic: TrafficPipeline }).traffic;
}

/** Real-time wait until nothing is in flight at the simulator and every answer handed over is counted. */
async function quiet(stack: Stack): Promise<void> {
  let calm = 0;
  let seen = -1;
  for (let i = 0; i < 5000 && calm < 3; i++) {
    await new Promise((r) => setTimeout(r, 2));
    const log = stack.sim.requestLog;
    const busy = log.length !== seen || log.slice(-20).some((e) => e.status === 0);
    seen = log.length;
    await pipeline(stack).idle();
    calm = busy ? 0 : calm + 1;
  }
}

/** Moves the fake clock to `until` in steps, letting the exporter finish what each step started. */
async function walk(clock: FakeClock, stack: Stack, until: number, stepMs = 30_000): Promise<void> {
  while (clock.now() < until) {
    await clock.advance(Math.min(stepMs, until - clock.now()));
    await quiet(stack);
  }
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

const LAG = { lagSeconds: 180 };
const CONFIG = { metrics: { lookback: '10m', delay: '1m', window: '5m', revisit: '5m' } };

describe('metrics.revisit', () => {
  it('ends every counter equal to the final truth over 6 hours of late data, each minute read at most twice', async () => {
    const clock = new FakeClock(T0);
    const stack = await startStack({ clock, sim: LAG, config: CONFIG });
    stacks.push(stack);
    const first = T0 - 10 * MINUTE;
    await quiet(stack);
    await walk(clock, stack, T0 + 6 * 60 * MINUTE);
    const before = await stack.scrape();
    // Late data was there to find: the first reads missed some, and the re-reads added it.
    expect(before.value('cdn_metrics_revisit_edge_requests_total', { account: 'demo' })).toBeGreaterThan(0);
    expect(revisions(before, 'up')).toBeGreaterThan(60);
    expect(revisions(before, 'down')).toBe(0);
    // From now on the CDN is on time: windows read from here on are complete at their first read, so once the
    // windows read before are re-read, every counted minute is final.
    stack.sim.setLag(0);
    await walk(clock, stack, clock.now() + 8 * MINUTE);
    const scrape = await stack.scrape();
    const cursor = cursorOf(scrape, 'demo');
    expect(cursor).toBeGreaterThanOrEqual(clock.now() - 7 * MINUTE);
    expect(expectExact(stack.sim, reader(scrape), 'demo', [[first, cursor]])).toBeGreaterThan(100);

    const reads = readsPerMinute(stack.sim, 'demo', first, cursor);
    const counts = [...reads.values()];
    expect(Math.max(...counts), 'no minute read three times').toBe(2);
    // The minutes of the first window were final at their first read (lookback): read once, never again.
    expect(reads.get(first)).toBe(1);
    // Every minute not final at its first read, in a window old enough, was read twice.
    const reread = [...reads].filter(([m]) => m >= T0 - 6 * MINUTE && m + 11 * MINUTE < clock.now());
    expect(reread.filter(([, n]) => n !== 2).map(([m, n]) => `${new Date(m).toISOString()} ${n}`)).toEqual(
      [],
    );
    // Re-reads change counters only: the windows counted are the first reads alone.
    expect(scrape.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(
      firstReads(stack.sim, 'demo').filter(([, e]) => e <= cursor).length,
    );
  }, 240_000);
});

export type { Range };
export { join, mkdtempSync, readFileSync, startSimulator, tmpdir };
