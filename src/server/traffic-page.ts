/**
 * Traffic on the landing page (issue 24): per account the newest window's figures with a small chart of each over
 * the windows this process counted (./traffic-history.ts), and the page of one account (`/accounts/<name>`) with
 * its busiest resources and its windows as a table. Every dynamic string goes through `t` (redacted, then
 * escaped) or escapeHtml.
 *
 * Each window shows its final figures once settled; until then it is provisional (its first read, still open to
 * late data with metrics.revisit): drawn dashed with a hollow newest point (./charts.ts), and said in words in the
 * tile, the card's window line and the windows table (issue 32).
 *
 * Folded resources (limits.top_resources, a full series cap: docs/metrics.md, "Where `__other__` shows") are never
 * shown as a resource: the top tables have one row "other resources (N)" where their sums rank it, and the card
 * and the account page say how many resources the newest window folded.
 */
import { CHART_CSS, type ChartSeries, PROVISIONAL_COLOUR, PROVISIONAL_TEXT, sparkline } from './charts.js';
import { escapeHtml } from './html.js';
import { otherResources } from './other-resources.js';
import {
  type AccountHistory,
  FIGURES,
  type Figure,
  HISTORY_WINDOWS,
  type TopResource,
} from './traffic-history.js';

/** Reads an account's history; undefined when nothing was counted for it since the start. */
export type HistorySource = (account: string) => AccountHistory | undefined;

const SI = ['', 'k', 'M', 'G', 'T', 'P'];

/** `1.23 Gbit/s`: decimal prefixes, as bandwidth is billed. */
export function formatBits(v: number): string {
  let x = v;
  let i = 0;
  while (Math.abs(x) >= 1000 && i < SI.length - 1) {
    x /= 1000;
    i++;
  }
  return `${x.toPrecision(3)} ${SI[i]}bit/s`;
}

export function formatRate(v: number): string {
  return v >= 1000 ? `${Math.round(v).toLocaleString('en-US')}/s` : `${v.toPrecision(3)}/s`;
}

export function formatRatio(v: number): string {
  return `${(v * 100).toFixed(v >= 0.1 ? 1 : 2)}%`;
}

const FIGURE_TEXT: Record<Figure, { label: string; format: (v: number) => string }> = {
  edgeRequestsPerSecond: { label: 'Edge requests', format: formatRate },
  edge5xxRatio: { label: 'Edge 5xx', format: formatRatio },
  cacheHitRatio: { label: 'Cache hit ratio', format: formatRatio },
  bandwidthBitsPerSecond: { label: 'Edge bandwidth', format: formatBits },
  originRequestsPerSecond: { label: 'Origin requests', format: formatRate },
  origin5xxRatio: { label: 'Origin 5xx', format: formatRatio },
};

export const TRAFFIC_CSS = `
.traffic{display:flex;flex-wrap:wrap;gap:.75rem}.acct{background:#fff;box-shadow:0 0 0 1px #dde1e8;padding:.5rem .75rem;max-width:100%}
.acct h3{font-size:1rem;margin:0 0 .4rem}.tiles{display:flex;flex-wrap:wrap;gap:.5rem}
.tile{margin:0;min-width:8.5rem}.tile figcaption{font-size:.8rem;color:#5b6578}.tile b{display:block;font-size:1rem;color:#1d2330;font-variant-numeric:tabular-nums}
.spark{display:block}.wrap{overflow-x:auto;max-width:100%}
.prov{color:${PROVISIONAL_COLOUR};font-style:italic;font-weight:400;font-size:.75rem}tr.other td:first-child{font-style:italic}${CHART_CSS}
@media (max-width:40rem){body{margin:1rem}table{min-width:0}}
`;

/** The account's URL relative to the landing page (`accounts/<name>`), safe in an attribute. */
export function accountHref(name: string, fromAccountPage = false): string {
  return escapeHtml(`${fromAccountPage ? '../' : ''}accounts/${encodeURIComponent(name)}`);
}

/** How many of the account's windows are provisional. */
function provisionalCount(h: AccountHistory): number {
  return h.provisional.filter((p) => p).length;
}

