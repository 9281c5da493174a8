/**
 * The dvr-net API as one value of the exporter's API table (the contract: src/poll/api-module.ts): its families
 * and mapping, the poller of an account that lists `dvr_streams`, its codec for the parse worker, and its table of
 * problems on the landing page (hosts not alive or below COVERAGE_PROBLEM of their window, streams whose poll
 * failed).
 */
import type { ApiModule } from '../poll/api-module.js';
import type { DvrProblem } from '../server/status.js';
import { dvrCodec } from './codec.js';
import { DvrMapping, type StreamHealth } from './mapping.js';
import { createDvrFamilies } from './metrics.js';
import { dvrPoller, type StreamFailure } from './poller.js';

/** A DVR host is listed as a problem below this coverage of its window. */
export const COVERAGE_PROBLEM = 0.9;

/** An account's last round, for the landing page: every host's health, and the streams whose poll failed. */
export interface DvrRound {
  health: StreamHealth[];
  failed: ReadonlyMap<string, StreamFailure>;
}

export const dvrModule: ApiModule<'dvr-net', DvrMapping, DvrRound> = {
  api: 'dvr-net',
  codec: dvrCodec,
  sink: ({ store, limits }) => new DvrMapping(createDvrFamilies(store), limits),
  polls: (account) => account.dvrStreams.length > 0,
  poller: (account, upstream, d) =>
    dvrPoller(account.name, account.dvrStreams, upstream, {
      clock: d.clock,
      log: d.log,
      intervalMs: d.config.dvr.intervalMs,
      parse: d.parse?.parser(dvrCodec),
      mapping: d.sink,
      report: d.report,
      health: (health, failed) => d.rounded({ health, failed }, { refused: d.sink.refused(account.name) }),
    }),
  removeAccount: (mapping, account) => mapping.removeAccount(account.name, account.dvrStreams),
  problems: { table: 'dvr', problems: dvrProblems },
};

/** Every account's failed streams first, then every host not alive or poorly covered. */
export function dvrProblems(rounds: ReadonlyMap<string, DvrRound>): DvrProblem[] {
  const out: DvrProblem[] = [];
  for (const [account, { failed }] of rounds) {
    for (const [stream, f] of failed) {
      out.push({
        account,
        stream,
        problem: f.unknown ? `unknown stream (${f.error})` : `poll failed: ${f.error}`,
      });
    }
  }
  for (const { health } of rounds.values()) {
    for (const r of health) {
      if (!r.alive) out.push({ account: r.account, stream: r.stream, host: r.host, problem: 'not alive' });
      else if (r.coverage !== undefined && r.coverage < COVERAGE_PROBLEM) {
        out.push({
          account: r.account,
          stream: r.stream,
          host: r.host,
          // Rounded down: a host listed for being under 90 % never reads "coverage 90%".
          problem: `coverage ${Math.floor(r.coverage * 100)}%`,
        });
      }
    }
  }
  return out;
}
