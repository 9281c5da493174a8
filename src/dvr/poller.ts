/**
 * The DVR poller of one account (the contract: src/poll/poller.ts): a round every `dvr.interval` polls every
 * configured stream through the account's upstream and maps the answers (./mapping.ts). A round never throws:
 * every failure is logged once per change, counted (cdn_up 0, parse errors) and retried at the next interval.
 *
 * A round keeps at most ROUND_IN_FLIGHT of its requests started and not yet applied, whatever the number of
 * streams: an account's streams are bounded only by what its rate can poll in `dvr.interval` (docs/configuration.md,
 * `dvr_streams`), and every request waiting in the gate holds its promise and an abort listener on the account's
 * stop signal. 400,000 streams started at once kept a core at 100 % for minutes (Node's addEventListener walks the
 * listeners already on the signal: quadratic) and outlived SIGTERM (issue 33, row 7).
 */
import type { Clock } from '../clock.js';
import { CEILINGS } from '../config/schema.js';
import { describeError, isApiError, isRefusal } from '../http/errors.js';
import type { Logger } from '../log.js';
import { pollEvery } from '../poll/interval.js';
import type { Poller, PollReporter } from '../poll/poller.js';
import type { Requester } from '../poll/upstream.js';
import { MAX_TEXT_CHARS } from '../server/landing.js';
import { type DvrBodyParser, DvrClient } from './client.js';
import type { DvrMapping, StreamHealth } from './mapping.js';
import type { DvrStreamResponse } from './response.js';

/**
 * A round's requests started and not yet applied, at most: the most requests a token's gate ever runs at once
 * (`api.concurrency`'s ceiling). More in the gate would not poll faster (the gate lets at most `concurrency` go,
 * at `requests_per_second`); they would only wait there.
 */
export const ROUND_IN_FLIGHT = CEILINGS.concurrency;

/**
 * The round's error line names failing streams up to this many characters, then counts the rest: the landing page
 * shows an error cut there anyway (src/server/landing.ts), and every failing stream is in `cdn_dvr_stream_up` and
 * the page's table of DVR problems. Naming them all made a 20 MB line for 400,000 unreachable streams.
 */
export const ERROR_LINE_CHARS = MAX_TEXT_CHARS;

export interface DvrPollerDeps {
  clock: Clock;
  /** The account's logger (a child carrying `account`); the round's lines do not repeat the key. */
  log: Logger;
  /** dvr.interval. */
  intervalMs: number;
  /** Reads a 2xx answer (default: inline; big ones off the event loop: src/offloop/pool.ts). */
  parse?: DvrBodyParser;
  mapping: DvrMapping;
  report: PollReporter;
  /**
   * After every round, for the landing page: the health of every host, and the configured streams whose poll
   * failed this round (stream -> its error), in the configured order.
   */
  health: (rows: StreamHealth[], failed: ReadonlyMap<string, StreamFailure>) => void;
}

export interface StreamFailure {
  /** describeError's text. */
  error: string;
  /** The API answered that it does not know the stream (404). */
  unknown: boolean;
}

/**
 * A failure of one stream, not of the API: the API answered, and the answer is that it does not know the stream
 * (404; the documents do not show this answer, the simulator and the CDN give it for a misspelt or deleted name).
 */
function streamOnly(err: unknown): boolean {
  return isApiError(err) && err.status === 404;
}

/**
 * Runs `task(i)` for i = 0..n-1, at most `width` of them started and not yet applied, and hands each outcome to
 * `apply` in index order, whichever settled first. Once `signal` aborts, nothing more starts and what is under way
 * is not waited for: resolves false. Resolves true once all n were applied; rejects if `apply` throws.
 */
export function inOrder<T>(
  n: number,
  width: number,
  signal: AbortSignal,
  task: (i: number) => Promise<T>,
  apply: (i: number, outcome: PromiseSettledResult<T>) => void,
): Promise<boolean> {
  const size = Math.max(1, Math.min(n, width));
  const ring: Array<PromiseSettledResult<T> | undefined> = new Array(size);
  let started = 0;
  let applied = 0;
  return new Promise<boolean>((resolve, reject) => {
    let finished = false;
    const finish = (completed: boolean) => {
      finished = true;
      signal.removeEventListener('abort', onAbort);
      resolve(completed);
    };
    const pump = () => {
      if (finished) return;
      try {
        while (applied < started && ring[applied % size] !== undefined) {
          const outcome = ring[applied % size]!;
          ring[applied % size] = undefined;
          apply(applied, outcome);
          applied++;
        }
        if (applied === n) return finish(true);
        if (signal.aborted) return finish(false);
        while (started < n && started < applied + size) {
          const i = started++;
          let p: Promise<T>;
          try {
            p = task(i);
          } catch (err) {
            p = Promise.reject(err);
          }
          void p
            .then(
              (value) => ({ status: 'fulfilled', value }) as const,
              (reason: unknown) => ({ status: 'rejected', reason }) as const,
            )
            .then((outcome) => {
              if (finished) return;
              ring[i % size] = outcome;
              pump();
            });
        }
      } catch (err) {
        finished = true;
        signal.removeEventListener('abort', onAbort);
        reject(err);
      }
    };
    const onAbort = () => pump();
    signal.addEventListener('abort', onAbort, { once: true });
    pump();
  });
}

