/**
 * The recorder-cloud API as one value of the exporter's API table (the contract: src/poll/api-module.ts): its
 * families and mapping, the poller of an account with `recordings: true`, its codec for the parse worker, and its
 * table of problems on the landing page (recordings in `error`).
 */
import type { ApiModule } from '../poll/api-module.js';
import type { RecordingProblem } from '../server/status.js';
import { recordingsCodec } from './codec.js';
import { type RecordingSummary, RecordingsMapping } from './mapping.js';
import { createRecordingFamilies } from './metrics.js';
import { recordingsPoller } from './poller.js';

export const recordingsModule: ApiModule<'recorder-cloud', RecordingsMapping, RecordingSummary[]> = {
  api: 'recorder-cloud',
  codec: recordingsCodec,
  sink: ({ store, limits }) => new RecordingsMapping(createRecordingFamilies(store), limits),
  polls: (account) => account.recordings,
  poller: (account, upstream, d) =>
    recordingsPoller(account.name, upstream, {
      clock: d.clock,
      log: d.log,
      intervalMs: d.config.recordings.intervalMs,
      parse: d.parse?.parser(recordingsCodec),
      mapping: d.sink,
      report: d.report,
      summary: (rows) => d.rounded(rows, { refused: d.sink.refused, truncated: d.sink.truncated }),
    }),
  removeAccount: (mapping, account) => mapping.removeAccount(account.name),
  problems: { table: 'recordings', problems: recordingProblems },
};

/** Every account's recordings in `error`. */
export function recordingProblems(rows: ReadonlyMap<string, RecordingSummary[]>): RecordingProblem[] {
  const out: RecordingProblem[] = [];
  for (const summaries of rows.values()) {
    for (const r of summaries) {
      if (r.status === 'error') {
        out.push({
          account: r.account,
          id: r.id,
          sourcePath: r.sourcePath,
          sourceDomain: r.sourceDomain,
          resourceId: r.resourceId,
          status: r.status,
          problem: 'recording in error',
        });
      }
    }
  }
  return out;
}
