/**
 * Late data (`metrics.revisit`). The CDN keeps adding to a minute's counts for a while after it ends, so a window
 * read `delay` after its end may be incomplete. With revisit on, every window whose first read came before its
 * minutes were `delay + revisit` old is read once more when they are, and the difference between the second answer
 * and what was counted for the window is added to the counters. A minute read when already that old (catch-up,
 * lookback) is final: it is not revisited (the walker never plans a window across that line, see ./walker.ts).
 *
 * Two parts:
 * - CountedBook (./counted-book.ts): what was counted for each window still awaiting its revisit, per counter
 *   series, recorded as the windows are counted.
 * - RevisitQueue: one account's windows awaiting their revisit, and the loop that revisits them when due, merging
 *   neighbours into one request of up to 10 minutes (what was counted for exactly the merged span is the sum of
 *   their records), one request at a time, behind every other request of the token (REVISIT_PRIORITY).
 * The state file's revisit part, and the codec of its records, are in src/state-file/saved-revisits.ts.
 *
 * Contracts: a counter never goes down (a revisit that reports less adds nothing for that series and is counted as
 * a revision `down`); gauges keep showing the newest first read; a revisit changes counters only. Each minute is
 * read at most twice; a failed revisit is retried as a first read is; a 422 skips its minutes (reason `revisit`).
 */
import { Alarm, type Clock, MINUTE } from '../clock.js';
import type { Logger } from '../log.js';
import { type BackoffPolicy, backoffDelay } from '../poll/backoff.js';
import type { RevisitOutcome } from './counted-book.js';
import type { TrafficResponse } from './response.js';
import { asFailure, type RequestFailure, retryDecision } from './retry-decision.js';

/** One window awaiting its revisit. */
export interface PendingWindow {
  start: number;
  end: number;
  /** What its first read counted, by cid (CountedBook). */
  counted: Float64Array;
  /** When it was counted (ms): its resources' counters are kept until it is revisited. */
  countedAt: number;
  /** `counted` as the state file holds it (encodeCounted), made once, on the first save that needs it. */
  encoded?: string;
  /**
   * The account's fold epoch when it was counted (TrafficMapping.foldEpoch); undefined: read from the state file.
   * Windows of different epochs are not revisited together (RevisitDeps.mergeable).
   */
  foldEpoch?: number;
}

interface Entry extends PendingWindow {
  state: 'waiting' | 'inflight';
  notBefore: number;
  attempts: number;
}

export interface RevisitDeps {
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** One revisit, through the token's gate behind every first read. */
  fetchWindow(start: number, end: number): Promise<TrafficResponse>;
  /**
   * Counts a revisit of `windows` (consecutive) as one answer for [start, end); `done` runs once it is counted,
   * with what it found, or with undefined when counting failed.
   */
  apply(
    windows: readonly PendingWindow[],
    start: number,
    end: number,
    response: TrafficResponse,
    done: (outcome: RevisitOutcome | undefined) => void,
  ): void;
  /** A revisit the API refused (422): these minutes keep what their first read counted. */
  skip(start: number, end: number): void;
  /** The windows awaiting a revisit changed (for the state file). */
  changed(): void;
  authFailed(): void;
  /**
   * Whether `next` may be revisited in one request with `prev`, the window before it (default: always). Folding
   * (src/traffic/fold.ts) says no across a change of where a resource's traffic is counted.
   */
  mergeable?(prev: PendingWindow, next: PendingWindow): boolean;
}

export interface RevisitOptions {
  account: string;
  /** delay + revisit: a window is revisited once its end is this old. */
  afterMs: number;
  backoff: BackoffPolicy;
  authBackoff: BackoffPolicy;
}

const MAX_SPAN_MINUTES = 10;

export class RevisitQueue {
  private entries: Entry[] = [];
  private maxSpan = MAX_SPAN_MINUTES;
  private readonly alarm: Alarm;
  private signal: AbortSignal | undefined;
  /** The last revisit was refused for its token: waiting out the auth backoff. */
  private authDown = false;
  private readonly random: () => number;

  constructor(
    private readonly opts: RevisitOptions,
    private readonly deps: RevisitDeps,
  ) {
    this.random = deps.random ?? Math.random;
    this.alarm = new Alarm(deps.clock);
  }

  /** A first read counted and recorded: revisit it once it is due. Windows come in order. */
  add(w: PendingWindow): void {
    this.entries.push({ ...w, state: 'waiting', notBefore: 0, attempts: 0 });
    this.entries.sort((a, b) => a.start - b.start);
    this.deps.changed();
    this.alarm.wake();
  }

  /** Windows awaiting their revisit, in order (for the state file and tests). */
  get pending(): readonly PendingWindow[] {
    return this.entries;
  }

  /** When the oldest window awaiting its revisit was counted; +Infinity when none is. */
  get oldestCountedAt(): number {
    let at = Number.POSITIVE_INFINITY;
    for (const e of this.entries) at = Math.min(at, e.countedAt);
    return at;
  }

