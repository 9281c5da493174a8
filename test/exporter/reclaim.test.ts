/**
 * Giving memory back after the series shrink (src/exporter/reclaim.ts): once per shrink to half or less of the
 * largest size since the last reclaim, after the settling wait, never on growth, small drops or steady polls,
 * and not when the store grew again meanwhile. The process-level effect (RSS back within 2x) is checked by
 * test/cli/burst-shrink.test.ts and measured by `npm run bench` (bench/process-shrink.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { lastResortGc, ShrinkReclaim } from '../../src/exporter/reclaim.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const controllers: AbortController[] = [];
afterEach(() => {
  for (const c of controllers.splice(0)) c.abort();
});

function setup(minDrop = 1000) {
  const clock = new FakeClock();
  const { log, lines } = captureLog();
  const controller = new AbortController();
  controllers.push(controller);
  let size = 0;
  let reclaimed = 0;
  const r = new ShrinkReclaim(
    {
      clock,
      log,
      signal: controller.signal,
      size: () => size,
      reclaim: () => {
        reclaimed++;
      },
      minDrop,
      settleMs: 5000,
    },
    () => 100e6,
  );
  const to = (n: number) => {
    size = n;
    r.changed();
  };
  return { clock, lines, controller, to, reclaimed: () => reclaimed };
}

describe('ShrinkReclaim', () => {
  it('reclaims once, settleMs after the store shrank to half, and logs the sizes', async () => {
    const s = setup();
    for (const n of [1000, 5000, 10_000, 10_000, 7000]) s.to(n);
    await s.clock.advance(60_000);
    expect(s.reclaimed()).toBe(0);
    s.to(5000);
    s.to(4000);
    await s.clock.advance(4999);
    expect(s.reclaimed()).toBe(0);
    await s.clock.advance(1);
    expect(s.reclaimed()).toBe(1);
    expect(
      s.lines.some((l) => l.includes('series shrank: memory given back') && l.includes('"seriesFrom":10000')),
    ).toBe(true);
    // The high-water mark is now the shrunk size: steady polls at it, or a little below, do nothing.
    s.to(4000);
    s.to(3000);
    await s.clock.advance(60_000);
    expect(s.reclaimed()).toBe(1);
    // A new burst and shrink: once more.
    s.to(20_000);
    s.to(4000);
    await s.clock.advance(5000);
    expect(s.reclaimed()).toBe(2);
  });

  it('does nothing for a drop under minDrop, or when the store grew back before the wait ended', async () => {
    const s = setup(5000);
    s.to(6000);
    s.to(2000);
    await s.clock.advance(10_000);
    expect(s.reclaimed()).toBe(0);
    s.to(20_000);
    s.to(8000);
    await s.clock.advance(1000);
    s.to(19_000);
    await s.clock.advance(10_000);
    expect(s.reclaimed()).toBe(0);
  });

  it('drops a reclaim still waiting when the exporter stops', async () => {
    const s = setup();
    s.to(10_000);
    s.to(1000);
    s.controller.abort();
    await s.clock.advance(10_000);
    expect(s.reclaimed()).toBe(0);
  });
});

describe('lastResortGc', () => {
  it('runs without --expose-gc and leaves no gc global behind', () => {
    lastResortGc();
    lastResortGc();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
