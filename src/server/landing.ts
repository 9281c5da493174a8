/**
 * The landing page: what an SRE on call opening the exporter's port in a browser wants to see first. One
 * self-contained HTML document (inline CSS, no scripts, no external assets). Every dynamic string is redacted, then
 * escaped; no request header is ever rendered. It reloads itself every REFRESH_SECONDS through a meta refresh,
 * which `?refresh=off` leaves out (a link on the page says so and switches it).
 */
import { redactSecrets } from '../redact.js';
import { escapeHtml } from './html.js';
import {
  type AccountStatus,
  accountState,
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

export function renderLanding(status: ExporterStatus, opts: LandingOptions): string {
  const secrets = [...opts.secrets];
  const t = (s: string | undefined): string =>
    s === undefined || s === '' ? '-' : escapeHtml(redactSecrets(s, secrets));
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

  // The account's own page (top resources), from its traffic row, in a last column when traffic is shown.
  const trafficLink = (a: AccountStatus): string =>
    !opts.history
      ? ''
      : a.api === 'metrics'
        ? `<td><a href="${accountHref(a.name)}" aria-label="traffic of ${t(a.name)}">traffic</a></td>`
        : '<td></td>';
  const accountRows = status.accounts.map(
    (a) =>
      `<tr><td>${t(a.name)}${a.discovered ? ' <span class="none">(discovered)</span>' : ''}</td><td>${t(a.api)}</td>${upCell(a)}` +
      `<td class="ts">${a.cursor ? isoMinute(a.cursor) : '-'}</td>` +
      `<td class="num">${a.lagSeconds === undefined ? '-' : formatDuration(a.lagSeconds)}</td>` +
      `<td class="num">${windowCell(a)}</td>` +
      `<td>${ago(a.lastSuccess)}</td>${errorCell(a)}${trafficLink(a)}</tr>`,
  );
  const dvrRows = status.problems.dvr.map(
    (p) =>
      `<tr><td>${t(p.account)}</td><td>${t(p.stream)}</td><td>${t(p.host)}</td><td>${t(p.problem)}</td></tr>`,
  );
  const recRows = status.problems.recordings.map(
    (p) =>
      `<tr><td>${t(p.account)}</td><td>${t(recordingSource(p))}</td><td>${t(p.resourceId)}</td>` +
      `<td>${t(p.status)}</td><td>${t(p.problem)}</td><td class="small">${t(p.id)}</td></tr>`,
  );
  const refusedRows = status.accounts
    .filter((a) => a.refused && Object.keys(a.refused).length > 0)
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

  const uptime = formatDuration((opts.now - status.startedAt.getTime()) / 1000);
  const notes = status.notes?.length
    ? `<h2>Problems found at start</h2>\n<ul class="err">${status.notes.map((n) => `<li>${t(n)}</li>`).join('')}</ul>\n`
    : '';
  const refresh = opts.refresh ?? true;
  // Relative links keep the page working behind a path prefix (a proxy, kubectl proxy).
  const refreshLine = refresh
    ? `<p class="refresh" id="refresh">Reloads every ${REFRESH_SECONDS} s · <a href="?refresh=off">stop reloading</a></p>`
    : `<p class="refresh" id="refresh">Reloading is off · <a href="?">reload every ${REFRESH_SECONDS} s</a></p>`;
  const traffic = opts.history
    ? `<h2>Traffic</h2>\n${trafficSection(trafficAccounts(status), opts.history, t, status.startedAt)}\n`
    : '';
  const settings = status.settings
    ? `<p class="settings" aria-label="settings">${settingsLine(status.settings, t)}</p>`
    : '';
  return (
    `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
${refresh ? `<meta http-equiv="refresh" content="${REFRESH_SECONDS}">\n` : ''}<title>cdn-exporter</title><style>${CSS}${TRAFFIC_CSS}</style></head>
<body>
<h1>cdn-exporter</h1>
<p class="meta">version ${t(status.version)} · started ${isoMinute(status.startedAt)} (up ${uptime}) · ${
      status.ready ? '<span class="up">ready</span>' : '<span class="pending">not ready</span>'
    }</p>
${settings}
${refreshLine}
<nav><a href="/metrics">/metrics</a><a href="/healthz">/healthz</a><a href="/readyz">/readyz</a>` +
    `<a href="${DOC_LINKS.runbook}">Runbook</a><a href="${DOC_LINKS.dashboards}">Dashboards</a>` +
    `<a href="${DOC_LINKS.troubleshooting}">Troubleshooting</a></nav>
${notes}<h2>Accounts</h2>
<div class="wrap">${table('accounts', ['Account', 'API', 'State', 'Cursor', 'Lag', 'Window', 'Last success', 'Last error', ...(opts.history ? ['Traffic'] : [])], accountRows, 'No accounts configured.')}</div>
${traffic}<h2>Series refused by limits</h2>
${table('refused series', ['Account', 'API', 'Reason', 'Series refused in the last poll'], refusedRows, 'None: every resource answered is exported.')}
<h2>DVR streams with problems</h2>
${table('dvr problems', ['Account', 'Stream', 'Host', 'Problem'], dvrRows, 'None.')}
<h2>Recordings with problems</h2>
${table('recording problems', ['Account', 'Source', 'Resource', 'Status', 'Problem', 'ID'], recRows, 'None.')}
</body></html>
`
  );
}

/** The accounts whose traffic is polled, once each, in the status' order. */
export function trafficAccounts(status: ExporterStatus): string[] {
  return [...new Set(status.accounts.filter((a) => a.api === 'metrics').map((a) => a.name))];
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
