/**
 * The window walker of one account (docs/architecture.md, "Walking windows"): every minute before the cursor has
 * been handed over for counting exactly once. Windows are half-open [start, end), minute-aligned, consecutive;
 * several may be in flight during catch-up, but they are handed over, and the cursor advanced, only in order over a
 * contiguous run of finished windows.
 *
 * The loop returns only on stop; every API failure becomes a log line, a status change and a retry schedule.
 */
import { Alarm, type Clock, floorMinute, MINUTE } from '../clock.js';
import type { Logger } from '../log.js';
import { type BackoffPolicy, backoffDelay } from '../poll/backoff.js';
import type { TrafficResponse } from './response.js';
import { asFailure, type RequestFailure, retryDecision } from './retry-decision.js';

/** What a warning is logged once for: the status and kind (`500 server`), or the kind alone (`network`). */
function causeOf(failure: RequestFailure): string {
  return failure.status !== undefined ? `${failure.status} ${failure.kind}` : failure.kind;
}

export type FetchWindow = (start: number, end: number) => Promise<TrafficResponse>;

export interface WalkerStatus {
  account: string;
  /** Every minute before this (ms) has been counted. */
  cursor: number;
  /** Largest window allowed now, minutes (10 unless shrunk after a 504). */
  maxWindowMinutes: number;
  /** The window in use: the length of the newest window asked for, minutes; undefined before the first request. */
  windowMinutes?: number;
  /** Undefined until the first answer. */
  up: boolean | undefined;
  /** True once a first request has been tried (for /readyz). */
  tried: boolean;
  lastError?: string;
  /** When the last error happened (ms). */
  lastErrorAt?: number;
  /** Requests that failed since the last one answered (429s are flow control, not counted). */
  errorsSinceSuccess: number;
  lastSuccess?: number;
}

export interface WalkerDeps {
  clock: Clock;
  /** The account's logger (a child carrying `account`); the walker's lines do not repeat the key. */
  log: Logger;
  fetchWindow: FetchWindow;
  /**
   * Hands a finished window over for counting, once per window, in order, as the cursor moves past it. It only
   * enqueues: counting happens later, in the applier (./applier.ts), so whoever stops the walker must wait for
   * the applier to drain before saving a cursor past this window. `readAt`: when the request that answered it
   * was launched (the data is at least as complete as it was then).
   */
  handOver(start: number, end: number, response: TrafficResponse, readAt: number): void;
  /**
   * Windows handed over and not counted yet. They count against maxInFlight: a walker ahead of a slow applier
   * waits (windowCounted wakes it) instead of queueing answers there, each of them tens of MB for a big account.
   */
  backlog?(): number;
  /** A window that will never be counted. */
  skip(start: number, end: number, reason: string): void;
  /** Called after every change of status (cursor, up, window size, errors). */
  onStatus(status: WalkerStatus): void;
  /** A 401/403: the token may have been rotated; read it again. */
  authFailed(): void;
  /**
   * True while the token's gate already has a full round of requests waiting for a place (many accounts share
   * it): the walker then adds no window to one already in flight, and sends its next when that one settles. So
   * 10,000 accounts catching up queue one window each, not `maxInFlight` (each waiting window holds its request's
   * state, and their garbage collections stalled the event loop: issue 25, row 7), and take their turns
   * round-robin. The gate is as busy either way; an account alone still catches up `maxInFlight` at a time.
   */
  crowded?(): boolean;
  random?: () => number;
}

export interface WalkerOptions {
  account: string;
  windowMs: number;
  delayMs: number;
  lookbackMs: number;
  /** Resume here (from the state file) instead of now - lookback. */
  startCursor?: number;
  /** Windows fetched ahead of the cursor at most (catch-up). */
  maxInFlight: number;
  backoff: BackoffPolicy;
  /** Slow retry while the account's token is refused. */
  authBackoff: BackoffPolicy;
  /** Successes in a row, of windows planned at the current size, before a shrunk window doubles again. */
  growAfter?: number;
  /**
   * `metrics.revisit` (ms, 0: off). When on, no window is planned across the line where minutes turn final
   * (delay + revisit old): the windows before it are read once and for all, the ones after it are revisited
   * later (./revisit.ts), and none holds both kinds of minute.
   */
  revisitMs?: number;
}