function tiles(h: AccountHistory, idBase: string): string {
  const newestOpen = h.provisional[h.provisional.length - 1] === true;
  return FIGURES.map((f, i) => {
    const text = FIGURE_TEXT[f];
    const values = h.figures[f];
    const newest = values[values.length - 1]!;
    const series: ChartSeries = {
      label: text.label,
      times: h.ends,
      values,
      format: text.format,
      provisional: h.provisional,
    };
    return (
      `<figure class="tile"><figcaption>${escapeHtml(text.label)}` +
      `<b>${Number.isFinite(newest) ? escapeHtml(text.format(newest)) : '-'}</b>` +
      `${newestOpen ? '<span class="prov">provisional</span>' : ''}</figcaption>` +
      `${sparkline(series, `${idBase}-${i}`)}</figure>`
    );
  }).join('');
}

/** `2026-03-10 12:00–12:05` (UTC) and the window's length in minutes. */
function windowText(start: number, end: number): { span: string; minutes: number } {
  const from = new Date(start).toISOString().slice(0, 16).replace('T', ' ');
  const to = new Date(end).toISOString().slice(11, 16);
  return { span: `${from}–${to}`, minutes: Math.round((end - start) / 60_000) };
}

/** ` · 15,000 resources, other resources (14,900) among them` when the newest window folded some; else ''. */
function foldedText(h: AccountHistory): string {
  if (h.folded === 0) return '';
  return (
    ` · ${h.resources.toLocaleString('en-US')} resources, ${escapeHtml(otherResources(h.folded))} among them ` +
    '(without series of their own, counted together)'
  );
}

function windowLine(h: AccountHistory): string {
  const n = h.ends.length;
  const { span, minutes } = windowText(h.starts[n - 1]!, h.ends[n - 1]!);
  const open = provisionalCount(h);
  const newestOpen = h.provisional[n - 1] === true;
  return (
    `<p class="small">Newest window ${escapeHtml(span)} UTC (${minutes} min)${newestOpen ? ', provisional' : ''}` +
    `${foldedText(h)} · ${n} window${n === 1 ? '' : 's'} charted` +
    (open > 0
      ? `, <span class="prov">${open} of them ${escapeHtml(PROVISIONAL_TEXT)}</span>, drawn dashed` +
        (newestOpen ? ', the newest point hollow' : '')
      : '') +
    '</p>'
  );
}

/**
 * The traffic section of the landing page: one card per account in `accounts` (names as configured, in order).
 * `t` redacts and escapes.
 */
export function trafficSection(
  accounts: readonly string[],
  history: HistorySource,
  t: (s: string) => string,
  startedAt: Date,
): string {
  const cards: string[] = [];
  const waiting: string[] = [];
  accounts.forEach((name, k) => {
    const h = history(name);
    if (!h) {
      waiting.push(name);
      return;
    }
    cards.push(
      `<section class="acct" aria-label="traffic of ${t(name)}"><h3><a href="${accountHref(name)}">${t(name)}</a></h3>` +
        `<div class="tiles">${tiles(h, `c${k}`)}</div>${windowLine(h)}</section>`,
    );
  });
  const started = startedAt.toISOString().slice(0, 16).replace('T', ' ');
  const note =
    `<p class="small">The newest traffic window of each account and the last ${HISTORY_WINDOWS} windows this ` +
    `process counted, kept in memory only: the charts start empty after each restart (this one started ${escapeHtml(started)} UTC). ` +
    'A window shows its final figures once settled; before that it is provisional (its first read, still open to ' +
    'late data with metrics.revisit), drawn dashed.</p>';
  const pending =
    waiting.length > 0
      ? `<p class="none">No traffic window counted yet since the start for ${waiting.map(t).join(', ')}.</p>`
      : '';
  return `${note}\n<div class="traffic">${cards.join('\n')}</div>${pending}`;
}

function resourceRows(list: readonly TopResource[], t: (s: string) => string, by5xx: boolean): string {
  return list
    .map((r) => {
      const ratio = r.requests > 0 ? formatRatio(r.errors5xx / r.requests) : '-';
      const figures = by5xx
        ? `<td class="num">${r.errors5xx.toLocaleString('en-US')}</td><td class="num">${ratio}</td><td class="num">${r.requests.toLocaleString('en-US')}</td>`
        : `<td class="num">${escapeHtml(formatBits(r.bandwidthBitsPerSecond))}</td><td class="num">${r.requests.toLocaleString('en-US')}</td><td class="num">${ratio}</td>`;
      if (r.folded !== undefined)
        return `<tr class="other"><td>${escapeHtml(otherResources(r.folded))}</td><td>without series of their own, counted together</td>${figures}</tr>`;
      return `<tr><td>${t(r.resource)}</td><td>${t(r.name)}</td>${figures}</tr>`;
    })
    .join('\n');
}

