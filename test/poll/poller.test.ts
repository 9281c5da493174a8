/**
 * everyInterval (src/poll/poller.ts): the Poller of the DVR and recordings APIs, one round every interval on the
 * clock it is given. Its promise as a Poller: `run` polls until the signal aborts, then resolves; it never rejects,
 * a round that throws is logged and the next one comes on time; rounds start on multiples of the interval from the
 * first, a round longer than the interval costs the rounds it overran, not the schedule.
 */
import { describe, expect, it } from 'vitest';
import { everyInterval } from '../../src/poll/poller.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const INTERVAL = 60_000;

describe('everyInterval', () => {
  it('polls at once, then on every multiple of the interval, and resolves when stopped', async () => {
    const clock = new FakeClock(T0);
    const starts: number[] = [];
    const { log } = captureLog();
    const poller = everyInterval(INTERVAL, clock, log, async () => {
      starts.push(clock.now() - T0);
    });
    const stop = new AbortController();
    const running = poller.run(stop.signal);
    await clock.advance(3 * INTERVAL);
    expect(starts).toEqual([0, INTERVAL, 2 * INTERVAL, 3 * INTERVAL]);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
    await clock.advance(2 * INTERVAL);
    expect(starts).toHaveLength(4);
    expect(clock.pending).toBe(0);
  });

  it('a round that throws is logged, and the next one comes on time', async () => {
    const clock = new FakeClock(T0);
    const { log, lines } = captureLog();
    let rounds = 0;
    const poller = everyInterval(INTERVAL, clock, log, async () => {
      rounds++;
      if (rounds === 1) throw new Error('a bug in the round');
    });
    const stop = new AbortController();
    const running = poller.run(stop.signal);
    await settle();
    expect(lines.filter((l) => l.includes('poll round failed unexpectedly'))).toHaveLength(1);
    expect(lines.join('\n')).toContain('a bug in the round');
    await clock.advance(INTERVAL);
    expect(rounds).toBe(2);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
  });

  it('a round longer than the interval: the next starts on the next multiple, no drift', async () => {
    const clock = new FakeClock(T0);
    const { log } = captureLog();
    const starts: number[] = [];
    const poller = everyInterval(INTERVAL, clock, log, async () => {
      starts.push(clock.now() - T0);
      // The first round takes two and a half intervals.
      if (starts.length === 1) await clock.sleep(2.5 * INTERVAL);
    });
    const stop = new AbortController();
    const running = poller.run(stop.signal);
    await clock.advance(4 * INTERVAL);
    expect(starts).toEqual([0, 3 * INTERVAL, 4 * INTERVAL]);
    stop.abort();
    await running;
  });
});