const MAX_WINDOW_MINUTES = 10;

/** A window the walker planned: asked for, retried, until handed over in order (or skipped). */
interface PlannedWindow {
  start: number;
  end: number;
  state: 'waiting' | 'inflight' | 'done' | 'skipped';
  notBefore: number;
  attempts: number;
  /** `maxWindow` when this window was planned (or split off). */
  sizedAt: number;
  /** When the request of the latest attempt was launched. */
  readAt?: number;
  response?: TrafficResponse;
}

export class AccountWalker {
  private cursor: number;
  private windows: PlannedWindow[] = [];
  private maxWindow = MAX_WINDOW_MINUTES;
  private streak = 0;
  private authDown = false;
  /** The cause of the last failure warned about; undefined after a success. */
  private loggedCause: string | undefined;
  private authAttempts = 0;
  private status: WalkerStatus;
  private readonly alarm: Alarm;
  private signal: AbortSignal | undefined;
  private readonly random: () => number;
  private readonly growAfter: number;
  /** The last launch held due windows back because the gate was crowded: they go when one in flight settles. */
  private held = false;

  constructor(
    private readonly opts: WalkerOptions,
    private readonly deps: WalkerDeps,
  ) {
    const now = deps.clock.now();
    this.cursor = opts.startCursor ?? floorMinute(now - opts.lookbackMs);
    this.random = deps.random ?? Math.random;
    this.alarm = new Alarm(deps.clock);
    this.growAfter = opts.growAfter ?? 3;
    this.status = {
      account: opts.account,
      cursor: this.cursor,
      maxWindowMinutes: this.maxWindow,
      up: undefined,
      tried: false,
      errorsSinceSuccess: 0,
    };
  }

  get current(): Readonly<WalkerStatus> {
    return this.status;
  }

  /**
   * A new token arrived (a login renewed it): windows waiting out the slow auth backoff are tried now, with it.
   * Without this a renewed token would wait up to the auth backoff's cap (10 minutes) before the first use.
   */
  authRestored(): void {
    if (!this.authDown) return;
    const now = this.deps.clock.now();
    for (const s of this.windows) if (s.state === 'waiting') s.notBefore = Math.min(s.notBefore, now);
    this.authAttempts = 0;
    this.alarm.wake();
  }

  /** One of the windows handed over is counted: the backlog shrank, so more may be planned. */
  windowCounted(): void {
    this.alarm.wake();
  }

  /** Windows planned or in flight, plus those handed over and not counted yet. */
  private get ahead(): number {
    return this.windows.length + (this.deps.backlog?.() ?? 0);
  }

  /**
   * Runs until `signal` aborts. Then it launches nothing more, waits for the windows in flight to settle (the
   * caller bounds that wait by cancelling the requests), counts the finished ones that join the cursor, and returns.
   * Windows that did not finish are not counted; the cursor stays before them.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.publish();
    this.signal = signal;
    await this.alarm.loop(
      signal,
      () => {
        this.advance();
        this.plan();
        this.launch();
        return this.nextWake();
      },
      () => this.windows.some((x) => x.state === 'inflight'),
    );
    this.advance();
  }

  private get stopped(): boolean {
    return this.signal?.aborted === true;
  }

  private get horizon(): number {
    return floorMinute(this.deps.clock.now() - this.opts.delayMs);
  }

  private get planned(): number {
    const last = this.windows[this.windows.length - 1];
    return last ? last.end : this.cursor;
  }

  /** Creates the windows that are due, up to the look-ahead limit. */
  private plan(): void {
    const horizon = this.horizon;
    while (this.ahead < this.opts.maxInFlight) {
      const next = this.planned;
      if (horizon - next < this.opts.windowMs) break;
      let len = Math.min(this.maxWindow * MINUTE, horizon - next);
      const final = horizon - (this.opts.revisitMs ?? 0);
      if (this.opts.revisitMs && next < final && next + len > final) len = final - next;
      this.windows.push(this.newWindow(next, next + len));
    }
  }

