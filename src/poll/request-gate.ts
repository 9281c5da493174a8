/**
 * One gate per API token: every request made with that token (traffic windows, DVR, recordings, of every account
 * sharing it) passes through it. p-queue enforces `concurrency` and the configured ceiling as a strict sliding
 * window of task starts. A task may still wait inside the queue (Retry-After, a lowered rate) or be woken late by a
 * busy event loop, so the gate also keeps the send times themselves under the rate: a request leaves only when
 * fewer than `rate` requests left in the last second (plus a small margin for the trip to the API). On a 429 the
 * rate drops below the ceiling and the gate pauses until Retry-After; successes climb the rate back.
 */
import PQueue from 'p-queue';
import type { Clock } from '../clock.js';

export interface GateOptions {
  requestsPerSecond: number;
  concurrency: number;
  clock: Clock;
  /** Successes needed to raise the rate one step after a 429. */
  recoverAfter?: number;
  /** Pause when a 429 gives no Retry-After. */
  defaultPauseMs?: number;
  /** Added to the one-second window, for jitter between here and the API (default 25 ms). */
  marginMs?: number;
}

export class RequestGate {
  private readonly queue: PQueue;
  private readonly max: number;
  private rate: number;
  private pausedUntil = 0;
  /** Send times of the latest requests, oldest first (at most `ceil(max)` kept). */
  private readonly sent: number[] = [];
  private readonly marginMs: number;
  private successes = 0;
  private readonly clock: Clock;
  private readonly recoverAfter: number;
  private readonly defaultPauseMs: number;

  constructor(opts: GateOptions) {
    this.max = opts.requestsPerSecond;
    this.rate = opts.requestsPerSecond;
    this.clock = opts.clock;
    this.recoverAfter = opts.recoverAfter ?? 10;
    this.defaultPauseMs = opts.defaultPauseMs ?? 1000;
    this.marginMs = opts.marginMs ?? 25;
    this.queue = new PQueue({
      concurrency: opts.concurrency,
      interval: 1000,
      intervalCap: Math.max(1, Math.floor(opts.requestsPerSecond)),
      strict: true,
    });
  }

  /** Requests waiting or running. */
  get length(): number {
    return this.queue.size + this.queue.pending;
  }

  /** The rate currently allowed, requests per second (the ceiling unless 429s lowered it). */
  get currentRate(): number {
    return this.rate;
  }

  /**
   * Runs `fn` when the gate allows. Aborting `signal` drops the request while it waits (it rejects); a request
   * already sent is left to finish: p-queue would reject it at once, so its own signal is aborted only for tasks
   * that have not started.
   */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const waiting = new AbortController();
    let started = false;
    const onAbort = () => {
      if (!started) waiting.abort(signal?.reason);
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    const task = this.queue.add(
      async () => {
        started = true;
        await this.waitTurn(signal);
        return fn();
      },
      { signal: waiting.signal },
    ) as Promise<T>;
    return task.finally(() => signal?.removeEventListener('abort', onAbort));
  }

  /** A 429: stop every request of this token until Retry-After, and slow down. */
  rateLimited(retryAfterMs?: number): void {
    const pause = retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs : this.defaultPauseMs;
    this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + pause);
    this.rate = Math.max(this.max / 8, this.rate / 2);
    this.successes = 0;
  }

  succeeded(): void {
    if (this.rate >= this.max) return;
    if (++this.successes >= this.recoverAfter) {
      this.successes = 0;
      this.rate = Math.min(this.max, this.rate * 1.5);
    }
  }

  /** Resolves when this request may leave, and records it as sent (check and record with no await between). */
  private async waitTurn(signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < 10_000; i++) {
      const now = this.clock.now();
      const wait = Math.max(this.pausedUntil - now, this.windowWait(now));
      if (wait <= 0) {
        this.sent.push(now);
        if (this.sent.length > Math.ceil(this.max)) this.sent.shift();
        return;
      }
      await this.clock.sleep(wait, signal);
    }
    throw new Error('request gate: no turn after 10000 waits');
  }

  /** How long until fewer than `rate` sends lie in the last window (a fractional rate spaces sends instead). */
  private windowWait(now: number): number {
    const windowMs = 1000 + this.marginMs;
    if (this.rate < 1) {
      const last = this.sent[this.sent.length - 1];
      return last === undefined ? 0 : last + windowMs / this.rate - now;
    }
    const n = Math.floor(this.rate);
    if (this.sent.length < n) return 0;
    return this.sent[this.sent.length - n]! + windowMs - now;
  }
}
