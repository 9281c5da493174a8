/**
 * One account's windows read for a backfill, each until it has an answer: through the account's upstream (its
 * token's request gate: requests_per_second, concurrency, the pause after a 429), with the exporter's one
 * classification of failures (src/traffic/retry-decision.ts) and a consequence of its own for a command that ends:
 *
 * - 5xx, no answer, an answer not of the documented shape, 429: the same window again after a backoff
 *   (src/poll/backoff.ts; a 429 waits its Retry-After, and the gate is paused by it too), as long as it takes.
 * - 504 or an answer over api.max_body_bytes: the window asked for too much at once; it is read as two halves
 *   (whole minutes), each written as a window of its own. A one-minute window that still fails is retried.
 * - 422: the API refuses these minutes for good: the window is skipped (counted, logged) and the run goes on.
 * - 401/403, an unreadable token file, any other 4xx: retrying does not help; the backfill stops (BackfillStop)
 *   with the reason, its progress kept for `--resume` once it is fixed.
 */
import { type Clock, MINUTE } from '../clock.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { type BackoffPolicy, backoffDelay } from '../poll/backoff.js';
import type { TrafficResponse } from '../traffic/response.js';
import { asFailure, retryDecision } from '../traffic/retry-decision.js';

/** A failure retrying cannot mend: the backfill stops, its progress kept. */
export class BackfillStop extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackfillStop';
  }
}

export type WindowResult =
  | { kind: 'answer'; start: number; end: number; response: TrafficResponse }
  | { kind: 'rejected'; start: number; end: number; reason: string };

export type FetchWindow = (start: number, end: number) => Promise<TrafficResponse>;

export interface ReaderDeps {
  clock: Clock;
  log: Logger;
  backoff: BackoffPolicy;
  random: () => number;
  /** Aborts the waits between attempts (the interruption of the backfill). */
  signal: AbortSignal;
  /** A failed attempt that will be tried again. */
  onRetry?: () => void;
}

export class WindowReader {
  /** The cause last logged, so that an outage logs once, not once per window. */
  private logged = '';

  constructor(
    private readonly account: string,
    private readonly fetch: FetchWindow,
    private readonly d: ReaderDeps,
  ) {}

  /** Reads [start, end): one result, or several when a 504 split it, in time order. */
  async read(start: number, end: number): Promise<WindowResult[]> {
    for (let attempt = 0; ; attempt++) {
      this.d.signal.throwIfAborted();
      try {
        const response = await this.fetch(start, end);
        return [{ kind: 'answer', start, end, response }];
      } catch (err) {
        if (this.d.signal.aborted) throw err;
        const failure = asFailure(err);
        const why = describeError(err);
        const decision = retryDecision(failure);
        if (decision === 'give-up') {
          this.d.log.warn(
            {
              account: this.account,
              start: new Date(start).toISOString(),
              minutes: (end - start) / MINUTE,
              error: why,
            },
            'metrics API rejected a window (422); it is skipped',
          );
          return [{ kind: 'rejected', start, end, reason: why }];
        }
        if (decision === 'ask-less' && end - start > MINUTE) {
          const mid = start + Math.floor((end - start) / MINUTE / 2) * MINUTE;
          this.d.log.info(
            { account: this.account, start: new Date(start).toISOString(), minutes: (end - start) / MINUTE },
            'metrics API could not answer the whole window (504 or too large): reading it in halves',
          );
          return [...(await this.read(start, mid)), ...(await this.read(mid, end))];
        }
        if (decision === 'token-refused')
          throw new BackfillStop(
            `account ${this.account}: the metrics API refuses the token (${why}); fix the credential, then run again with --resume`,
          );
        if (decision === 'not-sent') throw new BackfillStop(`account ${this.account}: ${why}`);
        if (failure.kind === 'invalid')
          throw new BackfillStop(`account ${this.account}: the metrics API refused the request (${why})`);
        const cause = `${failure.status ?? failure.kind}`;
        if (cause !== this.logged) {
          this.logged = cause;
          this.d.log.warn(
            { account: this.account, error: why },
            'metrics request failed; retrying with backoff',
          );
        }
        this.d.onRetry?.();
        const wait =
          decision === 'wait' && failure.retryAfterMs !== undefined
            ? failure.retryAfterMs
            : backoffDelay(attempt, this.d.backoff, this.d.random);
        await this.d.clock.sleep(wait, this.d.signal);
      }
    }
  }
}
