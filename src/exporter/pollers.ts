/**
 * The DVR and recordings poll rounds of one account. A round never throws: every failure is logged once per change,
 * counted (cdn_up 0, parse errors) and retried at the next interval.
 */
import type { Clock } from '../clock.js';
import type { DvrProcess, StreamHealth } from '../dvr/process.js';
import type { DvrStreamResponse } from '../dvr/response.js';
import type { ParsedAnswer } from '../http/answers.js';
import { describeError, isApiError } from '../http/errors.js';
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
  /** Every answer that arrived: what it had that could not be used is counted and logged (./answers.ts). */
  answer(res: ParsedAnswer): void;
}

export interface DvrRoundDeps {
  account: string;
  streams: readonly string[];
  clock: Clock;
  log: Logger;
  getStream: (account: string, stream: string) => Promise<DvrStreamResponse>;
  process: DvrProcess;
  report: RoundReporter;
  /** Health of every host after the round, for the landing page. */
  health: (rows: StreamHealth[]) => void;
}

export function dvrRound(d: DvrRoundDeps): () => Promise<void> {
  let lastError: string | undefined;
  /** Per stream, the health of its last successful poll: a failed poll keeps it, as it keeps the series. */
  const lastRows = new Map<string, StreamHealth[]>();
  return async () => {
    const failed = new Map<string, { text: string; err: unknown }>();
    await Promise.all(
      d.streams.map(async (stream) => {
        try {
          const res = await d.getStream(d.account, stream);
          d.report.answer(res);
          lastRows.set(stream, d.process.applyStream(d.account, stream, res.entries, d.clock.now() / 1000));
        } catch (err) {
          // An unknown stream no longer exists: its series go. Other failures keep the last values.
          if (isApiError(err) && err.status === 404) {
            d.process.removeStream(d.account, stream);
            lastRows.delete(stream);
          }
          failed.set(stream, { text: `${stream}: ${describeError(err)}`, err });
        }
      }),
    );
    // In the configured order, whichever answer came first (so the error text changes only when the errors do).
    d.health(d.streams.flatMap((stream) => lastRows.get(stream) ?? []));
    const errors = d.streams.flatMap((stream) => failed.get(stream) ?? []);
    const error = errors.length ? errors.map((e) => e.text).join('; ') : undefined;
    if (error !== lastError) {
      if (error) d.log.warn({ account: d.account, api: 'dvr-net', error }, 'DVR poll failed');
      else if (lastError) d.log.info({ account: d.account, api: 'dvr-net' }, 'DVR poll recovered');
      lastError = error;
    }
    d.report.result({ ok: errors.length === 0, error, failures: errors.map((e) => e.err) });
  };
}

export interface RecordingsRoundDeps {
  account: string;
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
      if (error) d.log.warn({ account: d.account, api: 'recorder-cloud', error }, 'recordings poll failed');
      else if (lastError)
        d.log.info({ account: d.account, api: 'recorder-cloud' }, 'recordings poll recovered');
      lastError = error;
    }
    d.report.result({ ok: error === undefined, error, failures });
  };
}
