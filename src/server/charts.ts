/**
 * Small charts for the landing page, drawn on the server as inline SVG: no script, no external asset. A chart is
 * one dark line on a light band with its newest point marked, so it reads without colour; what it shows is also
 * text (the <title> names the figure and its newest value, the <desc> its range over the period), so a screen
 * reader has the values and the page is still useful with images off.
 *
 * Provisional points (windows still open to late data, ./traffic-history.ts) are drawn apart: the segments that
 * reach them dashed, in PROVISIONAL_COLOUR, and the newest point hollow when it is provisional (CHART_CSS, which
 * the page's <style> must hold); the <title> and <desc> say so in words. Shape (dashes, hollow point) carries it
 * without colour.
 */
import { escapeHtml } from './html.js';

export interface ChartSeries {
  /** What the chart shows, e.g. "Edge requests per second". */
  label: string;
  /** Point times, ms, oldest first. */
  times: readonly number[];
  values: readonly number[];
  /** A value as the page writes it (`12.3 req/s`, `4.5%`). */
  format: (v: number) => string;
  /** Per point: still open to late data (drawn apart); absent: every point is final. */
  provisional?: readonly boolean[];
}

/**
 * The line's colour, and the provisional segments' (dark amber, dashed besides: 4.3:1 on the band, where WCAG asks
 * 3:1 of graphics; 4.9:1 on the cards' white, where the `.prov` text is written in it and 4.5:1 is asked).
 */
export const LINE_COLOUR = '#1d2330';
export const PROVISIONAL_COLOUR = '#8a6d00';
const BAND_COLOUR = '#eef1f5';
/** What a provisional point is, as the page says it in words (once per card; the charts say "provisional"). */
export const PROVISIONAL_TEXT = 'provisional: still open to late data (revisit)';
/**
 * The provisional marks' style, for the page's <style>: a class per chart element instead of attributes, as
 * every chart of a page with revisit on has them (300 charts for 50 accounts).
 */
export const CHART_CSS =
  `.spark .dash{fill:none;stroke:${PROVISIONAL_COLOUR};stroke-width:1.5px;stroke-dasharray:3 2;vector-effect:non-scaling-stroke}` +
  `.spark .open{fill:${BAND_COLOUR};stroke:${PROVISIONAL_COLOUR};stroke-width:1.5px}`;

/** At most this many points are drawn; more are averaged in equal buckets (the text keeps the exact figures). */
export const CHART_POINTS = 40;

const WIDTH = 120;
const HEIGHT = 32;

function hhmm(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

/**
 * Averages `values` (NaN skipped) into at most `n` buckets of equal count; a bucket is provisional when any of its
 * points is.
 */
function bucketed(
  values: readonly number[],
  provisional: readonly boolean[] | undefined,
  n: number,
): { values: number[]; provisional: boolean[] } {
  const flag = (i: number) => provisional?.[i] === true;
  if (values.length <= n) return { values: [...values], provisional: values.map((_, i) => flag(i)) };
  const out: number[] = [];
  const open: boolean[] = [];
  for (let b = 0; b < n; b++) {
    const from = Math.floor((b * values.length) / n);
    const to = Math.floor(((b + 1) * values.length) / n);
    let sum = 0;
    let count = 0;
    let any = false;
    for (let i = from; i < to; i++) {
      const v = values[i]!;
      any ||= flag(i);
      if (Number.isFinite(v)) {
        sum += v;
        count++;
      }
    }
    out.push(count > 0 ? sum / count : Number.NaN);
    open.push(any);
  }
  return { values: out, provisional: open };
}

/** An inline SVG sparkline; `id` must be unique in the page (it ties the title and desc to the image). */
export function sparkline(s: ChartSeries, id: string): string {
  const finite = s.values.filter(Number.isFinite);
  const n = s.values.length;
  const newest = n > 0 ? s.values[n - 1]! : Number.NaN;
  const newestOpen = n > 0 && s.provisional?.[n - 1] === true;
  const open = s.provisional?.filter((p) => p).length ?? 0;
  const title =
    `${s.label}: ${Number.isFinite(newest) ? s.format(newest) : 'no figure'} in the newest window` +
    (newestOpen ? ' (provisional)' : '');
  let desc: string;
  let body = '';
  if (finite.length === 0) {
    desc = 'No figure in the windows counted so far.';
  } else {
    const min = Math.min(...finite);
    const max = Math.max(...finite);
    const from = hhmm(s.times[0]!);
    const to = hhmm(s.times[s.times.length - 1]!);
    desc = `${n} windows from ${from} to ${to} UTC: lowest ${s.format(min)}, highest ${s.format(max)}.`;
    if (open > 0) desc += ` ${open} of them provisional (still open to late data), drawn dashed.`;
    const points = bucketed(s.values, s.provisional, CHART_POINTS);
    const span = max - min;
    const step = points.values.length > 1 ? WIDTH / (points.values.length - 1) : 0;
    const y = (v: number) => (span > 0 ? HEIGHT - 2 - ((v - min) / span) * (HEIGHT - 4) : HEIGHT / 2);
    // A gap (no figure) breaks the line rather than drawing it as zero. A segment goes to the dashed path when
    // either of its ends is provisional; each path moves its pen only where its own line was broken.
    let solid = '';
    let dashed = '';
    let pen: 'solid' | 'dashed' | undefined;
    let prev: { x: number; y: number; open: boolean } | undefined;
    let last: { x: number; y: number; open: boolean } | undefined;
    for (let i = 0; i < points.values.length; i++) {
      const v = points.values[i]!;
      if (!Number.isFinite(v)) {
        prev = undefined;
        pen = undefined;
        continue;
      }
      // Whole units of a 120 x 32 box: finer is invisible at this size and costs bytes per point.
      const p = { x: Math.round(i * step), y: Math.round(y(v)), open: points.provisional[i]! };
      if (prev) {
        const kind = prev.open || p.open ? 'dashed' : 'solid';
        const move = pen === kind ? '' : `M${prev.x} ${prev.y}`;
        if (kind === 'dashed') dashed += `${move}L${p.x} ${p.y}`;
        else solid += `${move}L${p.x} ${p.y}`;
        pen = kind;
      }
      prev = p;
      last = p;
    }
    if (solid)
      body = `<path d="${solid}" fill="none" stroke="${LINE_COLOUR}" stroke-width="1.5" vector-effect="non-scaling-stroke"/>`;
    if (dashed) body += `<path class="dash" d="${dashed}"/>`;
    if (last)
      body += last.open
        ? `<circle class="open" cx="${last.x}" cy="${last.y}" r="2.5"/>`
        : `<circle cx="${last.x}" cy="${last.y}" r="2.5" fill="${LINE_COLOUR}"/>`;
  }
  return (
    `<svg class="spark" viewBox="-3 -3 ${WIDTH + 6} ${HEIGHT + 6}" width="${WIDTH + 6}" height="${HEIGHT + 6}" ` +
    `role="img" aria-labelledby="${id}-t ${id}-d"><title id="${id}-t">${escapeHtml(title)}</title>` +
    `<desc id="${id}-d">${escapeHtml(desc)}</desc>` +
    `<rect x="-3" y="-3" width="${WIDTH + 6}" height="${HEIGHT + 6}" fill="${BAND_COLOUR}"/>${body}</svg>`
  );
}
