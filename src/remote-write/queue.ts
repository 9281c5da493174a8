/**
 * The remote-write queue: batches offered in order, cut into requests (./encode.ts), sent one at a time by one
 * loop (./client.ts), retried until accepted or refused for good. It implements RemoteWriter (./types.ts).
 *
 * Contracts:
 * - One request in flight: the requests of a batch, and the batches, go in the order offered, so each series'
 *   samples reach the receiver in time order.
 * - A retryable failure (5xx, 429, no answer) sends the same request again after a backoff (full jitter between 0
 *   and 30 ms doubling up to 5 s, Prometheus' min_backoff and max_backoff; a 429's Retry-After instead when it
 *   gives one), forever until close(): the bound on pending samples is what limits memory, and the caller holds
 *   what does not fit. Each failed attempt counts its samples as `retried`.
 * - A refusal for good (any other status) drops that request's samples (`dropped`) and the queue goes on with the
 *   next. It is logged once per change of its reason (the receiver's words with numbers and label sets taken out,
 *   so "out of bounds" for one series and for the next is one reason).
 * - Pending samples go down as each request ends, sent or dropped; room() waiters are woken then.
 * - A batch's `done` is called after its last request ended; an exception it throws is logged, never raised here.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { backoffDelay } from '../poll/backoff.js';
import type { SendResult } from './client.js';
import { countSamples, cutRequests, encodeRequestBody, type Span } from './encode.js';
import type { RemoteWriteMetrics } from './metrics.js';
import { type RemoteWriter, RemoteWriterClosed, type WriteBatch, type WriteOutcome } from './types.js';

/** Prometheus' remote-write queue defaults (queue_config.min_backoff and max_backoff). */
export const BACKOFF = { baseMs: 30, capMs: 5000 } as const;

export interface Sender {
  send(
    body: Uint8Array,
    signal: AbortSignal,
    onAnswer: (code: number | 'error') => void,
  ): Promise<SendResult>;
  close(): Promise<void>;
}

export interface QueueOptions {
  maxPendingSamples: number;
  maxSamplesPerSend: number;
}

export interface QueueDeps {
  sender: Sender;
  clock: Clock;
  log: Logger;
  metrics: RemoteWriteMetrics;
  /** For the backoff's jitter: [0, 1). */
  random?: () => number;
}

interface Entry {
  batch: WriteBatch;
  done: (outcome: WriteOutcome) => void;
  spans: Generator<Span>;
  dropped: boolean;
}

interface Waiter {
  samples: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * A reason without what changes from one request to the next (numbers, label sets, quoted values), after the
 * status that came with it (none: no answer).
 */
export function reasonKey(status: number | undefined, reason: string): string {
  const words = reason
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/"[^"]*"/g, '""')
    .replace(/\d+/g, '#')
    .toLowerCase();
  return `${status ?? 'none'} ${words}`;
}

export class WriteQueue implements RemoteWriter {
  readonly #entries: Entry[] = [];
  #pending = 0;
  #closed = false;
  readonly #stop = new AbortController();
  #wake: (() => void) | undefined;
  readonly #waiters: Waiter[] = [];
  readonly #drained: (() => void)[] = [];
  readonly #loop: Promise<void>;
  #closing: Promise<void> | undefined;
  /** The last retry reason logged (undefined: the last request went through). */
  #failing: string | undefined;
  #lastDrop: string | undefined;

