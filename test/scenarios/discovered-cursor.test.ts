/**
 * `state_file` with account discovery: an account stopped at run time keeps its counter values and, in the state
 * file, the cursor they go with (the end of what it had counted when it stopped, scraped or not). When it comes
 * back it resumes there and its counters continue, so Prometheus sees no reset it could miss.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { startSimulator } from '../../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import { DropIsReset } from '../helpers/crash-schedule.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { expectExact, savedCursor, walkers } from '../helpers/ground-truth.js';
import {
  runClock,
  type Stack,
  scrapeNow,
  startStack,
  stopAll,
  trafficAccount,
  waitFor,
} from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const INTERVAL = 10 * MINUTE;

let stacks: Stack[] = [];
let dir: string | undefined;
afterEach(async () => {
  await stopAll({ stacks, dir });
  stacks = [];
  dir = undefined;
});

/** A stack on a fake clock that discovers `prod-a` (10-minute rounds), with a state file; `metrics` added. */
async function discovering(prefix: string, metrics: Record<string, string> = {}) {
  dir = mkdtempSync(join(tmpdir(), prefix));
  const stateFile = join(dir, 'state.json');
  const clock = new FakeClock(T0);
  const s = await startStack({
    clock,
    sim: { accounts: [...demoWorld(), trafficAccount('prod-a')] },
    config: {
      api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
      metrics: { lookback: '30m', delay: '0m', window: '5m', ...metrics },
      accounts_discovery: { enabled: true, interval: '10m', include: 'prod-.*' },
      accounts: [],
      state_file: stateFile,
    },
  });
  stacks.push(s);
  return { s, clock, stateFile };
}

describe('state_file with a discovered account stopped and back', () => {
  it('keeps the cursor it had counted when it stopped, and the account resumes there', async () => {
    const { s, clock, stateFile } = await discovering('cdn-discovered-cursor-');
    await runClock(clock, 10_000, stacks);
    let sc = await scrapeNow(s);
    expect(sc.all('cdn_up').map((x) => x.labels.account)).toContain('prod-a');
    const seen = savedCursor(stateFile, 'prod-a')!;
    expect(seen).toBeGreaterThan(T0 - 30 * MINUTE);
    const walker = walkers(s.exporter).get('prod-a')!;

    // Deactivated: polled on, unscraped, until the next discovery round stops it and removes its series.
    s.sim.setAccountStatus('prod-a', 'inactive');
    await runClock(clock, INTERVAL, stacks);
    const counted = walker.current.cursor;
    expect(counted, 'windows were counted after the last scrape').toBeGreaterThan(seen);
    sc = await scrapeNow(s);
    expect(sc.all('cdn_edge_requests_total').filter((x) => x.labels.account === 'prod-a')).toEqual([]);
    await scrapeNow(s);
    expect(savedCursor(stateFile, 'prod-a')).toBe(counted);

    // Back: it asks for the windows after those it had counted, none again.
    const mark = s.sim.requestLog.length;
    s.sim.setAccountStatus('prod-a', 'active');
    await runClock(clock, INTERVAL, stacks);
    const again = s.sim.requestLog
      .slice(mark)
      .filter((e) => e.api === 'metrics' && e.status === 200 && e.query.account?.[0] === 'prod-a')
      .map((e) => [Date.parse(`${e.query.start![0]}Z`), Date.parse(`${e.query.end![0]}Z`)] as const);
    expect(again.length).toBeGreaterThan(0);
    expect(Math.min(...again.map(([start]) => start))).toBe(counted);
  }, 60_000);
});

