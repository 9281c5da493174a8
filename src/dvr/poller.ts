/**
 * The DVR poller of one account (the contract: src/poll/poller.ts): a round every `dvr.interval` polls every
 * configured stream through the account's upstream and maps the answers (./mapping.ts). A round never throws:
 * every failure is logged once per change, counted (cdn_up 0, parse errors) and retried at the next interval.
 */
import type { Clock } from '../clock.js';
import { describeError, isApiError, isRefusal } from '../http/errors.js';
import type { Logger } from '../log.js';
import { everyInterval, type Poller, type PollReporter } from '../poll/poller.js';
import type { Requester } from '../poll/upstream.js';
import { type DvrBodyParser, DvrClient } from './client.js';
import type { DvrMapping, StreamHealth } from './mapping.js';

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
 * One round polls every configured stream. `cdn_up{api="dvr-net"}` says whether the API answers for the account:
 * 1 when at least one stream got its answer or every failure is the stream's own (404), and no request was refused
 * for the token (401/403: the account is down, whatever other streams did). Which stream fails is
 * `cdn_dvr_stream_up{account,stream}`, set for every configured stream every round.
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
  return everyInterval(d.intervalMs, d.clock, d.log, async () => {
    const failed = new Map<string, StreamFailure & { err: unknown }>();
    let answered = 0;
    let apiFailures = 0;
    // async: a getStream that throws before it returns a promise fails its stream, not the round.
    const outcomes = await Promise.allSettled(
      streams.map(async (stream) => client.getStream(account, stream)),
    );
    // Applied in the configured order, whichever answer came first: the caps refuse the same hosts either way.
    streams.forEach((stream, i) => {
      const outcome = outcomes[i]!;
      try {
        if (outcome.status === 'rejected') throw outcome.reason;
        const res = outcome.value;
        d.report.answer(res);
        lastRows.set(stream, d.mapping.applyStream(account, stream, res.entries, d.clock.now() / 1000));
        d.mapping.streamPolled(account, stream, true);
        answered++;
      } catch (err) {
        // An unknown stream no longer exists: its series go. Other failures keep the last values.
        const unknown = streamOnly(err);
        if (unknown) {
          d.mapping.removeStream(account, stream);
          lastRows.delete(stream);
        } else {
          apiFailures++;
        }
        d.mapping.streamPolled(account, stream, false);
        failed.set(stream, { error: describeError(err), unknown, err });
      }
    });
    // In the configured order, whichever answer came first (so the error text changes only when the errors do).
    const failedInOrder = new Map<string, StreamFailure>();
    const failures: unknown[] = [];
    for (const stream of streams) {
      const f = failed.get(stream);
      if (!f) continue;
      failedInOrder.set(stream, { error: f.error, unknown: f.unknown });
      failures.push(f.err);
    }
    d.health(
      streams.flatMap((stream) => lastRows.get(stream) ?? []),
      failedInOrder,
    );
    const errors = [...failedInOrder].map(([stream, f]) => `${stream}: ${f.error}`);
    const error = errors.length ? errors.join('; ') : undefined;
    const ok = !failures.some(isRefusal) && (answered > 0 || apiFailures === 0);
    if (error !== lastError) {
      if (error) d.log.warn({ api: 'dvr-net', error }, 'DVR poll failed');
      else if (lastError) d.log.info({ api: 'dvr-net' }, 'DVR poll recovered');
      lastError = error;
    }
    d.report.result({ ok, error, failures });
  });
}
