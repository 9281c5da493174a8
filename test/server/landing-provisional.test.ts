/**
 * Provisional and final windows on the landing page and `/accounts/<name>` (issue 32): windows still open to late
 * data are drawn apart (dashed, a hollow newest point) and said so in words (tile, window line, chart title and
 * description, the windows table); once settled, a window shows its final figures and none of that.
 */
import { describe, expect, it } from 'vitest';
import { CHART_CSS, PROVISIONAL_COLOUR } from '../../src/server/charts.js';
import { renderAccountPage, renderLanding } from '../../src/server/landing.js';
import type { ExporterStatus } from '../../src/server/status.js';
import { TrafficHistory } from '../../src/server/traffic-history.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { pageText, tableRows } from '../helpers/landing-html.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const NOTE = 'provisional: still open to late data (revisit)';

function answer(requests: number): TrafficResponse {
  return {
    account: 'a',
    metrics: [],
    issues: [],
    unknownKeys: [],
    records: [
      {
        resource: 'r1',
        edge: {
          codes: new Map(),
          classes: new Map(),
          requests,
          requestTimeSeconds: new Map(),
          bandwidthBitsPerSecond: requests * 1000,
        },
        origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
      },
    ],
  };
}

function status(accounts: string[]): ExporterStatus {
  return {
    ready: true,
    version: '0.1.0',
    startedAt: new Date(T0 - 3_600_000),
    accounts: accounts.map((name) => ({ name, api: 'metrics', up: true, tried: true })),
    problems: { dvr: [], recordings: [] },
  };
}

/**
 * The demo's shape: 1-minute windows read with 1 minute of delay, complete later; 20 windows, the last `open`
 * still waiting for their revisit. First reads see about half the requests (18/s), revisits all of them (36/s).
 */
function history(open: number): TrafficHistory {
  const h = new TrafficHistory();
  for (let m = 0; m < 20; m++) {
    const start = T0 + m * MIN;
    h.record('live', start, start + MIN, answer(18 * 60));
    if (m < 20 - open) h.settle('live', start, start + MIN, answer(36 * 60));
  }
  return h;
}

/** The card of `account` on the landing page. */
function card(html: string, account: string): string {
  const start = html.indexOf(`<section class="acct" aria-label="traffic of ${account}"`);
  expect(start).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
}

function charts(html: string): { svg: string; title: string; desc: string }[] {
  return [...html.matchAll(/<svg class="spark"[^>]*>(.*?)<\/svg>/g)].map((m) => ({
    svg: m[1]!,
    title: pageText(/<title[^>]*>(.*?)<\/title>/.exec(m[1]!)![1]!),
    desc: pageText(/<desc[^>]*>(.*?)<\/desc>/.exec(m[1]!)![1]!),
  }));
}