function resourceTable(caption: string, head: string[], rows: string, empty: string): string {
  if (rows === '') return `<p class="none">${escapeHtml(empty)}</p>`;
  return (
    `<div class="wrap"><table aria-label="${escapeHtml(caption)}"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>` +
    `<tbody>\n${rows}\n</tbody></table></div>`
  );
}

/** The account's windows, newest first, with their figures and whether each is final. */
function windowTable(h: AccountHistory): string {
  const rows: string[] = [];
  for (let k = h.ends.length - 1; k >= 0; k--) {
    const { span, minutes } = windowText(h.starts[k]!, h.ends[k]!);
    const cells = FIGURES.map((f) => {
      const v = h.figures[f][k]!;
      return `<td class="num">${Number.isFinite(v) ? escapeHtml(FIGURE_TEXT[f].format(v)) : '-'}</td>`;
    }).join('');
    const state = h.provisional[k] ? '<td class="prov">provisional</td>' : '<td>final</td>';
    rows.push(
      `<tr><td class="ts">${escapeHtml(span)}</td><td class="num">${minutes}</td>${cells}${state}</tr>`,
    );
  }
  const head = ['Window (UTC)', 'Minutes', ...FIGURES.map((f) => FIGURE_TEXT[f].label), 'Figures'];
  return (
    `<div class="wrap"><table aria-label="windows"><thead><tr>${head.map((x) => `<th>${escapeHtml(x)}</th>`).join('')}</tr></thead>` +
    `<tbody>\n${rows.join('\n')}\n</tbody></table></div>`
  );
}

/** The body of `/accounts/<name>`: the account's charts, its busiest resources in the newest window, its windows. */
export function accountBody(name: string, h: AccountHistory | undefined, t: (s: string) => string): string {
  if (!h) {
    return `<p class="none">No traffic window of ${t(name)} counted yet since this process started (the history is kept in memory only).</p>`;
  }
  const byTraffic = resourceTable(
    'top resources by traffic',
    ['Resource', 'Name', 'Edge bandwidth', 'Edge requests', 'Edge 5xx'],
    resourceRows(h.topByTraffic, t, false),
    'No resource had traffic in the newest window (or the breakdown is per account).',
  );
  const by5xx = resourceTable(
    'top resources by 5xx',
    ['Resource', 'Name', 'Edge 5xx responses', 'Edge 5xx ratio', 'Edge requests'],
    resourceRows(h.topBy5xx, t, true),
    'No resource answered a 5xx in the newest window.',
  );
  const newestOpen = h.provisional[h.provisional.length - 1] === true;
  const open = provisionalCount(h);
  return (
    `<section class="acct" aria-label="traffic of ${t(name)}"><div class="tiles">${tiles(h, 'a')}</div>${windowLine(h)}</section>\n` +
    `<h2>Top resources by traffic</h2>\n<p class="small">Newest window, ${h.resources.toLocaleString('en-US')} resources in it` +
    `${newestOpen ? ` (its first read: ${escapeHtml(PROVISIONAL_TEXT)})` : ''}` +
    `${h.folded > 0 ? `; those without series of their own are one row, ${escapeHtml(otherResources(h.folded))}, ranked by their sums` : ''}` +
    `.</p>\n${byTraffic}\n` +
    `<h2>Top resources by 5xx</h2>\n${by5xx}\n` +
    `<h2>Windows</h2>\n<p class="small">The ${h.ends.length} windows charted, newest first` +
    `${open > 0 ? `; ${open} of them ${escapeHtml(PROVISIONAL_TEXT)}, the others final` : ', all final'}. ` +
    'A re-read that spans several windows gives one window over its span.</p>\n' +
    `<details><summary>Every window's figures</summary>\n${windowTable(h)}\n</details>`
  );
}
