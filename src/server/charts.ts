/**
 * Small charts for the landing page, drawn on the server as inline SVG: no script, no external asset. A chart is
 * one dark line on a light band with its newest point marked, so it reads without colour; what it shows is also
 * text (the <title> names the figure and its newest value, the <desc> its range over the period), so a screen
 * reader has the values and the page is still useful with images off.
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
}

/** At most this many points are drawn; more are averaged in equal buckets (the text keeps the exact figures). */
export const CHART_POINTS = 40;

const WIDTH = 120;
const HEIGHT = 32;

function hhmm(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

/** Averages `values` (NaN skipped) into at most `n` buckets of equal count. */
function bucketed(values: readonly number[], n: number): number[] {
  if (values.length <= n) return [...values];
  const out: number[] = [];
  for (let b = 0; b < n; b++) {
    const from = Math.floor((b * values.length) / n);
    const to = Math.floor(((b + 1) * values.length) / n);
    let sum = 0;
    let count = 0;
    for (let i = from; i < to; i++) {
      const v = values[i]!;
      if (Number.isFinite(v)) {
        sum += v;
        count++;
      }
    }
    out.push(count > 0 ? sum / count : Number.NaN);
  }
  return out;
}

/** An inline SVG sparkline; `id` must be unique in the page (it ties the title and desc to the image). */
export function sparkline(s: ChartSeries, id: string): string {
  const finite = s.values.filter(Number.isFinite);
  const newest = s.values.length > 0 ? s.values[s.values.length - 1]! : Number.NaN;
  const title = `${s.label}: ${Number.isFinite(newest) ? s.format(newest) : 'no figure'} in the newest window`;
  let desc: string;
  let body = '';
  if (finite.length === 0) {
    desc = 'No figure in the windows counted so far.';
  } else {
    const min = Math.min(...finite);
    const max = Math.max(...finite);
    const from = hhmm(s.times[0]!);
    const to = hhmm(s.times[s.times.length - 1]!);
    desc = `${s.values.length} windows from ${from} to ${to} UTC: lowest ${s.format(min)}, highest ${s.format(max)}.`;
    const points = bucketed(s.values, CHART_POINTS);
    const span = max - min;
    const step = points.length > 1 ? WIDTH / (points.length - 1) : 0;
    const y = (v: number) => (span > 0 ? HEIGHT - 2 - ((v - min) / span) * (HEIGHT - 4) : HEIGHT / 2);
    // A gap (no figure) breaks the line rather than drawing it as zero.
    let d = '';
    let pen = false;
    let last: [number, number] | undefined;
    points.forEach((v, i) => {
      if (!Number.isFinite(v)) {
        pen = false;
        return;
      }
      // Whole units of a 120 x 32 box: finer is invisible at this size and costs bytes per point.
      const px = Math.round(i * step);
      const py = Math.round(y(v));
      d += `${pen ? 'L' : 'M'}${px} ${py}`;
      pen = true;
      last = [px, py];
    });
    body = `<path d="${d}" fill="none" stroke="#1d2330" stroke-width="1.5" vector-effect="non-scaling-stroke"/>`;
    if (last) body += `<circle cx="${last[0]}" cy="${last[1]}" r="2.5" fill="#1d2330"/>`;
  }
  return (
    `<svg class="spark" viewBox="-3 -3 ${WIDTH + 6} ${HEIGHT + 6}" width="${WIDTH + 6}" height="${HEIGHT + 6}" ` +
    `role="img" aria-labelledby="${id}-t ${id}-d"><title id="${id}-t">${escapeHtml(title)}</title>` +
    `<desc id="${id}-d">${escapeHtml(desc)}</desc>` +
    `<rect x="-3" y="-3" width="${WIDTH + 6}" height="${HEIGHT + 6}" fill="#eef1f5"/>${body}</svg>`
  );
}
