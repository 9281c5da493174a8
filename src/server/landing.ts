/**
 * The landing page: what an SRE opening the exporter's port in a browser wants to see first. One self-contained
 * HTML document (inline CSS, no scripts, no external assets). Every dynamic string is redacted, then escaped;
 * no request header is ever rendered.
 */
import { redactSecrets } from './redact.js';
import { type AccountStatus, accountTried, type ExporterStatus } from './status.js';

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

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
  return Number.isNaN(d.getTime()) ? '-' : d.toISOString().replace('.000Z', 'Z');
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
`;

export interface LandingOptions {
  /** The current time (ms), for "ago" columns. */
  now: number;
  /** Strings that must never appear (the CDN tokens). */
  secrets: Iterable<string>;
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
    if (!accountTried(a)) return '<td class="pending">pending</td>';
    if (a.up) return '<td class="up">up</td>';
    return a.cause ? `<td class="down">down: ${t(a.cause)}</td>` : '<td class="down">down</td>';
  };

  const accountRows = status.accounts.map(
    (a) =>
      `<tr><td>${t(a.name)}${a.discovered ? ' <span class="none">(discovered)</span>' : ''}</td><td>${t(a.api)}</td>${upCell(a)}` +
      `<td class="ts">${a.cursor ? isoMinute(a.cursor) : '-'}</td>` +
      `<td class="num">${a.lagSeconds === undefined ? '-' : formatDuration(a.lagSeconds)}</td>` +
      `<td class="num">${a.windowMinutes === undefined ? '-' : `${escapeHtml(String(a.windowMinutes))}m`}</td>` +
      `<td>${ago(a.lastSuccess)}</td>${a.lastError ? `<td class="err">${t(a.lastError)}</td>` : '<td>-</td>'}</tr>`,
  );
  const dvrRows = status.problems.dvr.map(
    (p) =>
      `<tr><td>${t(p.account)}</td><td>${t(p.stream)}</td><td>${t(p.host)}</td><td>${t(p.problem)}</td></tr>`,
  );
  const recRows = status.problems.recordings.map(
    (p) =>
      `<tr><td>${t(p.account)}</td><td>${t(p.id)}</td><td>${t(p.status)}</td><td>${t(p.problem)}</td></tr>`,
  );
  const table = (caption: string, head: string[], rows: string[], empty: string): string =>
    rows.length === 0
      ? `<p class="none">${escapeHtml(empty)}</p>`
      : `<table aria-label="${escapeHtml(caption)}"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>` +
        `<tbody>\n${rows.join('\n')}\n</tbody></table>`;

  const uptime = formatDuration((opts.now - status.startedAt.getTime()) / 1000);
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>cdn-exporter</title><style>${CSS}</style></head>
<body>
<h1>cdn-exporter</h1>
<p class="meta">version ${t(status.version)} · started ${isoMinute(status.startedAt)} (up ${uptime}) · ${
    status.ready ? '<span class="up">ready</span>' : '<span class="pending">not ready</span>'
  }</p>
<nav><a href="/metrics">/metrics</a><a href="/healthz">/healthz</a><a href="/readyz">/readyz</a></nav>
<h2>Accounts</h2>
${table('accounts', ['Account', 'API', 'Up', 'Cursor', 'Lag', 'Window', 'Last success', 'Last error'], accountRows, 'No accounts configured.')}
<h2>DVR streams with problems</h2>
${table('dvr problems', ['Account', 'Stream', 'Host', 'Problem'], dvrRows, 'None.')}
<h2>Recordings with problems</h2>
${table('recording problems', ['Account', 'ID', 'Status', 'Problem'], recRows, 'None.')}
</body></html>
`;
}
