/**
 * One gate per API token: every request made with that token (traffic windows, DVR, recordings, of every account
 * sharing it) passes through it. At most `concurrency` run at once, the rest wait in order. A window of task starts
 * would not be enough for the API's own count, which sees arrivals: a request released now may reach the server
 * tens of milliseconds later (a new connection, a TLS handshake, a busy event loop) while the next one goes out on
 * a warm socket at once. So the gate keeps the send times themselves under the rate, on the injected clock, and a
 * send time is the moment the request was written to a socket (`ticket.sent()`, called by the HTTP client), not
 * the moment it was released. Requests are paced (at most a tenth of a second's worth together, so the API sees an
 * even stream, not bursts), and a request leaves only when fewer than `rate` requests were written in the last
 * second (plus a small margin for the trip to the API); it waits while an earlier request that decides that is not
 * written yet. A request that settles without ever being written counts from its settle time.
 *
 * On a 429 the gate pauses until Retry-After and the rate drops below the ceiling; successes climb it back. The
 * 429s of requests released before the last cut are the same burst and do not cut again (as TCP cuts its window
 * once per round trip, not once per lost packet).
 */
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

/** Handed to each request: it tells the gate when the request was written to a socket. */
export interface SendTicket {
  /** When the gate let the request go (its clock). */
  readonly releasedAt: number;
  /** The request was written to a socket now. Idempotent: a request retried on another socket keeps its first. */
  sent(): void;
}

/** One request's place in the send window. */
interface Send {
  /** The socket write once known; until then the release. */
  at: number;
  /** True once written, or settled without a write. */
  known: boolean;
  /** Resolves when `known` turns true. */
  readonly settled: Promise<void>;
  resolve(): void;
}

function newSend(at: number): Send {
  let resolve = () => {};
  const settled = new Promise<void>((r) => {
    resolve = r;
  });
  return { at, known: false, settled, resolve };
}

