/**
 * Applies traffic windows without stalling the event loop. A poll of 10k resources creates or updates ~700k
 * series: updating them takes tens of milliseconds, creating them the first time about a second. So a window
 * is counted in time slices (`sliceMs` of work, then a yield to the event loop), and windows are counted one
 * after another in the order they were handed in (a window's `finish` drops what vanished from it, so two
 * windows must never interleave).
 *
 * A small window (at most 256 records) that fits in one slice while nothing is queued is counted synchronously,
 * before `apply` returns. Otherwise nothing is counted before the next turn of the event loop: the task handing
 * a big answer in has just unpacked it, and one more slice on top of that was a 100-250 ms stall at 1M series.
 *
 * Each window is counted inside the CountingLock (./counting-ledger.ts: the store's render lock and traffic's
 * ledger), and its account's counted cursor
 * is set to the window's end as it finishes: the cursor up to which windows are in the store's values, contiguous
 * and in order. It is not the walker's cursor, which runs ahead of it by the windows queued here.
 */
import type { CountingLock } from './counting-ledger.js';
import type { ApplyResult, TrafficMapping, WindowApply } from './mapping.js';
import type { TrafficResponse } from './response.js';

export interface ApplierOptions {
  /** Work per slice before yielding, ms (default 10). */
  sliceMs?: number;
  /** Yields to the event loop (default: setImmediate). */
  yieldToLoop?: () => Promise<void>;
  /** Monotonic milliseconds, for slicing only (default performance.now). */
  now?: () => number;
  /** Where windows are counted whole and counted cursors are set (a CountingLedger on the store); none: no lock. */
  lock?: CountingLock;
}

const NO_LOCK: CountingLock = {
  enter: () => undefined,
  leave: () => {},
  setCounted: () => {},
  forgetCounted: () => {},
};

/** Called once the window is counted; `error` when counting it threw (the window is then lost). Must not throw. */
export type AppliedCallback = (result: ApplyResult | undefined, error?: unknown) => void;

/** How a window is counted (default: a first read, gauges and all). */
export interface ApplyOptions {
  /** False: a revisit of late data: counters only (see TrafficMapping.begin). */
  gauges?: boolean;
  /** Runs just before the window's first record is counted (no other window is being counted until `done`). */
  prepare?: () => void;
  /** A revisit of a window counted before: the counted cursor stays where it is (it is past this window). */
  revisit?: boolean;
}

interface Job {
  account: string;
  startMs: number;
  endMs: number;
  /** Undefined: a window that is skipped, not counted (`skipped` does its bookkeeping). */
  response: TrafficResponse | undefined;
  nowMs: number;
  done: AppliedCallback;
  opts: ApplyOptions;
  skipped?: () => void;
  /** The account is removed (`skipped` removes its series): its counted cursor goes, not moves. */
  forget?: boolean;
  window?: WindowApply;
  next: number;
  /** Inside the lock. */
  entered?: boolean;
  /** Waiting to be let in (the lock was asked for when the job came and no render let it in at once). */
  entering?: Promise<void>;
}

/**
 * Records between two looks at the time. A record of a resource's first window creates every series it has
 * (about 70 at a million series over 15k resources), so 32 of them went far past the slice; a look costs well
 * under a microsecond, a record a few.
 */
const CHECK_EVERY = 4;
/**
 * Answers with more records than this are never begun in the task that hands them in: that task has just
 * unpacked the answer (tens of ms at 15k resources), and begin() looks at every record once more.
 */
const SYNC_RECORDS = 256;

function setImmediateYield(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class TrafficApplier {
  private readonly queue: Job[] = [];
  private readonly sliceMs: number;
  private readonly yieldToLoop: () => Promise<void>;
  private readonly now: () => number;
  private readonly lock: CountingLock;
  private draining: Promise<void> | undefined;

  constructor(
    private readonly mapping: TrafficMapping,
    opts: ApplierOptions = {},
  ) {
    this.sliceMs = opts.sliceMs ?? 10;
    this.yieldToLoop = opts.yieldToLoop ?? setImmediateYield;
    this.now = opts.now ?? (() => performance.now());
    this.lock = opts.lock ?? NO_LOCK;
  }

  /** Where `account` starts: every window before `cursor` counts as counted (the walk resumes there). */
  startAt(account: string, cursor: number): void {
    this.lock.setCounted(account, cursor);
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
    this.enqueue({ account, startMs, endMs, response, nowMs, done, opts, next: 0 });
  }

  /**
   * Window [startMs, endMs) of `account` will never be counted: `skipped` runs in its turn, after the windows
   * handed in before it, and the counted cursor moves past it.
   */
  skip(account: string, startMs: number, endMs: number, skipped: () => void): void {
    this.enqueue({
      account,
      startMs,
      endMs,
      response: undefined,
      nowMs: 0,
      done: () => {},
      opts: {},
      skipped,
      next: 0,
    });
  }

  /**
   * `account` is no longer counted: `removed` runs in its turn, after the windows handed in before it, inside the
   * lock, and the account's counted cursor is dropped with it. Resolves once done.
   */
  remove(account: string, removed: () => void): Promise<void> {
    return new Promise((resolve) => {
      this.enqueue({
        account,
        startMs: 0,
        endMs: 0,
        response: undefined,
        nowMs: 0,
        done: () => {},
        skipped: () => {
          try {
            removed();
          } finally {
            resolve();
          }
        },
        opts: {},
        forget: true,
        next: 0,
      });
    });
  }

  private enqueue(job: Job): void {
    if (this.queue.length === 0) {
      job.entering = this.lock.enter();
      // A big answer waits for the next turn: the task handing it in has just unpacked it.
      const small = job.response === undefined || job.response.records.length <= SYNC_RECORDS;
      if (job.entering === undefined) {
        job.entered = true;
        if (small && this.slice(job)) return;
      }
    }
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
    // The task that started the drain may have just run a slice (or unpacked a big answer): yield first.
    await this.yieldToLoop();
    while (this.queue.length > 0) {
      const job = this.queue[0]!;
      try {
        if (!job.entered) {
          await (job.entering ?? this.lock.enter());
          job.entered = true;
        }
        while (!this.slice(job)) await this.yieldToLoop();
      } catch {
        // Only a throwing `done` gets here; it must not hold up the windows after it.
      }
      this.queue.shift();
    }
  }

  /**
   * Works on `job` (entered) for one slice; true when it is finished: `done` has been called, the counted cursor
   * set and the lock left.
   */
  private slice(job: Job): boolean {
    let result: ApplyResult | undefined;
    let error: unknown;
    if (!job.response) {
      try {
        job.skipped?.();
      } finally {
        this.finished(job);
      }
      return true;
    }
    try {
      const until = this.now() + this.sliceMs;
      if (!job.window) {
        job.opts.prepare?.();
        job.window = this.mapping.begin(
          job.account,
          job.startMs,
          job.endMs,
          job.response,
          job.nowMs,
          job.opts.gauges ?? true,
        );
        // begin() looks at every record (the admission pass, tens of ms at 15k resources): when that used the
        // slice, the records start in the next one.
        if (job.window.total > 0 && this.now() >= until) return false;
      }
      const w = job.window;
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
    try {
      job.done(result, error);
    } finally {
      this.finished(job);
    }
    return true;
  }

  /** The window is counted (or lost, logged by `done`): the account's counted cursor moves past it either way. */
  private finished(job: Job): void {
    if (job.forget) this.lock.forgetCounted(job.account);
    else if (!job.opts.revisit) this.lock.setCounted(job.account, job.endMs);
    job.entered = false;
    this.lock.leave();
  }
}
