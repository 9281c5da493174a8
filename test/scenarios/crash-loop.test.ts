/**
 * Issue 21's loss: with faults on every API, late data revisited (`revisit`), short-lived login tokens and the
 * process killed several times, the counters as a scraper that treats a drop as a reset sees them must equal the
 * final truth. Before the state file carried the counters' values, a restarted process began them at 0 and soon
 * passed the values the killed one had shown: a reset no scraper can see, and everything counted before it gone
 * from increase() (a third of an account's traffic in the issue's runs). Driven on a FakeClock
 * (test/helpers/crash-schedule.ts).
 *
 * Issue 31's: a graceful stop as well as a kill, with a window held at each step of its life in turn (test/helpers/window-life.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { runSchedule, type Schedule, type Step } from '../helpers/crash-schedule.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { type Stack, startStack, waitFor } from '../helpers/stack.js';
import { LIFE, type LifeEvent, runLifeSchedule } from '../helpers/window-life.js';

const FAULTS = {
  '429': 0.05,
  '500': 0.05,
  '503': 0.04,
  reset: 0.05,
  malformed: 0.05,
  '504': 0.03,
  slow: 0.03,
};

/** `n` steps of `seconds` each. */
const run = (n: number, seconds: number): Step[] =>
  Array.from({ length: n }, () => ({ kind: 'advance', seconds }));

describe('counters across crashes, as a drop-is-reset scraper sees them', () => {
  it('30 % faults, 3 SIGKILLs, late data with revisit 2m, 20 s login tokens: every counter equals the final truth', async () => {
    const schedule: Schedule = {
      seed: 21,
      lookbackMinutes: 30,
      windowMinutes: 1,
      revisitMinutes: 2,
      login: true,
      tokenLifetimeSeconds: 20,
      requestsPerSecond: 1000,
      steps: [
        { kind: 'faults', rates: FAULTS },
        { kind: 'lag', seconds: 90 },
        ...run(20, 15),
        { kind: 'crash', when: 'busy' },
        ...run(9, 15),
        { kind: 'crash', when: 'quiet' },
        ...run(21, 10),
        { kind: 'crash', when: 'scraping' },
        ...run(30, 15),
      ],
    };
    const out = await runSchedule(schedule);
    expect(out.problems.slice(0, 20)).toEqual([]);
    expect(out.crashes).toBe(3);
    expect(out.faults).toBeGreaterThan(10);
    expect(out.checked).toBeGreaterThan(100);
  }, 120_000);
});

describe('a restart continues each counter', () => {
  it('with its value and its start (created timestamp): no zero for Prometheus to put under it', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 1, 12, 0, 0));
    const dir = mkdtempSync(join(tmpdir(), 'cdn-continue-'));
    const sim = await startSimulator({ seed: 5, clock });
    const config = {
      state_file: join(dir, 'state.json'),
      metrics: { lookback: '30m', delay: '0m', window: '5m' },
    };
    const openMetrics = async (s: Stack) =>
      (
        await fetch(`${s.url}/metrics`, {
          headers: { accept: 'application/openmetrics-text; version=1.0.0' },
        })
      ).text();
    const line = (text: string, name: string) =>
      text.split('\n').find((l) => l.startsWith(`${name}{account="demo",resource="1001"}`));
    try {
      const one = await startStack({ clock, simulator: sim, config });
      await clock.advance(60_000);
      await waitFor(
        async () =>
          (await one.scrape()).value('cdn_metrics_window_end_timestamp_seconds', { account: 'demo' }) !==
          undefined,
        10_000,
        'a window counted',
      );
      const before = await openMetrics(one);
      await one.stop();
      await clock.advance(60_000);
      const two = await startStack({ clock, simulator: sim, config });
      try {
        const after = await openMetrics(two);
        const created = line(before, 'cdn_edge_requests_created');
        expect(created).toBeDefined();
        expect(line(after, 'cdn_edge_requests_created')).toBe(created);
        const value = (text: string) => Number(line(text, 'cdn_edge_requests_total')!.split(' ').at(-1));
        expect(value(after)).toBeGreaterThanOrEqual(value(before));
        expect(value(before)).toBeGreaterThan(0);
      } finally {
        await two.stop();
      }
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a stop at every step of a window’s life (test/helpers/window-life.ts), then a restart', () => {
  // Issue 31, item 1: SIGTERM with windows in flight, then a restart, read one window too many (the restarted
  // process showed the counters its stop had saved without the cursor they go with).
  const ways: Array<[string, Pick<LifeEvent, 'how' | 'goesOn'>]> = [
    ['graceful, what is held goes on within the grace', { how: 'graceful', goesOn: true }],
    ['graceful, what is held is cut at the grace', { how: 'graceful', goesOn: false }],
    ['a kill', { how: 'kill', goesOn: false }],
  ];
  it.each(ways)(
    '%s: every scrape and state file is one moment, and the increases are the truth',
    async (_name, way) => {
      const out = await runLifeSchedule({
        seed: 31,
        lookbackMinutes: 30,
        windowMinutes: 5,
        concurrency: 2,
        faults: {},
        events: LIFE.map((at) => ({ runSeconds: 60, at, scrapeInGrace: way.how === 'graceful', ...way })),
      });
      expect(out.problems.slice(0, 20)).toEqual([]);
      // Each stop found a window at its step: none of the eight is left untried.
      expect(out.stops.filter((x) => !x.reached).map((x) => x.at)).toEqual([]);
      expect(out.checked).toBeGreaterThan(1000);
    },
    120_000,
  );
});