/** Resolves with `p` (which never rejects), or rejects when `signal` aborts first. */
function abortable(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** The priority of a revisit of late data (src/traffic/revisit.ts): after every other waiting request. */
export const REVISIT_PRIORITY = 0;
/** The priority of every other request (first reads, DVR, recordings). */
export const NORMAL_PRIORITY = 1;

/** A deferred request's turn to enter the queue, or its abort. */
interface Deferred {
  enter(): void;
}

/** A request waiting for a place among the `concurrency` running. */
interface Waiting {
  start(): void;
  prev?: Waiting;
  next?: Waiting;
}

/**
 * The requests waiting for a place, first in, first out, every operation O(1). An exporter with 10,000 accounts
 * holds ~10,000-40,000 of them (every account's first windows) for minutes, so each costs a node and the abort
 * listener of its account's signal, nothing more: p-queue's task (its async context, options, an AbortController
 * per task, a promise chain) made starting 10,000 accounts hold ~10 kB each, and the garbage collections of that
 * memory stalled the event loop over 100 ms (issue 25, row 7). Dropping a waiting request is O(1): with p-queue's
 * own queue it was a scan, and stopping 10,000 accounts blocked the loop 15 s.
 */
class WaitingLine {
  private first?: Waiting;
  private last?: Waiting;
  size = 0;

  push(w: Waiting): void {
    w.prev = this.last;
    if (this.last) this.last.next = w;
    else this.first = w;
    this.last = w;
    this.size++;
  }

  shift(): Waiting | undefined {
    const w = this.first;
    if (w) this.remove(w);
    return w;
  }

  /** Takes `w` out of the line; one that is not in it (started already) is left alone. */
  remove(w: Waiting): void {
    if (w !== this.first && w.prev === undefined) return;
    if (w.prev) w.prev.next = w.next;
    else this.first = w.next;
    if (w.next) w.next.prev = w.prev;
    else this.last = w.prev;
    w.prev = undefined;
    w.next = undefined;
    this.size--;
  }
}

/** Requests that may leave together: this many seconds' worth at the current rate (at least one). */
const BURST_SECONDS = 0.1;

export class RequestGate {
  /** Requests waiting for a place among the running ones. */
  private readonly line = new WaitingLine();
  /** Requests started (waiting for their turn on the clock, or let go) and not settled. */
  private running = 0;
  private readonly concurrency: number;
  private readonly max: number;
  private rate: number;
  private pausedUntil = 0;
  /** When the rate was last cut (-Infinity: never). */
  private lastCut = Number.NEGATIVE_INFINITY;
  /** The latest requests, in release order (at most `ceil(max)` kept). */
  private readonly sends: Send[] = [];
  private readonly marginMs: number;
  private successes = 0;
  private readonly clock: Clock;
  private readonly recoverAfter: number;
  private readonly defaultPauseMs: number;
  /** Requests below NORMAL_PRIORITY, in order, waiting for the queue to hold nothing else. */
  private readonly deferred: Deferred[] = [];
  private releasedCount = 0;

  constructor(opts: GateOptions) {
    this.max = opts.requestsPerSecond;
    this.rate = opts.requestsPerSecond;
    this.clock = opts.clock;
    this.recoverAfter = opts.recoverAfter ?? 10;
    this.defaultPauseMs = opts.defaultPauseMs ?? 1000;
    this.marginMs = opts.marginMs ?? 25;
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)
      throw new RangeError(`request gate: concurrency must be an integer >= 1, got ${opts.concurrency}`);
    this.concurrency = opts.concurrency;
  }

  /** Requests waiting or running. */
  get length(): number {
    return this.line.size + this.running;
  }

  /**
   * Requests under way in real time, not waiting on the clock: let go and not settled (being sent, answered or
   * read), or queued while a place is free (about to start). A test driving a FakeClock moves it on only when this
   * is 0: nothing real is under way that the move would overtake.
   */
  get underWay(): number {
    const held = this.running < this.concurrency ? this.line.size : 0;
    return this.releasedCount + held;
  }

  /**
   * A full round of requests waits for a place (`concurrency` of them or more): a caller with a request under way
   * already should hold its next (src/traffic/walker.ts), so many accounts queue one request each, not several.
   */
  get crowded(): boolean {
    return this.line.size >= this.concurrency;
  }

  /** The rate currently allowed, requests per second (the ceiling unless 429s lowered it). */
  get currentRate(): number {
    return this.rate;
  }

  /**
   * Runs `fn` when the gate allows. `fn` should call `ticket.sent()` when its request is written to a socket;
   * without that, the request counts from when it settles (safe, but slower). Aborting `signal` drops the request
   * while it waits for its place or its turn (it rejects); a request already sent is left to finish.
   *
   * `priority`: everything runs at NORMAL_PRIORITY except the revisits of late data (REVISIT_PRIORITY). Those
   * wait outside the queue, in order, and enter it one at a time only when no other request is waiting in it: a
   * revisit never goes before a first read that was waiting, and takes a turn only when the token has one to
   * spare. (Not priorities within the queue: with p-queue's and a strict interval, a lower-priority task was seen
   * to stay queued for good while others kept arriving.)
   */
  run<T>(
    fn: (ticket: SendTicket) => Promise<T>,
    signal?: AbortSignal,
    priority = NORMAL_PRIORITY,
  ): Promise<T> {
    if (priority >= NORMAL_PRIORITY) return this.enqueue(fn, signal);
    return this.deferredTurn(signal).then(() => this.enqueue(fn, signal));
  }

  /** Resolves when a deferred request may enter the queue; rejects when `signal` aborts first. */
  private deferredTurn(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.line.size === 0 && this.deferred.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const entry: Deferred = {
        enter: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.deferred.indexOf(entry);
        if (i >= 0) this.deferred.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.deferred.push(entry);
    });
  }

  /** Lets the oldest deferred request in once nothing else waits in the queue. */
  private admitDeferred(): void {
    if (this.line.size === 0) this.deferred.shift()?.enter();
  }

  /**
   * Waits for a place among the `concurrency` running, in order, then runs `fn` in its turn. Aborting `signal`
   * drops a request still waiting for its place (it rejects) and ends the wait for its turn on the clock; one
   * already let go is left to finish.
   */
  private enqueue<T>(fn: (ticket: SendTicket) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.line.remove(waiting);
        reject(signal?.reason);
        this.admitDeferred();
      };
      const waiting: Waiting = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          this.running++;
          this.runStarted(fn, signal).then(resolve, reject);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.line.push(waiting);
      this.startWaiting();
    });
  }

  /** Starts waiting requests while places are free. */
  private startWaiting(): void {
    while (this.running < this.concurrency) {
      const waiting = this.line.shift();
      if (!waiting) return;
      waiting.start();
    }
  }

  /** A started request: its turn on the clock, then `fn`; its place goes to the next waiting one when it settles. */
  private async runStarted<T>(fn: (ticket: SendTicket) => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      this.admitDeferred();
      const send = await this.waitTurn(signal);
      const ticket: SendTicket = { releasedAt: send.at, sent: () => this.written(send) };
      this.releasedCount++;
      try {
        return await fn(ticket);
      } finally {
        this.releasedCount--;
        this.written(send);
      }
    } finally {
      this.running--;
      this.admitDeferred();
      this.startWaiting();
    }
  }

  /**
   * A 429: stop every request of this token until Retry-After, and slow down. `releasedAt` is the refused
   * request's ticket time: one released before the last cut belongs to the burst that caused it, and only
   * extends the pause.
   */
  rateLimited(retryAfterMs?: number, releasedAt?: number): void {
    const now = this.clock.now();
    const pause = retryAfterMs !== undefined && retryAfterMs >= 0 ? retryAfterMs : this.defaultPauseMs;
    this.pausedUntil = Math.max(this.pausedUntil, now + pause);
    this.successes = 0;
    if (releasedAt !== undefined && releasedAt < this.lastCut) return;
    this.rate = Math.max(this.max / 8, this.rate / 2);
    this.lastCut = now;
  }

  /**
   * Counts the whole budget as spent at `at`: the first request waits a full window after it. For a process that
   * follows one stopped a moment ago (a crash loop, a SIGKILL), whose requests of its last second are unknown
   * here: the API's count still holds them, and the two processes together must stay under the rate.
   */
  spentAt(at: number): void {
    for (let i = 0; i < Math.ceil(this.max); i++) {
      const send = newSend(at);
      this.written(send);
      this.sends.push(send);
    }
    while (this.sends.length > Math.ceil(this.max)) this.sends.shift();
  }

  succeeded(): void {
    if (this.rate >= this.max) return;
    if (++this.successes >= this.recoverAfter) {
      this.successes = 0;
      this.rate = Math.min(this.max, this.rate * 1.5);
    }
  }

  private written(send: Send): void {
    if (send.known) return;
    send.at = this.clock.now();
    send.known = true;
    send.resolve();
  }

  /** Resolves when this request may leave, and records it (check and record with no await between). */
  private async waitTurn(signal?: AbortSignal): Promise<Send> {
    for (let i = 0; i < 10_000; i++) {
      const now = this.clock.now();
      let at = this.pausedUntil;
      let unknown: Send | undefined;
      for (const rule of this.rules()) {
        if (!rule.send.known) unknown = rule.send;
        else at = Math.max(at, rule.send.at + rule.spacingMs);
      }
      if (unknown) {
        // A request that decides this one's turn has not reached a socket yet: we cannot know when it arrives.
        await abortable(unknown.settled, signal);
        continue;
      }
      if (at <= now) {
        const send = newSend(now);
        this.sends.push(send);
        if (this.sends.length > Math.ceil(this.max)) this.sends.shift();
        return send;
      }
      await this.clock.sleep(at - now, signal);
    }
    throw new Error('request gate: no turn after 10000 waits');
  }

  /**
   * The earlier requests the next one must keep its distance from: the k-th latest at least k windows / rate
   * back, for two k. Pacing, k = a tenth of a second's worth (at least 1): requests reach the API as an even
   * stream, not as bursts (a burst queues at the API, whose count then sees arrivals late and close together).
   * Counting, k = floor(rate): fewer than `rate` in any window, even where pacing alone would let a fractional
   * rate round up. Below one per second: the latest, 1 / rate windows back.
   */
  private rules(): Array<{ send: Send; spacingMs: number }> {
    const windowMs = 1000 + this.marginMs;
    const out: Array<{ send: Send; spacingMs: number }> = [];
    const burst = Math.max(1, Math.floor(this.rate * BURST_SECONDS));
    for (const k of new Set([burst, Math.max(1, Math.floor(this.rate))])) {
      const send = this.sends[this.sends.length - k];
      if (send) out.push({ send, spacingMs: (k * windowMs) / this.rate });
    }
    return out;
  }
}
