/**
 * The recordings poller of one account (the contract: src/poll/poller.ts): a round every `recordings.interval`
 * lists the account's recording settings through its upstream and maps them (./mapping.ts). A round never throws:
 * a failure is logged once per change, counted (cdn_up 0, parse errors) and retried at the next interval.
 */
import type { Clock } from '../clock.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { everyInterval, type Poller, type PollReporter } from '../poll/poller.js';
import type { Requester } from '../poll/upstream.js';
import { RecorderClient, type RecordingsBodyParser } from './client.js';
import type { RecordingSummary, RecordingsMapping } from './mapping.js';

export interface RecordingsPollerDeps {
  clock: Clock;
  /** The account's logger (a child carrying `account`); the round's lines do not repeat the key. */
  log: Logger;
  /** recordings.interval. */
  intervalMs: number;
  /** Reads a 2xx answer (default: inline; big ones off the event loop: src/offloop/pool.ts). */
  parse?: RecordingsBodyParser;
  mapping: RecordingsMapping;
  report: PollReporter;
  summary: (rows: RecordingSummary[]) => void;
}

/** Each round lists every recording setting of the account, finished instances included, with their status. */
export function recordingsPoller(account: string, upstream: Requester, d: RecordingsPollerDeps): Poller {
  const client = new RecorderClient(upstream, d.parse);
  let lastError: string | undefined;
  return everyInterval(d.intervalMs, d.clock, d.log, async () => {
    let error: string | undefined;
    const failures: unknown[] = [];
    try {
      const res = await client.listSettings(account, { all: true, extraFields: ['status'] });
      d.report.answer(res);
      d.summary(d.mapping.apply(account, res.settings));
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
  });
}
