/**
 * Time is injected everywhere: window walking, backoff, staleness and the simulator's notion of "now" read a
 * Clock, so tests drive time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortError(signal: AbortSignal): Error {
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

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told to. `advance` wakes every sleeper whose time has come, in time order, and
 * lets their continuations run before moving on, so a poll loop driven by it behaves as it would in real time.
 */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: Sleeper[] = [];

  constructor(start: number | Date = Date.UTC(2026, 0, 1, 0, 0, 0)) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.current;
  }

  /** Number of pending sleeps: lets a test wait until a loop has parked itself. */
  get pending(): number {
    return this.sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const sleeper: Sleeper = {
        at: this.current + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  set(ms: number): void {
    this.current = ms;
  }

  /** Moves time forward by `ms`, waking sleepers in order and letting pending I/O callbacks settle between. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (!next || next.at > target) break;
      this.sleepers.shift();
      this.current = Math.max(this.current, next.at);
      next.resolve();
    }
    this.current = target;
    await settle();
  }
}

/** Lets promise continuations and ready I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

export const MINUTE = 60_000;

export function floorMinute(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}