describe('landing page: provisional windows', () => {
  it('draws the windows still open to late data apart and says so; the settled ones show their final figures', () => {
    const h = history(3);
    const settledOnly = new TrafficHistory();
    settledOnly.record('done', T0, T0 + MIN, answer(600));
    settledOnly.settle('done', T0, T0 + MIN, answer(1200));
    const html = renderLanding(status(['live', 'done']), {
      now: T0 + 30 * MIN,
      secrets: [],
      history: (a) => (a === 'live' ? h.get(a) : settledOnly.get(a)),
    });

    const live = card(html, 'live');
    // The newest window is provisional: its tile says so beside the figure, the window line counts them.
    expect(pageText(/<figcaption>Edge requests.*?<\/figcaption>/.exec(live)![0])).toBe(
      'Edge requests18.0/sprovisional',
    );
    expect(pageText(/<p class="small">Newest window.*?<\/p>/.exec(live)![0])).toBe(
      `Newest window 2026-03-10 12:19–12:20 UTC (1 min), provisional · 20 windows charted, 3 of them ${NOTE}, drawn dashed, the newest point hollow`,
    );
    const liveCharts = charts(live);
    expect(liveCharts).toHaveLength(6);
    const requests = liveCharts[0]!;
    expect(requests.title).toBe('Edge requests: 18.0/s in the newest window (provisional)');
    expect(requests.desc).toBe(
      '20 windows from 12:01 to 12:20 UTC: lowest 18.0/s, highest 36.0/s. 3 of them provisional (still open to late data), drawn dashed.',
    );
    // Drawn apart: the segments reaching the last 3 points dashed in their own colour, the newest point hollow.
    const dashed = /<path class="dash" d="([^"]+)"\/>/.exec(requests.svg);
    expect(dashed, requests.svg).not.toBeNull();
    expect(CHART_CSS).toContain(
      `.spark .dash{fill:none;stroke:${PROVISIONAL_COLOUR};stroke-width:1.5px;stroke-dasharray:3 2;`,
    );
    expect(html).toContain(CHART_CSS);
    // From the last final point to the newest: three segments, one pen stroke.
    expect(dashed![1]!.match(/L/g)).toHaveLength(3);
    expect(dashed![1]!.match(/M/g)).toHaveLength(1);
    expect(requests.svg).toMatch(/<circle class="open" [^>]*\/>$/);
    expect(CHART_CSS).toContain(`.spark .open{fill:#eef1f5;stroke:${PROVISIONAL_COLOUR};`);
    // The final windows at 36/s are the solid line, at the top of the chart (y 2 of 32); the provisional ones
    // (18/s) at its foot (y 30), reached by the dashed line only.
    const solid = /<path d="([^"]+)"/.exec(requests.svg)![1]!;
    const ys = (d: string) => new Set([...d.matchAll(/[ML](\d+) (\d+)/g)].map((m) => Number(m[2])));
    expect(ys(solid)).toEqual(new Set([2]));
    expect(ys(dashed![1]!)).toEqual(new Set([2, 30]));

    // An account whose windows are all final: nothing provisional anywhere in its card.
    const done = card(html, 'done');
    expect(done).not.toContain('provisional');
    expect(pageText(/<figcaption>Edge requests.*?<\/figcaption>/.exec(done)![0])).toBe('Edge requests20.0/s');
    expect(charts(done)[0]!.svg).not.toMatch(/class="(dash|open)"/);
  });

  it('settling the newest window turns its figure final and drops every provisional mark', () => {
    const h = history(1);
    const before = renderLanding(status(['live']), {
      now: T0 + 30 * MIN,
      secrets: [],
      history: (a) => h.get(a),
    });
    expect(card(before, 'live')).toContain('provisional');
    h.settle('live', T0 + 19 * MIN, T0 + 20 * MIN, answer(36 * 60));
    const after = card(
      renderLanding(status(['live']), { now: T0 + 30 * MIN, secrets: [], history: (a) => h.get(a) }),
      'live',
    );
    expect(after).not.toContain('provisional');
    expect(pageText(/<figcaption>Edge requests.*?<\/figcaption>/.exec(after)![0])).toBe(
      'Edge requests36.0/s',
    );
    expect(charts(after)[0]!.title).toBe('Edge requests: 36.0/s in the newest window');
  });

  it('lists every window on the account page, newest first, provisional or final, a merged revisit as one', () => {
    const h = new TrafficHistory();
    for (let m = 0; m < 5; m++) h.record('live', T0 + m * MIN, T0 + (m + 1) * MIN, answer(18 * 60));
    // Minutes 0 and 1 are revisited as one 2-minute window (4320 requests over 120 s), minute 2 on its own.
    h.settle('live', T0, T0 + 2 * MIN, answer(36 * 120));
    h.settle('live', T0 + 2 * MIN, T0 + 3 * MIN, answer(30 * 60));
    const html = renderAccountPage('live', { now: T0 + 10 * MIN, secrets: [], history: (a) => h.get(a) });
    const rows = tableRows(html, 'windows').map((r) => [r[0], r[1], r[2], r.at(-1)]);
    expect(rows).toEqual([
      ['2026-03-10 12:04–12:05', '1', '18.0/s', 'provisional'],
      ['2026-03-10 12:03–12:04', '1', '18.0/s', 'provisional'],
      ['2026-03-10 12:02–12:03', '1', '30.0/s', 'final'],
      ['2026-03-10 12:00–12:02', '2', '36.0/s', 'final'],
    ]);
    expect(pageText(html)).toContain(
      `The 4 windows charted, newest first; 2 of them ${NOTE}, the others final.`,
    );
    expect(pageText(html)).toContain(`Newest window, 1 resources in it (its first read: ${NOTE}).`);
  });
});