/**
 * One round polls every configured stream. `cdn_up{api="dvr-net"}` says whether the API answers for the account:
 * 1 when at least one stream got its answer or every failure is the stream's own (404), and no request was refused
 * for the token (401/403: the account is down, whatever other streams did). Which stream fails is
 * `cdn_dvr_stream_up{account,stream}`, set for every configured stream every round. A round cut by the stop
 * reports nothing.
 */
export function dvrPoller(
  account: string,
  streams: readonly string[],
  upstream: Requester,
  d: DvrPollerDeps,
): Poller {
  const client = new DvrClient(upstream, d.parse);
  let lastError: string | undefined;
  /** Per stream, the health of its last successful poll: a failed poll keeps it, as it keeps the series. */
  const lastRows = new Map<string, StreamHealth[]>();

  async function round(signal: AbortSignal): Promise<void> {
    // In the configured order, whichever answer came first (so the caps refuse the same hosts, and the error text
    // changes only when the errors do).
    const failed = new Map<string, StreamFailure>();
    /** Error texts, one string each (400,000 streams failing alike hold one). */
    const texts = new Map<string, string>();
    /** The failures the error line names, and the first refusal: what the reporter decides on. */
    const failures: unknown[] = [];
    let refusal = false;
    let line = '';
    let unnamed = 0;
    let answered = 0;
    let apiFailures = 0;
    const fail = (stream: string, err: unknown) => {
      // An unknown stream no longer exists: its series go. Other failures keep the last values.
      const unknown = streamOnly(err);
      if (unknown) {
        d.mapping.removeStream(account, stream);
        lastRows.delete(stream);
      } else {
        apiFailures++;
      }
      d.mapping.streamPolled(account, stream, false);
      const described = describeError(err);
      const error = texts.get(described) ?? described;
      texts.set(error, error);
      failed.set(stream, { error, unknown });
      if (line.length < ERROR_LINE_CHARS) {
        line += `${line ? '; ' : ''}${stream}: ${error}`;
        failures.push(err);
        refusal ||= isRefusal(err);
      } else {
        unnamed++;
        if (!refusal && isRefusal(err)) {
          refusal = true;
          failures.push(err);
        }
      }
    };
    // async: a getStream that throws before it returns a promise fails its stream, not the round.
    const completed = await inOrder<DvrStreamResponse>(
      streams.length,
      ROUND_IN_FLIGHT,
      signal,
      async (i) => client.getStream(account, streams[i]!),
      (i, outcome) => {
        const stream = streams[i]!;
        try {
          if (outcome.status === 'rejected') throw outcome.reason;
          const res = outcome.value;
          d.report.answer(res);
          lastRows.set(stream, d.mapping.applyStream(account, stream, res.entries, d.clock.now() / 1000));
          d.mapping.streamPolled(account, stream, true);
          answered++;
        } catch (err) {
          fail(stream, err);
        }
      },
    );
    if (!completed) return;
    d.health(
      streams.flatMap((stream) => lastRows.get(stream) ?? []),
      failed,
    );
    const error = line
      ? unnamed > 0
        ? `${line}; and ${unnamed} more of the ${streams.length} streams (cdn_dvr_stream_up names them)`
        : line
      : undefined;
    const ok = !refusal && (answered > 0 || apiFailures === 0);
    if (error !== lastError) {
      if (error) d.log.warn({ api: 'dvr-net', error, failed: failed.size }, 'DVR poll failed');
      else if (lastError) d.log.info({ api: 'dvr-net' }, 'DVR poll recovered');
      lastError = error;
    }
    d.report.result({ ok, error, failures });
  }

  return {
    run: (signal) => pollEvery(d.intervalMs, d.clock, signal, () => round(signal), d.log),
  };
}
