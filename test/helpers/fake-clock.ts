/**
 * The clock tests drive: time moves only when a test says so (src/clock.ts's Clock, without the waiting).
 */
import { abortError, type Clock } from '../../src/clock.js';

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

  /**
   * Moves time forward by `ms`, waking sleepers in order and letting pending I/O callbacks settle between; `idle`,
   * if given, is awaited before each wake (real work under way finishes before time moves on).
   */
  async advance(ms: number, idle?: () => Promise<void>): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await settle();
      if (idle) await idle();
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
