/**
 * Node's setTimeout fires after 1 ms when asked for more than 2^31-1 ms (about 24.8 days): a long sleep on the
 * system clock must still wait its whole time. vitest's fake timers copy Node's overflow rule, so no test waits.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS, systemClock } from '../src/clock.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('systemClock.sleep beyond the timer limit', () => {
  it('waits 30 days, not 1 ms', async () => {
    vi.useFakeTimers();
    const thirtyDays = 30 * 86_400_000;
    let done = false;
    const slept = systemClock.sleep(thirtyDays).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(thirtyDays - MAX_TIMER_MS - 1000);
    await slept;
    expect(done).toBe(true);
  });

  it('is cut short by its signal in any step', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const slept = systemClock.sleep(3 * MAX_TIMER_MS, controller.signal);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 10);
    controller.abort(new Error('stop'));
    await expect(slept).rejects.toThrow('stop');
  });
});