  constructor(
    private readonly options: QueueOptions,
    private readonly deps: QueueDeps,
  ) {
    this.#loop = this.#run().catch((err: unknown) => {
      // Not expected (the sender never throws): logged, and the queue stops taking batches.
      this.#closed = true;
      this.deps.log.error({ err: (err as Error).message }, 'remote write: the send loop stopped');
    });
  }

  #fits(samples: number): boolean {
    return this.#pending === 0 || this.#pending + samples <= this.options.maxPendingSamples;
  }

  offer(batch: WriteBatch, done: (outcome: WriteOutcome) => void): boolean {
    if (this.#closed) return false;
    const samples = countSamples(batch.series);
    if (!this.#fits(samples)) return false;
    this.#entries.push({
      batch,
      done,
      spans: cutRequests(batch.series, this.options.maxSamplesPerSend),
      dropped: false,
    });
    this.#setPending(this.#pending + samples);
    this.#wake?.();
    return true;
  }

  pendingSamples(): number {
    return this.#pending;
  }

  room(samples: number, signal?: AbortSignal): Promise<void> {
    if (this.#closed) return Promise.reject(new RemoteWriterClosed());
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#fits(samples)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        samples,
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  forget(account: string): void {
    this.deps.metrics.forget(account);
  }

  close(deadlineMs: number): Promise<void> {
    this.#closing ??= this.#shutDown(deadlineMs);
    return this.#closing;
  }

  async #shutDown(deadlineMs: number): Promise<void> {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) {
      w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new RemoteWriterClosed());
    }
    const wait = deadlineMs - this.deps.clock.now();
    if (this.#entries.length > 0 && wait > 0) {
      const timer = new AbortController();
      const drained = new Promise<void>((resolve) => this.#drained.push(resolve));
      await Promise.race([drained, this.deps.clock.sleep(wait, timer.signal).catch(() => {})]);
      timer.abort();
    }
    const left = this.#entries.length;
    if (left > 0)
      this.deps.log.warn(
        { batches: left, samples: this.#pending },
        'remote write: stopped with samples not sent (the deadline of the shutdown came first)',
      );
    this.#stop.abort();
    this.#wake?.();
    await this.#loop;
    await this.deps.sender.close();
  }

  #setPending(n: number): void {
    this.#pending = n;
    this.deps.metrics.setPending(n);
    if (this.#waiters.length === 0) return;
    for (let i = 0; i < this.#waiters.length; ) {
      const w = this.#waiters[i]!;
      if (!this.#fits(w.samples)) {
        i++;
        continue;
      }
      this.#waiters.splice(i, 1);
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve();
    }
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const entry = this.#entries[0];
      if (!entry) {
        for (const resolve of this.#drained.splice(0)) resolve();
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      const next = entry.spans.next();
      if (next.done) {
        this.#entries.shift();
        this.#finish(entry);
        continue;
      }
      const span = next.value;
      const outcome = await this.#sendSpan(entry, span, signal);
      if (outcome === 'stopped') return;
      if (outcome === 'dropped') entry.dropped = true;
      this.#setPending(this.#pending - span.samples);
    }
  }

  #finish(entry: Entry): void {
    const outcome: WriteOutcome = entry.dropped ? 'dropped' : 'sent';
    this.deps.metrics.settled(entry.batch.account, entry.batch.end);
    try {
      entry.done(outcome);
    } catch (err) {
      this.deps.log.error(
        { account: entry.batch.account, err: (err as Error).message },
        'remote write: a batch done callback threw',
      );
    }
  }

  /** Sends one request until it is sent or dropped; 'stopped' when close() ended the wait. */
  async #sendSpan(entry: Entry, span: Span, signal: AbortSignal): Promise<WriteOutcome | 'stopped'> {
    const { metrics, sender, clock, log } = this.deps;
    let body: Uint8Array;
    try {
      body = await encodeRequestBody(entry.batch.series, span);
    } catch (err) {
      // Only a series that breaks the contract (a label that is not a string) gets here: it cannot be sent, ever.
      metrics.samples('dropped', span.samples);
      this.#logDrop(undefined, `not encodable: ${(err as Error).message}`, span.samples, entry.batch.account);
      return 'dropped';
    }
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) return 'stopped';
      const result = await sender.send(body, signal, (code) => metrics.request(code));
      if (signal.aborted) return 'stopped';
      if (result.kind === 'sent') {
        metrics.samples('sent', span.samples);
        if (this.#failing !== undefined) log.info('remote write: requests go through again');
        this.#failing = undefined;
        return 'sent';
      }
      if (result.kind === 'drop') {
        metrics.samples('dropped', span.samples);
        this.#logDrop(result.status, result.reason, span.samples, entry.batch.account);
        return 'dropped';
      }
      metrics.samples('retried', span.samples);
      const key = reasonKey(result.status, result.reason);
      if (key !== this.#failing) {
        this.#failing = key;
        log.warn(
          { reason: result.reason, samples: span.samples },
          'remote write: request failed, sending it again after a backoff (logged once per reason)',
        );
      }
      const delay =
        result.retryAfterMs !== undefined && result.retryAfterMs > 0
          ? result.retryAfterMs
          : backoffDelay(attempt, BACKOFF, this.deps.random);
      try {
        await clock.sleep(delay, signal);
      } catch {
        return 'stopped';
      }
    }
  }

  #logDrop(status: number | undefined, reason: string, samples: number, account: string): void {
    const key = reasonKey(status, reason);
    if (key === this.#lastDrop) return;
    this.#lastDrop = key;
    this.deps.log.warn(
      { reason, samples, account },
      'remote write: the receiver refused samples for good; they are dropped, not sent again (logged once per reason)',
    );
  }
}
