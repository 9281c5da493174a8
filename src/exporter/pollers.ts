/**
 * The DVR and recordings poll rounds of one account. A round never throws: every failure is logged once per change,
 * counted (cdn_up 0, parse errors) and retried at the next interval.
 */
import type { Clock } from '../clock.js';
import type { DvrProcess, StreamHealth } from '../dvr/process.js';
import type { DvrStreamResponse } from '../dvr/response.js';
import { isApiError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { RecordingSummary, RecordingsProcess } from '../recordings/process.js';
import type { RecordingListResponse } from '../recordings/response.js';
import type { ParsedAnswer } from './answers.js';

/** What a round reports, for cdn_up, the landing page and readiness. */
export interface RoundReporter {
  result(ok: boolean, error?: string): void;
  /** Every answer that arrived: what it had that could not be used is counted and logged (./answers.ts). */
  answer(res: ParsedAnswer): void;
}

export function describeError(err: unknown): string {
  if (isApiError(err)) return `${err.status ?? err.kind}: ${err.description ?? err.message}`;
  return err instanceof Error ? err.message : String(err);
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
  /** Health of every host after the round, for the landing page. */
  health: (rows: StreamHealth[]) => void;
}

export function dvrRound(d: DvrRoundDeps): () => Promise<void> {
  let lastError: string | undefined;
  /** Per stream, the health of its last successful poll: a failed poll keeps it, as it keeps the series. */
  const lastRows = new Map<string, StreamHealth[]>();
  return async () => {
    const failed = new Map<string, string>();
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
          failed.set(stream, `${stream}: ${describeError(err)}`);
        }
      }),
    );
    // In the configured order, whichever answer came first (so the error text changes only when the errors do).
    d.health(d.streams.flatMap((stream) => lastRows.get(stream) ?? []));
    const errors = d.streams.flatMap((stream) => failed.get(stream) ?? []);
    const error = errors.length ? errors.join('; ') : undefined;
    if (error !== lastError) {
      if (error) d.log.warn({ api: 'dvr-net', error }, 'DVR poll failed');
      else if (lastError) d.log.info({ api: 'dvr-net' }, 'DVR poll recovered');
      lastError = error;
    }
    d.report.result(errors.length === 0, error);
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
    try {
      const res = await d.list(d.account);
      d.report.answer(res);
      d.summary(d.process.apply(d.account, res.settings));
    } catch (err) {
      error = describeError(err);
    }
    if (error !== lastError) {
      if (error) d.log.warn({ api: 'recorder-cloud', error }, 'recordings poll failed');
      else if (lastError) d.log.info({ api: 'recorder-cloud' }, 'recordings poll recovered');
      lastError = error;
    }
    d.report.result(error === undefined, error);
  };
}