describe('a discovered account away longer than counter_retention', () => {
  it('is forgotten: no counters, revisits or cursor kept for it, and if it comes back it starts afresh', async () => {
    const { s, clock, stateFile } = await discovering('cdn-discovered-away-', { counter_retention: '1h' });
    await runClock(clock, 10_000, stacks);
    await scrapeNow(s);
    const saved = () =>
      JSON.parse(readFileSync(stateFile, 'utf8')) as {
        cursors: Record<string, string>;
        counters?: { accounts: Record<string, unknown> };
      };
    expect(saved().cursors['prod-a']).toBeDefined();

    // Stopped, and kept for its return through counter_retention: its cursor and counters stay in the file.
    s.sim.setAccountStatus('prod-a', 'inactive');
    await runClock(clock, 30 * MINUTE, stacks, 60_000);
    await scrapeNow(s);
    expect(saved().cursors['prod-a']).toBeDefined();
    expect(saved().counters?.accounts['prod-a']).toBeDefined();

    // Away longer than that: forgotten at the next discovery round, in memory and in the file.
    await runClock(clock, 70 * MINUTE, stacks, 60_000);
    // The write itself is real I/O (an fsync on a busy machine may take seconds).
    await waitFor(() => saved().cursors['prod-a'] === undefined, 30_000, 'prod-a gone from the state file');
    expect(saved().counters?.accounts['prod-a']).toBeUndefined();

    // Back: its walk starts at now - lookback, its counters at 0 (series Prometheus has not seen for an hour).
    const mark = s.sim.requestLog.length;
    s.sim.setAccountStatus('prod-a', 'active');
    await runClock(clock, 10 * MINUTE, stacks, 60_000);
    const back = await scrapeNow(s);
    const starts = s.sim.requestLog
      .slice(mark)
      .filter((e) => e.api === 'metrics' && e.query.account?.[0] === 'prod-a')
      .map((e) => Date.parse(`${e.query.start![0]}Z`));
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(clock.now() - 10 * MINUTE - 30 * MINUTE - MINUTE);
    expect(s.sim.requestLog.slice(mark).some((e) => e.query.account?.[0] === 'prod-a')).toBe(true);
    expect(back.value('cdn_metrics_windows_total', { account: 'prod-a' })).toBeLessThanOrEqual(
      (40 * MINUTE) / (5 * MINUTE),
    );
  }, 120_000);
});

describe('a discovered account away and back, as Prometheus sees its counters', () => {
  /**
   * Away for an hour, it comes back with more to count than it had shown before it left. Counters that started
   * again at 0 would pass their old values within the first scrape: a reset no scraper can see, which hides what
   * was shown before it from increase(). They continue instead, from the values of the cursor it resumes at.
   */
  it.each([
    ['with a state file', true, false],
    ['without a state file', false, false],
    ['with a state file and late data (its revisits wait for it)', true, true],
    ['without a state file, with late data (its revisits wait for it)', false, true],
  ])(
    '%s: every counter equals the truth, a restart while away included',
    async (_, withFile, late) => {
      dir = mkdtempSync(join(tmpdir(), 'cdn-discovered-back-'));
      const stateFile = join(dir, 'state.json');
      const clock = new FakeClock(T0);
      const simulator = await startSimulator({
        seed: 11,
        clock,
        accounts: [...demoWorld(), trafficAccount('prod-a')],
        lagSeconds: late ? 90 : 0,
      });
      const config = {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
        metrics: { lookback: '30m', delay: '0m', window: '5m', ...(late ? { revisit: '5m' } : {}) },
        accounts_discovery: { enabled: true, interval: '10m', include: 'prod-.*' },
        accounts: [],
        ...(withFile ? { state_file: stateFile } : {}),
      };
      const seen = new DropIsReset();
      const look = async (s: Stack) => {
        await s.exporter.store.refresh();
        seen.record(await s.text());
      };
      try {
        let s = await startStack({ clock, simulator, config });
        stacks.push(s);
        await runClock(clock, 10_000, stacks);
        await look(s);
        const first = T0 - 30 * MINUTE;
        simulator.setAccountStatus('prod-a', 'inactive');
        await runClock(clock, INTERVAL, stacks);
        await look(s);
        expect(seen.cursors.has('prod-a')).toBe(true);
        // Away for an hour, scraped on; a restart in the middle when the state file keeps what it had.
        for (let i = 0; i < 6; i++) {
          await runClock(clock, INTERVAL, stacks, 10_000);
          await look(s);
          if (i === 2 && withFile) {
            await s.stop();
            s = await startStack({ clock, simulator, config, port: Number(new URL(s.url).port) });
            stacks.push(s);
          }
        }
        simulator.setAccountStatus('prod-a', 'active');
        await runClock(clock, INTERVAL + 2 * MINUTE, stacks);
        // The books close: from here every minute read is final, and those read early are revisited (the ones
        // awaiting it when the account stopped included).
        simulator.setLag(0);
        await runClock(clock, INTERVAL, stacks);
        await look(s);
        const cursor = seen.cursors.get('prod-a')!;
        expect(cursor, 'the walk caught up after coming back').toBeGreaterThan(clock.now() - 15 * MINUTE);
        expectExact(simulator, (name, labels) => seen.value(name, labels), 'prod-a', [[first, cursor]]);
        const skipped = seen
          .series('cdn_metrics_skipped_seconds_total')
          .filter(([l]) => l.account === 'prod-a');
        expect(skipped.every(([, v]) => v === 0)).toBe(true);
      } finally {
        for (const s of stacks) await s.stop();
        stacks = [];
        await simulator.close();
      }
    },
    240_000,
  );
});
