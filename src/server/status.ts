/**
 * What the landing page and /readyz show: a snapshot the exporter's main builds from its pollers. It is read
 * synchronously; building it must not wait on any poll (a scrape or a probe never waits on an API).
 */

export interface AccountStatus {
  /** Account name as configured. */
  name: string;
  /** Which API this row is about: `metrics`, `dvr-net` or `recorder-cloud`. */
  api: string;
  /** The last poll succeeded. */
  up: boolean;
  /** A first poll has been tried (answered or failed). When absent: lastSuccess or lastError is set. */
  tried?: boolean;
  /** Traffic only: every minute before this has been counted. */
  cursor?: Date;
  /** Traffic only: how far the cursor is behind now, seconds. */
  lagSeconds?: number;
  /** Traffic only: the largest window asked for now, minutes. */
  windowMinutes?: number;
  /** The last failure's description; shown only after redaction. */
  lastError?: string;
  /** Polled because accounts_discovery found it (not listed in the configuration). */
  discovered?: boolean;
  /** Why the account is down when that is not the API's doing: `login refused`, `login failed`. */
  cause?: string;
  lastSuccess?: Date;
}

/** A DVR stream (on one host, or all hosts) that is not alive or whose window is poorly covered. */
export interface DvrProblem {
  account: string;
  stream: string;
  host?: string;
  /** Short text, for example `not alive` or `coverage 62%`. */
  problem: string;
}

/** A recording setting in `error` (or otherwise worth a look). */
export interface RecordingProblem {
  account: string;
  id: string;
  status?: string;
  problem: string;
}

export interface ExporterStatus {
  /** True once every account's first poll of every API has been tried. */
  ready: boolean;
  version: string;
  startedAt: Date;
  accounts: AccountStatus[];
  /** Filled by a later feature; empty lists until then. */
  problems: { dvr: DvrProblem[]; recordings: RecordingProblem[] };
}

export function accountTried(a: AccountStatus): boolean {
  return a.tried ?? (a.lastSuccess !== undefined || a.lastError !== undefined);
}

/** A one-line reason for /readyz while not ready. */
export function notReadyReason(s: ExporterStatus): string {
  const waiting = s.accounts.filter((a) => !accountTried(a));
  if (waiting.length === 0) return 'not ready: starting';
  const names = waiting
    .slice(0, 5)
    .map((a) => `${a.name}/${a.api}`)
    .join(', ');
  const more = waiting.length > 5 ? `, and ${waiting.length - 5} more` : '';
  return `not ready: waiting for the first poll of ${waiting.length} of ${s.accounts.length} (${names}${more})`;
}
