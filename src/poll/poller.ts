/**
 * The contract every API's polling follows (src/traffic, src/dvr, src/recordings), in the spirit of
 * blackbox_exporter's ProbeFn: one API, one account, the account's upstream (src/poll/upstream.ts) given as a
 * value. Each API folder makes its Poller from an account and its upstream (`TrafficPipeline.poller`,
 * `dvrPoller`, `recordingsPoller`); the exporter starts and stops them (src/exporter/account-pollers.ts).
 *
 * The traffic poller's polls are the windows its walker plans (src/traffic/walker.ts); the DVR and recordings
 * pollers poll in rounds, one every interval (`everyInterval`), each reporting a PollResult.
 */
import type { Clock } from '../clock.js';
import type { ParsedAnswer } from '../http/answers.js';
import type { Logger } from '../log.js';
import { pollEvery } from './interval.js';

/**
 * One API's polling of one account. `run` polls until `signal` aborts and never rejects: every failure is logged
 * once per change, counted (cdn_up, parse errors) and retried.
 */
export interface Poller {
  run(signal: AbortSignal): Promise<void>;
}

/** The outcome of one poll. */
export interface PollResult {
  ok: boolean;
  /** What failed, as one line for logs and pages (undefined when ok). */
  error?: string;
  /** The failures themselves (ApiError values, usually): decisions are made on these, never on `error`'s text. */
  failures: readonly unknown[];
}

/** What a poll reports, for cdn_up, the landing page, readiness and the token-refresh policy. */
export interface PollReporter {
  result(r: PollResult): void;
  /** Every answer that arrived: what it had that could not be used is counted and logged (AnswerAudit, src/http/answers.ts). */
  answer(res: ParsedAnswer): void;
}

/** A Poller that runs `poll` (one round, which reports its own result) every `intervalMs` (src/poll/interval.ts). */
export function everyInterval(
  intervalMs: number,
  clock: Clock,
  log: Logger,
  poll: () => Promise<void>,
): Poller {
  return { run: (signal) => pollEvery(intervalMs, clock, signal, poll, log) };
}