  /** A new token arrived (a login renewed it): revisits waiting out the auth backoff are tried now. */
  authRestored(): void {
    if (!this.authDown) return;
    this.authDown = false;
    const now = this.deps.clock.now();
    for (const e of this.entries) if (e.state === 'waiting') e.notBefore = Math.min(e.notBefore, now);
    this.alarm.wake();
  }

  /** Runs until `signal` aborts, then waits for a revisit in flight to settle (its answer is still counted). */
  async run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    await this.alarm.loop(
      signal,
      () => {
        this.launch();
        return this.nextWake();
      },
      () => this.entries.some((e) => e.state === 'inflight'),
    );
  }

  private get stopped(): boolean {
    return this.signal?.aborted === true;
  }

  private due(e: Entry, now: number): boolean {
    return e.state === 'waiting' && e.end + this.opts.afterMs <= now && e.notBefore <= now;
  }

  /** One revisit at a time: the oldest due window, merged with the due windows right after it. */
  private launch(): void {
    if (this.entries.some((e) => e.state === 'inflight')) return;
    const now = this.deps.clock.now();
    const i = this.entries.findIndex((e) => this.due(e, now));
    if (i < 0) return;
    const span = [this.entries[i]!];
    for (let j = i + 1; j < this.entries.length; j++) {
      const e = this.entries[j]!;
      const last = span[span.length - 1]!;
      if (e.start !== last.end || !this.due(e, now) || e.end - span[0]!.start > this.maxSpan * MINUTE) break;
      if (this.deps.mergeable && !this.deps.mergeable(last, e)) break;
      span.push(e);
    }
    for (const e of span) {
      e.state = 'inflight';
      e.attempts++;
    }
    const start = span[0]!.start;
    const end = span[span.length - 1]!.end;
    this.deps.fetchWindow(start, end).then(
      (response) =>
        this.deps.apply(span, start, end, response, (outcome) => {
          if (!outcome) {
            // Counting threw (logged by the pipeline): the late part is lost, but never counted twice.
            this.deps.log.error(
              { account: this.opts.account },
              'a re-read of late data could not be counted',
            );
          }
          this.remove(span);
        }),
      (err: unknown) => this.failed(span, asFailure(err)),
    );
  }

  private remove(span: readonly Entry[]): void {
    this.authDown = false;
    this.entries = this.entries.filter((e) => !span.includes(e));
    if (this.maxSpan < MAX_SPAN_MINUTES) this.maxSpan = Math.min(MAX_SPAN_MINUTES, this.maxSpan * 2);
    this.deps.changed();
    this.alarm.wake();
  }

  private failed(span: Entry[], failure: RequestFailure): void {
    const now = this.deps.clock.now();
    const account = this.opts.account;
    const start = span[0]!.start;
    const end = span[span.length - 1]!.end;
    for (const e of span) e.state = 'waiting';
    if (this.stopped) {
      this.alarm.wake();
      return;
    }
    const attempts = span[0]!.attempts;
    let notBefore = now + backoffDelay(attempts, this.opts.backoff, this.random);
    const decision = retryDecision(failure);
    switch (decision) {
      case 'wait':
        notBefore = now + (failure.retryAfterMs ?? backoffDelay(attempts, this.opts.backoff, this.random));
        break;
      case 'ask-less':
        // Merge fewer windows next time. A single window is not split: what was counted is known only for it.
        if (span.length > 1) {
          this.maxSpan = Math.max(1, Math.floor((end - start) / MINUTE / 2));
          notBefore = now;
        }
        break;
      case 'token-refused':
        this.deps.authFailed();
        this.authDown = true;
        notBefore = now + backoffDelay(attempts, this.opts.authBackoff, () => 1);
        break;
      case 'give-up':
        // A revisit gives up: the minutes keep what their first read counted.
        this.deps.log.warn(
          {
            account,
            start: new Date(start).toISOString(),
            minutes: (end - start) / MINUTE,
            error: failure.description ?? failure.message,
          },
          'metrics API rejected a re-read; these minutes keep what their first read counted',
        );
        this.deps.skip(start, end);
        this.remove(span);
        return;
      case 'not-sent':
      case 'backoff':
        break;
      default: {
        const _never: never = decision;
      }
    }
    for (const e of span) e.notBefore = notBefore;
    this.deps.log.debug(
      { account, start: new Date(start).toISOString(), error: `${failure.status ?? failure.kind}` },
      're-read of late data failed; retrying',
    );
    this.alarm.wake();
  }

  private nextWake(): number {
    let at = Number.POSITIVE_INFINITY;
    for (const e of this.entries)
      if (e.state === 'waiting') at = Math.min(at, Math.max(e.notBefore, e.end + this.opts.afterMs));
    return at;
  }
}
