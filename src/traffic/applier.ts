/**
 * Applies traffic windows without stalling the event loop. A poll of 10k resources creates or updates ~700k
 * series: updating them takes tens of milliseconds, creating them the first time about a second. So a window
 * is counted in time slices (`sliceMs` of work, then a yield to the event loop), and windows are counted one
 * after another in the order they were handed in (a window's `finish` drops what vanished from it, so two
 * windows must never interleave).
 *
 * A window that fits in one slice while nothing is queued is counted synchronously, before `apply` returns.
 */
import type { ApplyResult, TrafficProcess, WindowApply } from './process.js';
import type { TrafficResponse } from './response.js';

export interface ApplierOptions {
  /** Work per slice before yielding, ms (default 10). */
  sliceMs?: number;
  /** Yields to the event loop (default: setImmediate). */
  yieldToLoop?: () => Promise<void>;
  /** Monotonic milliseconds, for slicing only (default performance.now). */
  now?: () => number;
}

/** Called once the window is counted; `error` when counting it threw (the window is then lost). Must not throw. */
export type AppliedCallback = (result: ApplyResult | undefined, error?: unknown) => void;

/** How a window is counted (default: a first read, gauges and all). */
export interface ApplyOptions {
  /** False: a re-read of late data: counters only (see TrafficProcess.begin). */
  gauges?: boolean;
  /** Runs just before the window's first record is counted (no other window is being counted until `done`). */
  prepare?: () => void;
}

interface Job {
  account: string;
  startMs: number;
  endMs: number;
  response: TrafficResponse;
  nowMs: number;
  done: AppliedCallback;
  opts: ApplyOptions;
  window?: WindowApply;
  next: number;
}

/** Records between two looks at the time. */
const CHECK_EVERY = 32;

function setImmediateYield(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class TrafficApplier {
  private readonly queue: Job[] = [];
  private readonly sliceMs: number;
  private readonly yieldToLoop: () => Promise<void>;
  private readonly now: () => number;
  private draining: Promise<void> | undefined;

  constructor(
    private readonly process: TrafficProcess,
    opts: ApplierOptions = {},
  ) {
    this.sliceMs = opts.sliceMs ?? 10;
    this.yieldToLoop = opts.yieldToLoop ?? setImmediateYield;
    this.now = opts.now ?? (() => performance.now());
  }

  /** Windows handed in and not yet counted. */
  get pending(): number {
    return this.queue.length;
  }

  /**
   * Counts window [startMs, endMs) of `account` after every window handed in before it. `done` runs when it is
   * counted: before this returns when nothing is queued and it takes one slice.
   */
  apply(
    account: string,
    startMs: number,
    endMs: number,
    response: TrafficResponse,
    nowMs: number,
    done: AppliedCallback,
    opts: ApplyOptions = {},
  ): void {
    const job: Job = { account, startMs, endMs, response, nowMs, done, opts, next: 0 };
    if (this.queue.length === 0 && this.slice(job)) return;
    this.queue.push(job);
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Resolves once every window handed in so far is counted. */
  async idle(): Promise<void> {
    for (let i = 0; i < 1000 && this.draining; i++) await this.draining;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const job = this.queue[0]!;
      try {
        while (!this.slice(job)) await this.yieldToLoop();
      } catch {
        // Only a throwing `done` gets here; it must not hold up the windows after it.
      }
      this.queue.shift();
    }
  }

  /** Works on `job` for one slice; true when it is finished (and `done` has been called). */
  private slice(job: Job): boolean {
    let result: ApplyResult | undefined;
    let error: unknown;
    try {
      if (!job.window) {
        job.opts.prepare?.();
        job.window = this.process.begin(
          job.account,
          job.startMs,
          job.endMs,
          job.response,
          job.nowMs,
          job.opts.gauges ?? true,
        );
      }
      const w = job.window;
      const until = this.now() + this.sliceMs;
      while (job.next < w.total) {
        const to = Math.min(w.total, job.next + CHECK_EVERY);
        w.records(job.next, to);
        job.next = to;
        if (job.next < w.total && this.now() >= until) return false;
      }
      result = w.finish();
    } catch (err) {
      error = err ?? new Error('applying a traffic window failed');
    }
    job.done(result, error);
    return true;
  }
}
