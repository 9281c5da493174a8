/**
 * The DVR and recordings poll rounds of one account. A round never throws: every failure is logged once per change,
 * counted (cdn_up 0, parse errors) and retried at the next interval.
 */
import type { Clock } from '../clock.js';
import type { DvrProcess, StreamHealth } from '../dvr/process.js';
import type { DvrStreamResponse } from '../dvr/response.js';
import type { ParsedAnswer } from '../http/answers.js';
import { describeError, isApiError, isRefusal } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { RecordingSummary, RecordingsProcess } from '../recordings/process.js';
import type { RecordingListResponse } from '../recordings/response.js';

/** The outcome of one round. */
export interface RoundResult {
  ok: boolean;
  /** What failed, as one line for logs and pages (undefined when ok). */
  error?: string;
  /** The failures themselves (ApiError values, usually): decisions are made on these, never on `error`'s text. */
  failures: readonly unknown[];
}

/** What a round reports, for cdn_up, the landing page, readiness and the token-refresh policy. */
export interface RoundReporter {
  result(r: RoundResult): void;
  /** Every answer that arrived: what it had that could not be used is counted and logged (AnswerAudit, ../http/answers.ts). */
  answer(res: ParsedAnswer): void;
}

export interface DvrRoundDeps {
  account: string;
  streams: readonly string[];
  clock: Clock;
  /** The account's logger (a child carrying `account`); the round's lines do not repeat the key. */
  log: Logger;
  getStream: (account: string, stream: string) => Promise<DvrStreamResponse>;
  process: DvrProcess;
  report: RoundReporter;
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
export function dvrRound(d: DvrRoundDeps): () => Promise<void> {
  let lastError: string | undefined;
  /** Per stream, the health of its last successful poll: a failed poll keeps it, as it keeps the series. */
  const lastRows = new Map<string, StreamHealth[]>();
  return async () => {
    const failed = new Map<string, StreamFailure & { err: unknown }>();
    let answered = 0;
    let apiFailures = 0;
    // async: a getStream that throws before it returns a promise fails its stream, not the round.
    const outcomes = await Promise.allSettled(
      d.streams.map(async (stream) => d.getStream(d.account, stream)),
    );
    // Applied in the configured order, whichever answer came first: the caps refuse the same hosts either way.
    d.streams.forEach((stream, i) => {
      const outcome = outcomes[i]!;
      try {
        if (outcome.status === 'rejected') throw outcome.reason;
        const res = outcome.value;
        d.report.answer(res);
        lastRows.set(stream, d.process.applyStream(d.account, stream, res.entries, d.clock.now() / 1000));
        d.process.streamPolled(d.account, stream, true);
        answered++;
      } catch (err) {
        // An unknown stream no longer exists: its series go. Other failures keep the last values.
        const unknown = streamOnly(err);
        if (unknown) {
          d.process.removeStream(d.account, stream);
          lastRows.delete(stream);
        } else {
          apiFailures++;
        }
        d.process.streamPolled(d.account, stream, false);
        failed.set(stream, { error: describeError(err), unknown, err });
      }
    });
    // In the configured order, whichever answer came first (so the error text changes only when the errors do).
    const failedInOrder = new Map<string, StreamFailure>();
    const failures: unknown[] = [];
    for (const stream of d.streams) {
      const f = failed.get(stream);
      if (!f) continue;
      failedInOrder.set(stream, { error: f.error, unknown: f.unknown });
      failures.push(f.err);
    }
    d.health(
      d.streams.flatMap((stream) => lastRows.get(stream) ?? []),
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
  };
}

export interface RecordingsRoundDeps {
  account: string;
  /** The account's logger (a child carrying `account`); the round's lines do not repeat the key. */
  log: Logger;
  list: (account: string) => Promise<RecordingListResponse>;
  process: RecordingsProcess;
  report: RoundReporter;
  summary: (rows: RecordingSummary[]) => void;
}

export function recordingsRound(d: RecordingsRoundDeps): () => Promise<void> {
  let lastError: string | undefined;
  return async () => {
    let error: string | undefined;
    const failures: unknown[] = [];
    try {
      const res = await d.list(d.account);
      d.report.answer(res);
      d.summary(d.process.apply(d.account, res.settings));
    } catch (err) {
      error = describeError(err);
      failures.push(err);
    }
    if (error !== lastError) {
      if (error) d.log.warn({ api: 'recorder-cloud', error }, 'recordings poll failed');
      else if (lastError) d.log.info({ api: 'recorder-cloud' }, 'recordings poll recovered');
      lastError = error;
    }
    d.report.result({ ok: error === undefined, error, failures });
  };
}
