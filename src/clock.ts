/**
 * Time is injected everywhere: window walking, backoff, staleness and the simulator's notion of "now" read a
 * Clock, so tests drive time instead of sleeping (their clock is test/helpers/fake-clock.ts).
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The error a sleep rejects with when its signal aborts. */
export function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/**
 * The longest delay Node's setTimeout honours (2^31-1 ms, about 24.8 days); a longer one fires after 1 ms with
 * a warning. systemClock.sleep waits out a longer delay in steps of at most this.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      if (Number.isNaN(ms)) {
        reject(new RangeError('sleep: the delay is not a number'));
        return;
      }
      let left = Math.max(0, ms);
      let timer: NodeJS.Timeout;
      const step = () => {
        const now = Math.min(left, MAX_TIMER_MS);
        left -= now;
        timer = setTimeout(() => {
          if (left > 0) {
            step();
            return;
          }
          signal?.removeEventListener('abort', onAbort);
          resolve();
        }, now);
      };
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError(signal!));
      };
      step();
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export const MINUTE = 60_000;

export function floorMinute(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}

/**
 * The reason a woken sleep ends with (Alarm.sleepUntil catches it): one, not a DOMException (and its stack) per
 * wake.
 */
const WOKEN = new DOMException('woken', 'AbortError');

/**
 * A loop's wait for its next due time that a change cuts short: `sleepUntil(at)` resolves at `at` on the clock, or
 * at once after `wake()`. A wake with nobody sleeping is a no-op (the loop looks again before it sleeps). An
 * unbounded `at` (Infinity) waits an hour at a time.
 */
export class Alarm {
  private wakeUp: (() => void) | undefined;

  constructor(private readonly clock: Clock) {}

  wake(): void {
    this.wakeUp?.();
  }

  async sleepUntil(at: number): Promise<void> {
    const ms = at - this.clock.now();
    const ctl = new AbortController();
    this.wakeUp = () => ctl.abort(WOKEN);
    try {
      if (ms <= 0) await new Promise<void>((r) => setImmediate(r));
      else await this.clock.sleep(Number.isFinite(ms) ? ms : 3_600_000, ctl.signal);
    } catch {
      // woken early, or the clock's sleep was stopped: either way the loop looks again
    } finally {
      this.wakeUp = undefined;
    }
  }

  /**
   * The loop of a walker or a queue of requests: `step` does what is due and says when it wants to look again,
   * until `signal` aborts. Then it sleeps until `busy()` is false: whoever settles the work in flight must
   * wake() it (the caller bounds that wait by cancelling the requests).
   */
  async loop(signal: AbortSignal, step: () => number, busy: () => boolean): Promise<void> {
    const onAbort = () => this.wake();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!signal.aborted) await this.sleepUntil(step());
      for (let i = 0; i < 10_000 && busy(); i++) await this.sleepUntil(Number.POSITIVE_INFINITY);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}
