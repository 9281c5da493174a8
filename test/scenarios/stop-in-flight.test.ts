/**
 * Issue 31, item 1: a graceful stop (SIGTERM: Exporter.stop) with a window in flight, then a restart. The window
 * is answered within the stop's grace and counted, and the stop's last checkpoint (CursorBook.close) keeps it: no
 * scrape saw it. The next process resumes with the counters of that checkpoint. Its first scrape must show them
 * with the cursor they go with (`cdn_metrics_window_end_timestamp_seconds`), not without any: a scraper then
 * reads the counters against the last cursor it saw, the old process's, and the window counts as a window too many
 * (test/cli/exact-across-restarts.test.ts, `south edge 20000 200: expected 89984 to be 83638`).
 *
 * On a FakeClock: the window's request is held by the simulator (a `slow` fault) until the stop has begun.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { cursorOf, expectExact, reader, savedCursor } from '../helpers/ground-truth.js';
import { perTest } from '../helpers/per-test.js';
import { quiet, requestsLanded, type Stack, scrapeNow } from '../helpers/stack.js';

const started = perTest();
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const WINDOW = 5 * MINUTE;
const LOOKBACK = 30 * MINUTE;

describe('a graceful stop with a window in flight, then a restart', () => {
  it('each scrape shows the counters with the cursor they go with: the window saved by the stop is not counted twice', async () => {
    const clock = new FakeClock(T0);
    const sim = await started.simulator({ seed: 31, clock, slowMs: 50 });
    const stateFile = join(started.folder('cdn-stop-in-flight-'), 'state.json');
    const config = {
      state_file: stateFile,
      metrics: { lookback: '30m', delay: '0m', window: '5m' },
    };
    const scrapes: Scrape[] = [];
    const scrape = async (s: Stack) => {
      scrapes.push(await scrapeNow(s));
      return scrapes.at(-1)!;
    };

    const one = await started.stack({ clock, simulator: sim, config });
    // The lookback, caught up: due at once, sent as fast as the gate (paced on the clock) lets them go.
    for (let i = 0; i < 60 && cursorOf(await scrapeNow(one), 'demo') < T0; i++) {
      await clock.advance(1000, () => requestsLanded(one));
      await quiet(one);
    }
    const first = await scrape(one);
    expect(cursorOf(first, 'demo')).toBe(T0);

    // The next window falls due, and its answer is held by the simulator while the stop begins.
    sim.setFaults({ slow: 1 });
    const due = cursorOf(first, 'demo');
    await clock.advance(due + WINDOW - clock.now());
    await sim.requestArrived(
      (e) => e.api === 'metrics' && e.query.start?.[0] === new Date(due).toISOString().slice(0, 19),
    );
    // A grace long enough for a busy machine: the stop returns as soon as the window is counted.
    await one.stopExporter(30_000);
    await one.stop();
    sim.setFaults({});
    // Counted in the grace and kept by the stop's last checkpoint; no scrape saw it.
    expect(savedCursor(stateFile, 'demo')).toBe(due + WINDOW);

    // The restart, before it has counted anything itself (the next window is not due yet).
    const two = await started.stack({ clock, simulator: sim, config });
    await quiet(two);
    const second = await scrape(two);

    // What the scraper of the issue checks: the counters (they never went down, so their summed increases are the
    // last values) against the newest cursor it has seen.
    const newest = Math.max(...scrapes.map((s) => cursorOf(s, 'demo')));
    expect(expectExact(sim, reader(second), 'demo', [[T0 - LOOKBACK, newest]])).toBeGreaterThan(10);
    // And the promise under it: one scrape is one moment, its counters the truth up to the cursor it shows.
    expect(cursorOf(second, 'demo')).toBe(due + WINDOW);
    for (const s of scrapes)
      expect(expectExact(sim, reader(s), 'demo', [[T0 - LOOKBACK, cursorOf(s, 'demo')]])).toBeGreaterThan(10);
  });
});
