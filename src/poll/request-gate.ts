/**
 * One gate per API token: every request made with that token (traffic windows, DVR, recordings, of every account
 * sharing it) passes through it. p-queue enforces the configured ceiling as a strict sliding window
 * (`requests_per_second` starts in any 1000 ms) and `concurrency`. On a 429 the gate pauses until Retry-After and
 * lowers its own rate below the ceiling; successes climb it back.
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
}

export class RequestGate {
  private readonly queue: PQueue;
  private readonly max: number;
  private rate: number;
  private pausedUntil = 0;
  private lastStart = Number.NEGATIVE_INFINITY;
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

  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.queue.add(
      async () => {
        await this.waitTurn(signal);
        this.lastStart = this.clock.now();
        return fn();
      },
      { signal },
    ) as Promise<T>;
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

  private async waitTurn(signal?: AbortSignal): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      const now = this.clock.now();
      const spacing = this.rate < this.max ? this.lastStart + 1000 / this.rate - now : 0;
      const wait = Math.max(this.pausedUntil - now, spacing);
      if (wait <= 0) return;
      await this.clock.sleep(wait, signal);
    }
  }

  async onIdle(): Promise<void> {
    await this.queue.onIdle();
  }

  clear(): void {
    this.queue.clear();
  }
}
