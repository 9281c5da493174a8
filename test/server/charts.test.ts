/**
 * The landing page's inline SVG sparklines (src/server/charts.ts), taken alone: what the chart says in words (the
 * <title> names the figure and its newest value, the <desc> the range over the period, tied to the image by the
 * id given), a window without a figure as a break in the line (never a zero), at most CHART_POINTS points drawn
 * whatever the history, a flat series across the middle, the provisional colour readable on the band, and every
 * text escaped. The provisional marks as the page shows them: test/server/landing-provisional.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  CHART_CSS,
  CHART_POINTS,
  type ChartSeries,
  LINE_COLOUR,
  PROVISIONAL_COLOUR,
  PROVISIONAL_TEXT,
  sparkline,
} from '../../src/server/charts.js';
import { pageText } from '../helpers/landing-html.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0);
const MIN = 60_000;

function series(values: number[], over: Partial<ChartSeries> = {}): ChartSeries {
  return {
    label: 'Edge requests',
    times: values.map((_, i) => T0 + (i + 1) * MIN),
    values,
    format: (v) => `${v.toFixed(1)}/s`,
    ...over,
  };
}

/** The chart as a user (or a screen reader) gets it, and the points of its lines. */
function read(svg: string) {
  const title = pageText(/<title id="([^"]+)">(.*?)<\/title>/.exec(svg)![2]!);
  const desc = pageText(/<desc id="([^"]+)">(.*?)<\/desc>/.exec(svg)![2]!);
  const paths = [...svg.matchAll(/<path (?:class="dash" )?d="([^"]+)"/g)].map((m) => m[1]!);
  const points = paths.flatMap((d) =>
    [...d.matchAll(/[ML](-?\d+) (-?\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]),
  );
  const moves = paths.reduce((n, d) => n + (d.match(/M/g)?.length ?? 0), 0);
  return { title, desc, points, moves, paths };
}

/** WCAG 2 contrast ratio of two #rrggbb colours. */
function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

describe('sparkline', () => {
  it('says the newest value and the range over the period in words, tied to the image by its id', () => {
    const svg = sparkline(series([10, 30, 20]), 'c0-1');
    expect(svg).toMatch(/^<svg [^>]*role="img" aria-labelledby="c0-1-t c0-1-d"/);
    expect(svg).toContain('<title id="c0-1-t">');
    expect(svg).toContain('<desc id="c0-1-d">');
    const { title, desc } = read(svg);
    expect(title).toBe('Edge requests: 20.0/s in the newest window');
    expect(desc).toBe('3 windows from 12:01 to 12:03 UTC: lowest 10.0/s, highest 30.0/s.');
    // The highest point at the top of the band, the lowest at its foot, the newest marked.
    expect(read(svg).points).toEqual([
      [0, 30],
      [60, 2],
      [120, 16],
    ]);
    expect(svg).toContain(`<circle cx="120" cy="16" r="2.5" fill="${LINE_COLOUR}"/>`);
  });

  it('draws nothing and says so when no window has a figure', () => {
    for (const values of [[], [Number.NaN, Number.NaN]]) {
      const svg = sparkline(series(values), 'x');
      const { title, desc, paths } = read(svg);
      expect(title).toBe('Edge requests: no figure in the newest window');
      expect(desc).toBe('No figure in the windows counted so far.');
      expect(paths).toEqual([]);
      expect(svg).not.toContain('<circle');
    }
  });

  it('breaks the line at a window without a figure instead of drawing it as zero', () => {
    const svg = sparkline(series([1, 2, Number.NaN, 3, 4]), 'x');
    const { points, moves, desc, title } = read(svg);
    // Two strokes, each starting with a move; no point at the foot of the band for the gap.
    expect(moves).toBe(2);
    expect(points.map(([x]) => x)).toEqual([0, 30, 90, 120]);
    expect(desc).toBe('5 windows from 12:01 to 12:05 UTC: lowest 1.0/s, highest 4.0/s.');
    expect(title).toBe('Edge requests: 4.0/s in the newest window');
    // A newest window without a figure: the title says so, the range still comes from the others.
    expect(read(sparkline(series([1, 2, Number.NaN]), 'y')).title).toBe(
      'Edge requests: no figure in the newest window',
    );
  });

  it(`draws at most CHART_POINTS (${CHART_POINTS}) points however many windows, the words keeping the exact figures`, () => {
    const n = 4 * CHART_POINTS;
    const values = Array.from({ length: n }, (_, i) => i);
    const svg = sparkline(series(values), 'x');
    const xs = new Set(read(svg).points.map(([x]) => x));
    expect(xs.size).toBe(CHART_POINTS);
    expect(read(svg).desc).toBe(
      `${n} windows from 12:01 to 14:40 UTC: lowest 0.0/s, highest ${(n - 1).toFixed(1)}/s.`,
    );
    // A bucket with a provisional point in it is drawn provisional.
    const open = values.map((_, i) => i === 1);
    const marked = read(sparkline(series(values, { provisional: open }), 'y'));
    expect(marked.paths).toHaveLength(2);
    expect(sparkline(series(values, { provisional: open }), 'y')).toContain('<path class="dash" d="M0 ');
  });

  it('draws a series that never changes as a flat line across the middle', () => {
    const { points } = read(sparkline(series([5, 5, 5]), 'x'));
    expect(new Set(points.map(([, y]) => y))).toEqual(new Set([16]));
    // One window: a point, no line.
    const one = sparkline(series([7]), 'y');
    expect(read(one).paths).toEqual([]);
    expect(one).toContain('<circle cx="0" cy="16"');
  });

  it('escapes the label and the formatted values, in the title and the description', () => {
    const svg = sparkline(series([1, 2], { label: '<b>"acme"</b>', format: (v) => `${v} <i>&</i>` }), 'x');
    expect(svg).not.toContain('<b>');
    expect(svg).not.toContain('<i>');
    expect(read(svg).title).toBe('<b>"acme"</b>: 2 <i>&</i> in the newest window');
  });

  it('has the lines readable on the band, and the provisional colour as text on the white card', () => {
    const band = /<rect [^>]*fill="(#[0-9a-f]{6})"/.exec(sparkline(series([1]), 'x'))![1]!;
    // WCAG 2.1: 3:1 for the parts of a graphic (1.4.11), 4.5:1 for text (1.4.3). The provisional words
    // (`.prov`, ./traffic-page.ts) are written in this colour on the cards' white.
    expect(contrast(PROVISIONAL_COLOUR, band)).toBeGreaterThanOrEqual(3);
    expect(contrast(PROVISIONAL_COLOUR, '#ffffff')).toBeGreaterThanOrEqual(4.5);
    expect(contrast(LINE_COLOUR, band)).toBeGreaterThanOrEqual(4.5);
    expect(CHART_CSS).toContain('stroke-dasharray');
    expect(PROVISIONAL_TEXT).toContain('revisit');
  });
});