  private launch(): void {
    const now = this.deps.clock.now();
    let inflight = this.windows.filter((s) => s.state === 'inflight').length;
    this.held = false;
    for (const w of this.windows) {
      // While the token is refused, only the oldest window probes; the others wait for it.
      if (this.authDown && (inflight > 0 || w !== this.firstOpen())) break;
      if (inflight >= this.opts.maxInFlight) break;
      if (w.state !== 'waiting' || w.notBefore > now) continue;
      if (inflight > 0 && this.deps.crowded?.()) {
        this.held = true;
        break;
      }
      inflight++;
      this.fetch(w);
    }
  }

  private firstOpen(): PlannedWindow | undefined {
    return this.windows.find((s) => s.state === 'waiting' || s.state === 'inflight');
  }

  private fetch(w: PlannedWindow): void {
    w.state = 'inflight';
    w.attempts++;
    w.readAt = this.deps.clock.now();
    this.status.windowMinutes = (w.end - w.start) / MINUTE;
    this.deps.fetchWindow(w.start, w.end).then(
      (response) => this.succeeded(w, response),
      (err: unknown) => this.failed(w, asFailure(err)),
    );
  }

  private succeeded(w: PlannedWindow, response: TrafficResponse): void {
    w.state = 'done';
    w.response = response;
    if (this.authDown) this.deps.log.info('metrics API accepts the token again');
    else if (this.loggedCause !== undefined)
      this.deps.log.info({ after: this.loggedCause }, 'metrics API answers again');
    this.loggedCause = undefined;
    this.authDown = false;
    this.authAttempts = 0;
    this.status.tried = true;
    this.status.up = true;
    this.status.lastSuccess = this.deps.clock.now();
    this.status.errorsSinceSuccess = 0;
    // Only a window planned at the current size (or a larger one) says the current size works. Windows planned
    // before the last growth are still in flight during catch-up; counting them would double the size again before
    // any window of the new size has been answered (2 -> 4 -> 8 while the API times out above 2 minutes).
    if (
      w.sizedAt >= this.maxWindow &&
      ++this.streak >= this.growAfter &&
      this.maxWindow < MAX_WINDOW_MINUTES
    ) {
      this.streak = 0;
      this.maxWindow = Math.min(MAX_WINDOW_MINUTES, this.maxWindow * 2);
    }
    this.alarm.wake();
  }

  private failed(w: PlannedWindow, failure: RequestFailure): void {
    if (this.stopped) {
      w.state = 'waiting';
      this.alarm.wake();
      return;
    }
    const now = this.deps.clock.now();
    const minutes = (w.end - w.start) / MINUTE;
    this.status.tried = true;
    this.streak = 0;
    w.state = 'waiting';
    const describe = `${failure.status ?? failure.kind}: ${failure.description ?? failure.message}`;
    const decision = retryDecision(failure);
    switch (decision) {
      case 'wait':
        // Flow control, not a failure of the account: `up` is left as it is. The token's request gate has been
        // paused by the same answer; this window waits at least as long.
        w.notBefore =
          now + (failure.retryAfterMs ?? backoffDelay(w.attempts, this.opts.backoff, this.random));
        break;
      case 'ask-less': {
        // An older, longer window still in flight must not undo a shrink that already happened.
        const before = this.maxWindow;
        this.maxWindow = Math.max(1, Math.min(this.maxWindow, Math.floor(minutes / 2)));
        if (minutes <= this.maxWindow)
          w.notBefore = now + backoffDelay(w.attempts, this.opts.backoff, this.random);
        // This window and every other one waiting that is longer than the new size would time out the same way
        // (each 504 costs the API a whole execution timeout): split them all now.
        this.resplit();
        if (this.maxWindow < before)
          this.deps.log.info(
            { window_minutes: this.maxWindow },
            failure.kind === 'timeout'
              ? 'metrics API timed out (504): smaller windows'
              : 'metrics answer over api.max_body_bytes: smaller windows',
          );
        this.setError(describe, false, causeOf(failure));
        break;
      }
      case 'token-refused':
        this.deps.authFailed();
        if (!this.authDown) this.deps.log.warn({ error: describe }, 'metrics API refuses the token');
        this.authDown = true;
        w.notBefore = now + backoffDelay(this.authAttempts++, this.opts.authBackoff, () => 1);
        this.setError(describe, false);
        this.loggedCause = causeOf(failure);
        break;
      case 'not-sent':
        // The token file is missing, unreadable or empty (config/token.ts): nothing was sent. The file is read
        // again at each retry (a Secret mounted late, a fixed path), with the usual backoff.
        w.notBefore = now + backoffDelay(w.attempts, this.opts.backoff, this.random);
        this.setError(describe, false);
        break;
      case 'give-up':
        // A first read gives its window up: counted as skipped, and the walk goes on.
        w.state = 'skipped';
        this.deps.log.warn(
          { start: new Date(w.start).toISOString(), minutes, error: describe },
          'metrics API rejected a window; its minutes are skipped',
        );
        this.setError(describe, true);
        break;
      case 'backoff':
        w.notBefore = now + backoffDelay(w.attempts, this.opts.backoff, this.random);
        this.setError(describe, false, causeOf(failure));
        break;
      default: {
        const _never: never = decision;
      }
    }
    this.alarm.wake();
  }

