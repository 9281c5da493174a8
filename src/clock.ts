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

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export const MINUTE = 60_000;

export function floorMinute(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}
