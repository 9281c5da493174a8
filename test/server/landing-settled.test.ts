/**
 * The landing page's final numbers with the real pipeline (issue 32): the simulator's minutes complete 150 s after
 * they end (the demo's lag), the exporter reads each 1-minute window 1 minute after its end and again once it is
 * delay + revisit (6 minutes) old. Before its revisit a window is on the page as provisional with less than the
 * simulator's truth; after it, the page shows the window's complete truth (requests per second over the window)
 * and marks it final. One FakeClock drives the simulator and the exporter.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { formatRate } from '../../src/server/traffic-page.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { tableRows } from '../helpers/landing-html.js';
import { perTest } from '../helpers/per-test.js';
import { quiet, type Stack } from '../helpers/stack.js';

const started = perTest();
const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);

async function walk(clock: FakeClock, stack: Stack, ms: number, stepMs = 10_000): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    await clock.advance(stepMs);
    await quiet(stack);
  }
}

async function get(s: Stack, path: string): Promise<string> {
  const res = await fetch(`${s.url}${path}`);
  expect(res.status).toBe(200);
  return res.text();
}

/** `2026-03-10 12:04–12:05`, as the windows table writes a window. */
function span(start: number, end: number): string {
  return `${new Date(start).toISOString().slice(0, 16).replace('T', ' ')}–${new Date(end).toISOString().slice(11, 16)}`;
}

/** The windows table of the account page: bounds (parsed back), edge requests text and state, newest first. */
async function windows(s: Stack) {
  const rows = tableRows(await get(s, '/accounts/demo'), 'windows');
  return rows.map((r) => {
    const [, day, from, to] = /^(\S+) (\d\d:\d\d)–(\d\d:\d\d)$/.exec(r[0]!)!;
    const start = Date.parse(`${day}T${from}:00Z`);
    const end = Date.parse(`${day}T${to}:00Z`);
    return { start, end, requests: r[2]!, state: r.at(-1)! };
  });
}

describe('landing page: final numbers with metrics.revisit', () => {
  it('shows a window as provisional until its revisit, then its complete truth', async () => {
    const clock = new FakeClock(T0);
    const stack = await started.stack({
      clock,
      sim: { lagSeconds: 150 },
      config: { metrics: { window: '1m', delay: '1m', lookback: '10m', revisit: '5m' } },
    });
    await quiet(stack);
    await walk(clock, stack, 2 * MINUTE);
    const truth = (start: number, end: number) =>
      stack.sim.truth('demo', undefined, start, end).edge.requests / ((end - start) / 1000);

    // The catch-up's windows older than delay + revisit were final at their first read: the truth already.
    let rows = await windows(stack);
    const caughtUp = rows.filter((r) => r.end + 6 * MINUTE <= T0);
    expect(caughtUp.length).toBeGreaterThan(0);
    for (const r of caughtUp) {
      expect(r.state, span(r.start, r.end)).toBe('final');
      expect(r.requests).toBe(formatRate(truth(r.start, r.end)));
    }

    // The newest window: read 1 minute after its end, its last 90 s not reported yet.
    const newest = rows[0]!;
    expect(newest.end).toBeGreaterThan(T0);
    expect(newest.state).toBe('provisional');
    const history = stack.exporter.history.get('demo')!;
    const k = history.ends.indexOf(newest.end);
    expect(history.provisional[k]).toBe(true);
    const firstRead = history.figures.edgeRequestsPerSecond[k]!;
    expect(newest.requests).toBe(formatRate(firstRead));
    expect(firstRead).toBeLessThan(truth(newest.start, newest.end) * 0.9);
    // On the landing page: said so in its tile and window line, and drawn dashed.
    const landing = await get(stack, '/?refresh=off');
    const card = landing.slice(landing.indexOf('<section class="acct" aria-label="traffic of demo"'));
    expect(card).toMatch(/<figcaption>Edge requests<b>[^<]+<\/b><span class="prov">provisional<\/span>/);
    expect(card).toContain(
      `Newest window ${span(newest.start, newest.end)} UTC (1 min), provisional · ${history.ends.length} windows charted`,
    );
    expect(card).toMatch(/<path class="dash" d="[^"]+"\/><circle class="open"/);

    // Walk on until that window was revisited (bounded: it is due 6 minutes after its end).
    let settled: (typeof rows)[number] | undefined;
    for (let i = 0; i < 12 && !settled; i++) {
      await walk(clock, stack, 30_000);
      rows = await windows(stack);
      settled = rows.find((r) => r.start <= newest.start && r.end >= newest.end && r.state === 'final');
    }
    expect(settled, 'the window was revisited').toBeDefined();
    // Its figure now: the simulator's complete truth over the window the page shows (a revisit may have merged
    // it with neighbours: then over their span).
    expect(settled!.requests).toBe(formatRate(truth(settled!.start, settled!.end)));
    const after = stack.exporter.history.get('demo')!;
    const j = after.ends.indexOf(settled!.end);
    expect(after.starts[j]).toBe(settled!.start);
    expect(after.provisional[j]).toBe(false);
    expect(after.figures.edgeRequestsPerSecond[j]).toBeCloseTo(truth(settled!.start, settled!.end), 9);
    // Every window older than delay + revisit is final by now, each its own truth; only the newest are not.
    const now = clock.now();
    for (const r of rows) {
      if (r.end + 7 * MINUTE <= now) {
        expect(r.state, span(r.start, r.end)).toBe('final');
        expect(r.requests, span(r.start, r.end)).toBe(formatRate(truth(r.start, r.end)));
      }
    }
    expect(rows[0]!.state).toBe('provisional');
  }, 120_000);
});
