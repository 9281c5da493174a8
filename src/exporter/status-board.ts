/**
 * The status board: what each poller last reported, per (api, account), and each account's last rows of every
 * API of the table (./api-table.ts), from which its module lists the landing page's problems. It is what
 * `/readyz`, the landing page and `cdn_up` / `cdn_last_success_timestamp_seconds` read. Pollers write to it;
 * nothing else decides readiness.
 */
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { ApiModule } from '../poll/api-module.js';
import type { SelfMetrics } from '../server/self-metrics.js';
import type { AccountStatus, ExporterStatus, SettingsSummary } from '../server/status.js';
import { waitingOnLogin } from '../server/status.js';
import type { WalkerStatus } from '../traffic/walker.js';
import { API_TABLE, APIS, type Api } from './api-table.js';

/** What the board says of an account beyond its pollers' reports. */
export interface AccountNote {
  /** Polled because accounts_discovery found it (not listed in the configuration). */
  discovered?: boolean;
  /**
   * Why the account is down when that is not the API's doing (`login refused`, `login failed`): read when the
   * status is built, from the login's own state, never from an error's text.
   */
  downCause?: () => string | undefined;
}

export class StatusBoard {
  private readonly statuses = new Map<string, AccountStatus>();
  /** Per API of the table, each account's last rows (account -> rows), for its module's problems. */
  private readonly apiRows = new Map<Api, Map<string, unknown>>();
  /** Problems found at start that the landing page shows until the process restarts (a bad state file). */
  private readonly startProblems: string[] = [];
  private readonly notes = new Map<string, AccountNote>();
  private readonly startedAt: Date;
  private started = false;

  constructor(
    private readonly self: SelfMetrics,
    private readonly clock: Clock,
    private readonly version: string,
    /** The effective settings for the landing page's one-line summary. */
    private readonly settings?: SettingsSummary,
  ) {
    this.startedAt = new Date(clock.now());
  }

  /** Polling has begun: from now on, ready once every row has been tried. */
  markStarted(): void {
    this.started = true;
  }

  /** Problems of the exporter itself found at start, one line each (already logged). */
  problemsAtStart(...lines: string[]): void {
    this.startProblems.push(...lines);
  }

  /** Notes on every row of the account (discovered, the cause of a down that is the login's). */
  note(account: string, note: AccountNote): void {
    this.notes.set(account, note);
  }

  /**
   * The account is no longer polled (discovery stopped it): its rows, its problems and its
   * cdn_up / cdn_last_success_timestamp_seconds series go.
   */
  removeAccount(account: string): void {
    for (const api of APIS) {
      this.statuses.delete(key(api, account));
      this.self.removeAccount(api, account);
      this.apiRows.get(api)?.delete(account);
    }
    this.notes.delete(account);
  }

  /** A row for a poller that has not reported yet (not ready until it has tried). */
  expect(api: Api, account: string): void {
    this.set(api, account, { up: false, tried: false });
  }

  /** The traffic walker's status after a change (cursor, up, window size, errors). */
  walker(s: WalkerStatus): void {
    this.set('metrics', s.account, {
      up: s.up === true,
      tried: s.tried,
      cursor: new Date(s.cursor),
      windowMinutes: s.windowMinutes,
      maxWindowMinutes: s.maxWindowMinutes,
      lastError: s.lastError,
      lastErrorAt: s.lastErrorAt === undefined ? undefined : new Date(s.lastErrorAt),
      errorsSinceSuccess: s.errorsSinceSuccess,
      lastSuccess: s.lastSuccess === undefined ? undefined : new Date(s.lastSuccess),
    });
    if (s.up !== undefined)
      this.self.setPollResult('metrics', s.account, s.up, s.lastSuccess ?? this.clock.now());
  }

  /** The outcome of one round of an API of the table. */
  round(api: Api, account: string, ok: boolean, error: string | undefined): void {
    const now = this.clock.now();
    const prev = this.statuses.get(key(api, account))?.errorsSinceSuccess ?? 0;
    this.set(api, account, {
      up: ok,
      tried: true,
      lastError: error,
      ...(error ? { lastErrorAt: new Date(now) } : {}),
      // A poll that answered but failed in part (one stream of a round unknown) is not a success for this count.
      errorsSinceSuccess: error ? prev + 1 : 0,
      ...(ok ? { lastSuccess: new Date(now) } : {}),
    });
    this.self.setPollResult(api, account, ok, now);
  }

  /** The account's rows after a round of an API of the table (its module's `Rows`), for its problem table. */
  rows(api: Api, account: string, rows: unknown): void {
    let byAccount = this.apiRows.get(api);
    if (!byAccount) {
      byAccount = new Map();
      this.apiRows.set(api, byAccount);
    }
    byAccount.set(account, rows);
  }

  /** Series a cap refused in the account's last poll of that API, by reason (empty: none); the landing page's table. */
  refused(api: Api, account: string, refused: Readonly<Record<string, number>>): void {
    this.set(api, account, { refused: { ...refused } });
  }

  status(): ExporterStatus {
    const now = this.clock.now();
    const accounts = [...this.statuses.values()].map((s) => {
      const row: AccountStatus = s.cursor
        ? { ...s, lagSeconds: Math.max(0, (now - s.cursor.getTime()) / 1000) }
        : { ...s };
      const note = this.notes.get(s.name);
      if (note?.discovered) row.discovered = true;
      const cause = row.up ? undefined : note?.downCause?.();
      if (cause) row.cause = cause;
      return row;
    });
    // Every table the landing page reads, each filled by its API's module from every account's last rows.
    const problems: Record<string, unknown> = {};
    for (const m of API_TABLE as readonly ApiModule[]) {
      if (m.problems)
        problems[m.problems.table] = m.problems.problems(this.apiRows.get(m.api as Api) ?? NONE);
    }
    return {
      // Before start() there are no statuses yet, and every() of nothing is true: not ready until started.
      // An account waiting on a login for its token cannot be polled: not ready until it has one.
      ready: this.started && accounts.every((a) => a.tried) && !accounts.some(waitingOnLogin),
      version: this.version,
      startedAt: this.startedAt,
      accounts,
      problems: problems as ExporterStatus['problems'],
      ...(this.settings ? { settings: this.settings } : {}),
      notes: [...this.startProblems],
    };
  }

  private set(api: Api, account: string, patch: Partial<AccountStatus>): void {
    const k = key(api, account);
    const prev = this.statuses.get(k) ?? { name: account, api, up: false };
    this.statuses.set(k, { ...prev, ...patch });
  }
}

const NONE: ReadonlyMap<string, unknown> = new Map<string, unknown>();

function key(api: Api, account: string): string {
  return `${api}\u0000${account}`;
}

/** What the landing page's one-line summary shows of the configuration; never a credential. */
export function settingsSummary(config: Config, owned: number): SettingsSummary {
  const { api, metrics, sharding } = config;
  return {
    shard: sharding.shard,
    shards: sharding.shards,
    accountsConfigured: config.accounts.length,
    accountsOwned: owned,
    apiHost: apiHost(api.baseUrl),
    windowMs: metrics.windowMs,
    delayMs: metrics.delayMs,
    lookbackMs: metrics.lookbackMs,
    requestsPerSecond: api.requestsPerSecond,
    concurrency: api.concurrency,
  };
}

/** The API's host (and port) for the landing page: never the user info a base_url may carry, nor path or query. */
export function apiHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return '(invalid base_url)';
  }
}