  private newWindow(start: number, end: number): PlannedWindow {
    return { start, end, state: 'waiting', notBefore: 0, attempts: 0, sizedAt: this.maxWindow };
  }

  /**
   * Splits every waiting window longer than the current size into windows of that size, in place. The pieces
   * keep their window's notBefore: one waiting out a backoff (after a 5xx, say) still waits it out.
   */
  private resplit(): void {
    const len = this.maxWindow * MINUTE;
    this.windows = this.windows.flatMap((w) => {
      if (w.state !== 'waiting' || w.end - w.start <= len) return [w];
      const out: PlannedWindow[] = [];
      for (let s = w.start; s < w.end; s += len) {
        out.push({ ...this.newWindow(s, Math.min(w.end, s + len)), notBefore: w.notBefore });
      }
      return out;
    });
  }

  private setError(text: string, reachable: boolean, cause?: string): void {
    this.status.lastError = text;
    this.status.lastErrorAt = this.deps.clock.now();
    this.status.errorsSinceSuccess++;
    if (!reachable) this.status.up = false;
    // One warning per change of cause (a status or a kind), not per window: during catch-up one outage fails
    // every window in flight, each with its own text (positions, times).
    if (cause !== undefined && cause !== this.loggedCause) {
      this.loggedCause = cause;
      this.deps.log.warn({ cause, error: text }, 'metrics request failed; retrying with backoff');
    }
  }

  /** Hands over finished windows at the head, in order, and moves the cursor over them. */
  private advance(): void {
    for (;;) {
      const head = this.windows[0];
      if (!head || (head.state !== 'done' && head.state !== 'skipped')) break;
      this.windows.shift();
      if (head.state === 'done') this.deps.handOver(head.start, head.end, head.response!, head.readAt!);
      else this.deps.skip(head.start, head.end, 'rejected');
      this.cursor = head.end;
    }
    this.publish();
  }

  private publish(): void {
    this.status.cursor = this.cursor;
    this.status.maxWindowMinutes = this.maxWindow;
    this.deps.onStatus({ ...this.status });
  }

  private nextWake(): number {
    let at = Number.POSITIVE_INFINITY;
    const now = this.deps.clock.now();
    // Windows held back by a crowded gate wait for a wake (one of ours settling), not for a time.
    for (const s of this.windows)
      if (s.state === 'waiting' && !(this.held && s.notBefore <= now)) at = Math.min(at, s.notBefore);
    if (this.ahead < this.opts.maxInFlight)
      at = Math.min(at, this.planned + this.opts.windowMs + this.opts.delayMs);
    return at;
  }
}
