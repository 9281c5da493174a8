/**
 * The landing page: what an SRE on call opening the exporter's port in a browser wants to see first. One
 * self-contained HTML document (inline CSS, no scripts, no external assets). Every dynamic string is redacted, then
 * escaped; no request header is ever rendered. It reloads itself every REFRESH_SECONDS through a meta refresh,
 * which `?refresh=off` leaves out (a link on the page says so and switches it).
 *
 * Bounded at any number of accounts (issue 33): a summary counts every account by state, then one page of
 * PAGE_ACCOUNTS accounts, the worst first (accountOrder), with paging (`?page=2`) and a search on the name
 * (`?q=acme`); the table rows, charts and problem rows are those of the page's accounts only. `LandingPages`
 * (./landing-pages.ts) keeps the rendered pages, gzipped on demand, for PAGE_TTL_MS.
 */
import { redactSecrets } from '../redact.js';
import { escapeHtml } from './html.js';
import {
  type AccountStatus,
  accountState,
  type DvrProblem,
  type ExporterStatus,
  type RecordingProblem,
  type SettingsSummary,
} from './status.js';
import { accountBody, accountHref, type HistorySource, TRAFFIC_CSS, trafficSection } from './traffic-page.js';

/** The project's home; package.json's `homepage`/`repository` and the Helm chart's `home`/`sources` name it too. */
export const PROJECT_URL = 'https://github.com/cdn-exporter/cdn-exporter';
/** The docs/ pages as the project's home shows them; test/docs/links.test.ts checks each anchor has its heading. */
export const DOCS_URL = `${PROJECT_URL}/blob/main/docs`;
/** The runbook; an alert's section is this URL, `#` and the alert's name in lower case (the rules' runbook_url). */
export const RUNBOOK_URL = `${DOCS_URL}/alerts.md`;
export const DOC_LINKS = {
  runbook: RUNBOOK_URL,
  dashboards: `${DOCS_URL}/operations.md#dashboards`,
  troubleshooting: `${DOCS_URL}/operations.md#troubleshooting`,
} as const;

/** How often the page reloads itself while the refresh is on. */
export const REFRESH_SECONDS = 30;

/**
 * Accounts on one page: their rows in the accounts table (up to one per API), their traffic cards (six charts
 * each) and their rows in the problem tables. The page's size depends on this, never on the number of accounts.
 */
export const PAGE_ACCOUNTS = 50;
/** Rows at most in each problem table of a page (DVR, recordings, refused series): one per account on it. */
export const PROBLEM_ROWS = PAGE_ACCOUNTS;
/**
 * A text from the status (an error, a name, a problem) is cut to this many characters on the page, with `…`; the
 * log has it whole. So a row's size is bounded whatever an API answers.
 */
export const MAX_TEXT_CHARS = 500;
/** A search (`?q=`) longer than this is refused (400): no text on the page is longer, a name included. */
export const MAX_SEARCH_CHARS = MAX_TEXT_CHARS;
/**
 * How long a rendered page is served as it is (LandingPages). The page shows ages and lags to the second, and a
 * poll may change the status as often as that (dvr.interval and recordings.interval go down to 1s; with thousands
 * of accounts, some account's poll changes it every second anyway), so a copy is at most one second old.
 */
export const PAGE_TTL_MS = 1000;
/** Rendered pages kept at once (pages, searches, refresh on and off, account pages), the least recently used go. */
export const CACHED_PAGES = 16;

export { escapeHtml };

