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
  /** Traffic only: the window in use, minutes (the length of the newest window asked for). */
  windowMinutes?: number;
  /** Traffic only: the largest window allowed now, minutes (10, less after the API timed out with 504). */
  maxWindowMinutes?: number;
  /** The last failure's description; shown only after redaction. */
  lastError?: string;
  /** Polled because accounts_discovery found it (not listed in the configuration). */
  discovered?: boolean;
  /** Why the account is down when that is not the API's doing: `login refused`, `login failed`. */
  cause?: string;
  /** When the last failure happened. */
  lastErrorAt?: Date;
  /**
   * Failures since the last success: polls that failed wholly or in part (DVR: a round with a failing stream),
   * traffic: requests. 0 (or absent) once a poll succeeds without error.
   */
  errorsSinceSuccess?: number;
  lastSuccess?: Date;
  /** Traffic only: series refused by a limit in the last window counted, by reason (absent or empty: none). */
  refused?: Record<string, number>;
}

/** What this process runs with, for the landing page's one-line summary. Never holds a credential. */
export interface SettingsSummary {
  /** This replica's shard, 0-based, and the number of shards. */
  shard: number;
  shards: number;
  /** Accounts configured in all, and how many this shard polls. */
  accountsConfigured: number;
  accountsOwned: number;
  /** The API's host (and port), from base_url without user info, path or query. */
  apiHost: string;
  windowMs: number;
  delayMs: number;
  lookbackMs: number;
  requestsPerSecond: number;
  concurrency: number;
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
  /** What a person recognises the recording by: its source (domain and path) and the CDN resource it belongs to. */
  sourcePath?: string;
  sourceDomain?: string;
  resourceId?: string;
  status?: string;
  problem: string;
}

export interface ExporterStatus {
  /** True once every account's first poll of every API has been tried, and none waits on a login for a token. */
  ready: boolean;
  version: string;
  startedAt: Date;
  accounts: AccountStatus[];
  problems: { dvr: DvrProblem[]; recordings: RecordingProblem[] };
  /** The effective settings (absent in tests that build a status by hand). */
  settings?: SettingsSummary;
  /** Problems of the exporter itself found at start (a bad state file kept aside), one line each. */
  notes?: string[];
}

export function accountTried(a: AccountStatus): boolean {
  return a.tried ?? (a.lastSuccess !== undefined || a.lastError !== undefined);
}

/**
 * How the landing page shows a row: `pending` before a first poll; `down` while cdn_up is 0; `failing` while the API
 * answers but the last poll failed in part or was refused (a DVR stream unknown, a traffic window rejected); `up`.
 */
export type AccountState = 'pending' | 'down' | 'failing' | 'up';

export function accountState(a: AccountStatus): AccountState {
  if (!accountTried(a)) return 'pending';
  if (!a.up) return 'down';
  if ((a.errorsSinceSuccess ?? 0) > 0) return 'failing';
  return 'up';
}

/** The row is down because its login has no token (refused or failed): not ready while any row is. */
export function waitingOnLogin(a: AccountStatus): boolean {
  return a.cause === 'login refused' || a.cause === 'login failed';
}

/** A one-line reason for /readyz while not ready. */
export function notReadyReason(s: ExporterStatus): string {
  const waiting = s.accounts.filter((a) => !accountTried(a));
  const noToken = s.accounts.filter(waitingOnLogin);
  if (waiting.length === 0 && noToken.length > 0) {
    const names = [...new Set(noToken.map((a) => a.name))];
    const shown = names.slice(0, 5).join(', ');
    const more = names.length > 5 ? `, and ${names.length - 5} more` : '';
    return `not ready: no token for ${names.length} account(s) (${shown}${more}): ${noToken[0]!.cause}`;
  }
  if (waiting.length === 0) return 'not ready: starting';
  const names = waiting
    .slice(0, 5)
    .map((a) => `${a.name}/${a.api}`)
    .join(', ');
  const more = waiting.length > 5 ? `, and ${waiting.length - 5} more` : '';
  return `not ready: waiting for the first poll of ${waiting.length} of ${s.accounts.length} (${names}${more})`;
}