/** `1h 2m 3s`, `4m 0s`, `12s`; negative or non-finite as `-`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '-';
  const s = Math.round(seconds);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d) return `${d}d ${h}h ${m}m`;
  if (h) return `${h}h ${m}m ${sec}s`;
  if (m) return `${m}m ${sec}s`;
  return `${sec}s`;
}

function isoMinute(d: Date): string {
  return Number.isNaN(d.getTime()) ? '-' : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const CSS = `
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem 2rem;color:#1d2330;background:#fafbfc}
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.meta{color:#5b6578;margin:0 0 1rem}nav a{margin-right:1rem}
table{border-collapse:collapse;background:#fff;box-shadow:0 0 0 1px #dde1e8;min-width:40rem}
th,td{padding:.35rem .7rem;text-align:left;border-bottom:1px solid #e8ebf0;vertical-align:top}
th{background:#f1f3f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.ts{white-space:nowrap}
.up{color:#0a7d32;font-weight:600}.down{color:#b42318;font-weight:600}.pending{color:#8a6d00}
.err{color:#b42318;max-width:40rem;word-break:break-word}.none{color:#5b6578;font-style:italic}
.failing{color:#b54708;font-weight:600}.settings{background:#fff;box-shadow:0 0 0 1px #dde1e8;padding:.5rem .8rem;display:inline-block}
.settings b{font-weight:600}.small{color:#5b6578;font-size:.85em}.refresh{color:#5b6578;margin:.25rem 0 1rem}
.summary{margin:0 0 .5rem}.summary b{font-variant-numeric:tabular-nums}.find{margin:.25rem 0 .5rem}
.find input{font:inherit;padding:.15rem .3rem;width:16rem;max-width:60vw}.find button{font:inherit}.pages{margin:.25rem 0 .5rem}
.pages a{margin:0 .25rem}
`;

export interface LandingOptions {
  /** The current time (ms), for "ago" columns. */
  now: number;
  /** Strings that must never appear (the CDN tokens). */
  secrets: Iterable<string>;
  /** The page reloads itself (default true); `?refresh=off` turns it off. */
  refresh?: boolean;
  /** Each account's traffic history (./traffic-history.ts); absent: no traffic section. */
  history?: HistorySource;
}

/** Which accounts a landing page shows: `?page=` (from 1) and `?q=` (a part of the name, any case). */
export interface LandingView {
  /** 1-based; past the last page, the last page is shown. Default 1. */
  page?: number;
  /** Only accounts whose name contains this (case-insensitive); '' or absent: every account. */
  q?: string;
}

const STATE_TEXT = { pending: 'pending', down: 'down', failing: 'failing', up: 'up' } as const;

/** `shard 2 of 3 (SHARD=1, SHARDS=3) · ...`: what this replica runs with, in one line. */
function settingsLine(s: SettingsSummary, t: (v: string) => string): string {
  const minutes = configDuration;
  const owned =
    s.accountsOwned === s.accountsConfigured
      ? `${s.accountsOwned} account${s.accountsOwned === 1 ? '' : 's'}`
      : `${s.accountsOwned} of ${s.accountsConfigured} accounts`;
  return [
    `shard <b>${s.shard + 1} of ${s.shards}</b> (SHARD=${s.shard}, SHARDS=${s.shards}) polls ${owned}`,
    `API <b>${t(s.apiHost)}</b>`,
    `window ${minutes(s.windowMs)}, delay ${minutes(s.delayMs)}, lookback ${minutes(s.lookbackMs)}`,
    `${t(String(s.requestsPerSecond))} requests/s, concurrency ${t(String(s.concurrency))}`,
  ].join(' · ');
}

/** A duration as the configuration writes it: `5m`, `1h`, `90s`, `1h30m`. */
export function configDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const out = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${sec ? `${sec}s` : ''}`;
  return out || '0s';
}

/** A recording's source as a person knows it: domain and path, `-` when the API gave neither. */
function recordingSource(p: RecordingProblem): string {
  const domain = p.sourceDomain ?? '';
  const path = p.sourcePath ?? '';
  if (domain && path) return `${domain}${path.startsWith('/') ? '' : '/'}${path}`;
  return domain || path;
}

/** How an account ranks on the landing page, worst first: the worst of its rows, or `problems` when it has some. */
export const ACCOUNT_RANKS = ['down', 'failing', 'problems', 'pending', 'up'] as const;
export type AccountRank = (typeof ACCOUNT_RANKS)[number];

const RANK_TEXT: Record<AccountRank, string> = {
  down: 'down',
  failing: 'failing',
  problems: 'with problems listed',
  pending: 'pending',
  up: 'up',
};

/** One account as the landing page lists it: its rows (one per API, in the status' order) and its rank. */
export interface LandingAccount {
  name: string;
  rows: AccountStatus[];
  rank: AccountRank;
  /** Seconds since the oldest last success of its rows; Infinity when a row never succeeded. */
  staleSeconds: number;
  /** The name in lower case, for the search. */
  key: string;
}

/** What every landing page of one moment shares: the status, its accounts worst first, the counts. */
export interface LandingOverview {
  status: ExporterStatus;
  now: number;
  /** Worst first (accountOrder). */
  accounts: LandingAccount[];
  /** Accounts per rank. */
  counts: Record<AccountRank, number>;
  /** The accounts whose traffic is polled. */
  traffic: ReadonlySet<string>;
  dvr: ReadonlyMap<string, DvrProblem[]>;
  recordings: ReadonlyMap<string, RecordingProblem[]>;
  /** Accounts with series refused by a limit in their last poll, and their rows (one per API). */
  refused: number;
  refusedRows: number;
}

const RANK_ORDER: Record<AccountRank, number> = { down: 0, failing: 1, problems: 2, pending: 3, up: 4 };

/**
 * Worst first: down, then failing (the API answers but the last poll failed in part), then with problems listed
 * (DVR streams, recordings in error, series refused), then pending, then up; in each, the longest since a success
 * first (never: first of all), then by name.
 */
export function accountOrder(a: LandingAccount, b: LandingAccount): number {
  return (
    RANK_ORDER[a.rank] - RANK_ORDER[b.rank] ||
    (a.staleSeconds === b.staleSeconds ? 0 : a.staleSeconds > b.staleSeconds ? -1 : 1) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
}

function byAccount<T extends { account: string }>(list: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of list) {
    const rows = out.get(x.account);
    if (rows) rows.push(x);
    else out.set(x.account, [x]);
  }
  return out;
}

/** The accounts of `status`, ranked and ordered, and the counts the summary shows: O(rows log rows). */
export function landingOverview(status: ExporterStatus, now: number): LandingOverview {
  const dvr = byAccount(status.problems.dvr);
  const recordings = byAccount(status.problems.recordings);
  const byName = new Map<string, LandingAccount>();
  const traffic = new Set<string>();
  const refusedNames = new Set<string>();
  let refusedRows = 0;
  for (const row of status.accounts) {
    let a = byName.get(row.name);
    if (!a) {
      a = { name: row.name, rows: [], rank: 'up', staleSeconds: 0, key: row.name.toLowerCase() };
      byName.set(row.name, a);
    }
    a.rows.push(row);
    if (row.api === 'metrics') traffic.add(row.name);
    if (row.refused && Object.keys(row.refused).length > 0) {
      refusedNames.add(row.name);
      refusedRows++;
    }
    const stale =
      row.lastSuccess === undefined ? Number.POSITIVE_INFINITY : (now - row.lastSuccess.getTime()) / 1000;
    if (stale > a.staleSeconds) a.staleSeconds = stale;
  }
  const counts: Record<AccountRank, number> = { down: 0, failing: 0, problems: 0, pending: 0, up: 0 };
  for (const a of byName.values()) {
    const states = a.rows.map(accountState);
    a.rank = states.includes('down')
      ? 'down'
      : states.includes('failing')
        ? 'failing'
        : dvr.has(a.name) || recordings.has(a.name) || refusedNames.has(a.name)
          ? 'problems'
          : states.includes('pending')
            ? 'pending'
            : 'up';
    counts[a.rank]++;
  }
  const accounts = [...byName.values()].sort(accountOrder);
  return {
    status,
    now,
    accounts,
    counts,
    traffic,
    dvr,
    recordings,
    refused: refusedNames.size,
    refusedRows,
  };
}

/** The accounts a view shows (its page of the search's matches), the page shown and how many pages there are. */
export function viewAccounts(
  ov: LandingOverview,
  view: LandingView,
): { accounts: LandingAccount[]; matched: number; page: number; pages: number } {
  const q = (view.q ?? '').toLowerCase();
  const matching = q === '' ? ov.accounts : ov.accounts.filter((a) => a.key.includes(q));
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_ACCOUNTS));
  const page = Math.min(Math.max(1, Math.floor(view.page ?? 1)), pages);
  const from = (page - 1) * PAGE_ACCOUNTS;
  return { accounts: matching.slice(from, from + PAGE_ACCOUNTS), matched: matching.length, page, pages };
}

/** A link to a landing page: relative (`?q=acme&page=2`, `?` for the first page of everything), attribute-safe. */
export function landingHref(view: LandingView & { refresh?: boolean }): string {
  const params = new URLSearchParams();
  if (view.q) params.set('q', view.q);
  if (view.page !== undefined && view.page > 1) params.set('page', String(view.page));
  if (view.refresh === false) params.set('refresh', 'off');
  return escapeHtml(`?${params.toString()}`);
}

/** `s` cut to MAX_TEXT_CHARS characters (code points, so no surrogate pair is split), `…` marking the cut. */
export function cutText(s: string): string {
  if (s.length <= MAX_TEXT_CHARS) return s;
  const chars = Array.from(s);
  return chars.length <= MAX_TEXT_CHARS ? s : `${chars.slice(0, MAX_TEXT_CHARS).join('')}…`;
}

const count = (n: number): string => n.toLocaleString('en-US');

/** The landing page for `status` (every account ranked, then one page of them): see renderLandingView. */
export function renderLanding(status: ExporterStatus, opts: LandingOptions & LandingView): string {
  return renderLandingView(landingOverview(status, opts.now), opts);
}

/** One landing page of an overview: the summary of every account, then `view`'s page of accounts. */
export function renderLandingView(ov: LandingOverview, opts: LandingOptions & LandingView): string {
  const { status } = ov;
  const secrets = [...opts.secrets];
  const t = (s: string | undefined): string =>
    s === undefined || s === '' ? '-' : escapeHtml(cutText(redactSecrets(s, secrets)));
  const ago = (d: Date | undefined): string => {
    if (!d) return '-';
    return `${isoMinute(d)} <span class="none">(${formatDuration((opts.now - d.getTime()) / 1000)} ago)</span>`;
  };
  const upCell = (a: AccountStatus): string => {
    const state = accountState(a);
    // A cause that is not the API's doing (a login refused) is named beside the state.
    if (state === 'down' && a.cause) return `<td class="down">down: ${t(a.cause)}</td>`;
    return `<td class="${state}">${STATE_TEXT[state]}</td>`;
  };
  const windowCell = (a: AccountStatus): string => {
    if (a.windowMinutes === undefined && a.maxWindowMinutes === undefined) return '-';
    const inUse = a.windowMinutes === undefined ? '-' : `${escapeHtml(String(a.windowMinutes))}m`;
    // The largest window is 10 minutes unless the API timed out (504); only a shrunk one is worth a word.
    return a.maxWindowMinutes !== undefined && a.maxWindowMinutes < 10
      ? `${inUse} <span class="small">(at most ${escapeHtml(String(a.maxWindowMinutes))}m after 504)</span>`
      : inUse;
  };
  const errorCell = (a: AccountStatus): string => {
    if (!a.lastError) return '<td>-</td>';
    const n = a.errorsSinceSuccess ?? 0;
    const count = n > 0 ? `${n}× since the last success` : a.lastSuccess ? 'before the last success' : '';
    const when = a.lastErrorAt ? ago(a.lastErrorAt) : '';
    const head = [when, count].filter(Boolean).join(' · ');
    return `<td class="err">${head ? `<span class="small">${head}</span><br>` : ''}${t(a.lastError)}</td>`;
  };

  const refresh = opts.refresh ?? true;
  const q = opts.q ?? '';
  const shown = viewAccounts(ov, { page: opts.page, q });
  // Every account on one page and no search: the problem tables are whole.
  const whole = q === '' && shown.pages === 1;
  const rows = shown.accounts.flatMap((a) => a.rows);

  // The account's own page (top resources), from its traffic row, in a last column when traffic is shown.
  const trafficLink = (a: AccountStatus): string =>
    !opts.history
      ? ''
      : a.api === 'metrics'
        ? `<td><a href="${accountHref(a.name)}" aria-label="traffic of ${t(a.name)}">traffic</a></td>`
        : '<td></td>';
  const accountRows = rows.map(
    (a) =>
      `<tr><td>${t(a.name)}${a.discovered ? ' <span class="none">(discovered)</span>' : ''}</td><td>${t(a.api)}</td>${upCell(a)}` +
      `<td class="ts">${a.cursor ? isoMinute(a.cursor) : '-'}</td>` +
      `<td class="num">${a.lagSeconds === undefined ? '-' : formatDuration(a.lagSeconds)}</td>` +
      `<td class="num">${windowCell(a)}</td>` +
      `<td>${ago(a.lastSuccess)}</td>${errorCell(a)}${trafficLink(a)}</tr>`,
  );
  const pageDvr = shown.accounts.flatMap((a) => ov.dvr.get(a.name) ?? []);
  const pageRecordings = shown.accounts.flatMap((a) => ov.recordings.get(a.name) ?? []);
  const dvrRows = pageDvr
    .slice(0, PROBLEM_ROWS)
    .map(
      (p) =>
        `<tr><td>${t(p.account)}</td><td>${t(p.stream)}</td><td>${t(p.host)}</td><td>${t(p.problem)}</td></tr>`,
    );
  const recRows = pageRecordings
    .slice(0, PROBLEM_ROWS)
    .map(
      (p) =>
        `<tr><td>${t(p.account)}</td><td>${t(recordingSource(p))}</td><td>${t(p.resourceId)}</td>` +
        `<td>${t(p.status)}</td><td>${t(p.problem)}</td><td class="small">${t(p.id)}</td></tr>`,
    );
  const pageRefused = rows.filter((a) => a.refused && Object.keys(a.refused).length > 0);
  const refusedRows = pageRefused
    .slice(0, PROBLEM_ROWS)
    .map(
      (a) =>
        `<tr><td>${t(a.name)}</td><td>${t(a.api)}</td><td>${t(Object.keys(a.refused!).sort().join(', '))}</td>` +
        `<td class="num">${Object.values(a.refused!).reduce((x, y) => x + y, 0)}</td></tr>`,
    );
  const table = (caption: string, head: string[], rows: string[], empty: string): string =>
    rows.length === 0
      ? `<p class="none">${escapeHtml(empty)}</p>`
      : `<table aria-label="${escapeHtml(caption)}"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>` +
        `<tbody>\n${rows.join('\n')}\n</tbody></table>`;
  /** Under a problem table: whose rows these are when not every account's, and what was left out. */
  const problemNote = (listed: number, total: number, where: string): string => {
    const parts: string[] = [];
    if (!whole && total > 0)
      parts.push(`The accounts on this page only (${count(listed)} of ${count(total)} in all)`);
    if (listed > PROBLEM_ROWS) parts.push(`the first ${PROBLEM_ROWS} shown; ${where} has every one`);
    return parts.length ? `<p class="small">${escapeHtml(parts.join('; '))}.</p>\n` : '';
  };

  const uptime = formatDuration((opts.now - status.startedAt.getTime()) / 1000);
  const notes = status.notes?.length
    ? `<h2>Problems found at start</h2>\n<ul class="err">${status.notes.map((n) => `<li>${t(n)}</li>`).join('')}</ul>\n`
    : '';
  // Relative links keep the page working behind a path prefix (a proxy, kubectl proxy).
  const here = { q, page: shown.page };
  const refreshLine = refresh
    ? `<p class="refresh" id="refresh">Reloads every ${REFRESH_SECONDS} s · <a href="${landingHref({ ...here, refresh: false })}">stop reloading</a></p>`
    : `<p class="refresh" id="refresh">Reloading is off · <a href="${landingHref(here)}">reload every ${REFRESH_SECONDS} s</a></p>`;
  const pageTraffic = shown.accounts.filter((a) => ov.traffic.has(a.name)).map((a) => a.name);
  const traffic = opts.history
    ? `<h2>Traffic</h2>\n${whole ? '' : '<p class="small">The accounts on this page.</p>\n'}${trafficSection(pageTraffic, opts.history, t, status.startedAt)}\n`
    : '';
  const settings = status.settings
    ? `<p class="settings" aria-label="settings">${settingsLine(status.settings, t)}</p>`
    : '';
  const c = ov.counts;
  const total = ov.accounts.length;
  const summary =
    `<p class="summary" aria-label="summary"><b>${count(total)}</b> account${total === 1 ? '' : 's'}: ` +
    ACCOUNT_RANKS.map((r) => {
      const text = `${count(c[r])} ${RANK_TEXT[r]}`;
      return c[r] > 0 && r !== 'problems' && r !== 'pending' ? `<span class="${r}">${text}</span>` : text;
    }).join(' · ') +
    ` · DVR streams with problems: ${count(status.problems.dvr.length)} · recordings with problems: ` +
    `${count(status.problems.recordings.length)} · accounts with series refused: ${count(ov.refused)}</p>`;
  const link = (page: number, text: string, rel?: string): string =>
    `<a href="${landingHref({ q, page, refresh })}"${rel ? ` rel="${rel}"` : ''}>${text}</a>`;
  const first = (shown.page - 1) * PAGE_ACCOUNTS;
  const range =
    shown.matched === 0
      ? q === ''
        ? 'No accounts'
        : `No account name contains “${t(q)}”`
      : `Accounts ${count(first + 1)}–${count(first + shown.accounts.length)} of ${count(shown.matched)}` +
        (q === '' ? '' : ` whose name contains “${t(q)}” (${count(total)} in all)`);
  const paging =
    shown.pages > 1
      ? [
          ...(shown.page > 1 ? [link(1, 'first'), link(shown.page - 1, 'previous', 'prev')] : []),
          `page ${count(shown.page)} of ${count(shown.pages)}`,
          ...(shown.page < shown.pages
            ? [link(shown.page + 1, 'next', 'next'), link(shown.pages, 'last')]
            : []),
        ]
          .map((x) => ` · ${x}`)
          .join('')
      : '';
  const search =
    `<form class="find" method="get" role="search"><label>Find an account by name ` +
    `<input type="search" name="q" value="${escapeHtml(q)}" maxlength="${MAX_SEARCH_CHARS}"></label>` +
    `${refresh ? '' : '<input type="hidden" name="refresh" value="off">'} <button type="submit">Search</button>` +
    `${q === '' ? '' : ` <a href="${landingHref({ refresh })}">every account</a>`}</form>`;
  const pagesLine =
    `<p class="pages" aria-label="pages">${range}, worst first (down, failing, with problems, pending, up; ` +
    `then the longest since a success)${paging}</p>`;
  return (
    `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
${refresh ? `<meta http-equiv="refresh" content="${REFRESH_SECONDS}">\n` : ''}<title>cdn-exporter</title><style>${CSS}${TRAFFIC_CSS}</style></head>
<body>
<h1>cdn-exporter</h1>
<p class="meta">version ${t(status.version)} · started ${isoMinute(status.startedAt)} (up ${uptime}) · ${
      status.ready ? '<span class="up">ready</span>' : '<span class="pending">not ready</span>'
    } · as of ${isoMinute(new Date(opts.now))}</p>
${settings}
${refreshLine}
<nav><a href="/metrics">/metrics</a><a href="/healthz">/healthz</a><a href="/readyz">/readyz</a>` +
    `<a href="${DOC_LINKS.runbook}">Runbook</a><a href="${DOC_LINKS.dashboards}">Dashboards</a>` +
    `<a href="${DOC_LINKS.troubleshooting}">Troubleshooting</a></nav>
${notes}<h2>Summary</h2>
${summary}
<h2>Accounts</h2>
${search}
${pagesLine}
<div class="wrap">${table('accounts', ['Account', 'API', 'State', 'Cursor', 'Lag', 'Window', 'Last success', 'Last error', ...(opts.history ? ['Traffic'] : [])], accountRows, q === '' ? 'No accounts configured.' : 'No account matches.')}</div>
${traffic}<h2>Series refused by limits</h2>
${problemNote(pageRefused.length, ov.refusedRows, '/metrics (cdn_series_refused_total)')}${table('refused series', ['Account', 'API', 'Reason', 'Series refused in the last poll'], refusedRows, 'None: every resource answered is exported.')}
<h2>DVR streams with problems</h2>
${problemNote(pageDvr.length, status.problems.dvr.length, '/metrics (cdn_dvr_stream_alive, cdn_dvr_coverage_ratio, cdn_dvr_stream_up)')}${table('dvr problems', ['Account', 'Stream', 'Host', 'Problem'], dvrRows, 'None.')}
<h2>Recordings with problems</h2>
${problemNote(pageRecordings.length, status.problems.recordings.length, '/metrics (cdn_recording_status)')}${table('recording problems', ['Account', 'Source', 'Resource', 'Status', 'Problem', 'ID'], recRows, 'None.')}
</body></html>
`
  );
}

/** `/accounts/<name>`: one account's traffic and busiest resources. `name` must be one of trafficAccounts. */
export function renderAccountPage(name: string, opts: LandingOptions & { history: HistorySource }): string {
  const secrets = [...opts.secrets];
  const t = (s: string): string => (s === '' ? '-' : escapeHtml(redactSecrets(s, secrets)));
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${t(name)} · cdn-exporter</title><style>${CSS}${TRAFFIC_CSS}</style></head>
<body>
<h1>${t(name)}</h1>
<p class="meta"><a href="../">cdn-exporter</a> · traffic of account ${t(name)}</p>
${accountBody(name, opts.history(name), t)}
</body></html>
`;
}
