/**
 * Traffic on the landing page (issue 24), end to end against the simulator on one FakeClock: each account's newest
 * window figures as the counters of that same window give them (metrics.window_gauges exposes them), a chart per
 * figure with its values as text, the account page's top resources as /metrics ranks them, 404 for an account that
 * is not polled, escaping of what the API names, and a history that is bounded and starts empty.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HISTORY_WINDOWS, TrafficHistory } from '../../src/server/traffic-history.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { demoWorld } from '../../src/simulator/world.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { type Stack, startStack } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const HOSTILE = '<img src=x onerror=alert(1)>&"\'';

let stacks: Stack[] = [];
afterEach(async () => {
  for (const s of stacks) await s.stop();
  stacks = [];
});

function world(): SimAccount[] {
  const [demo, acme] = demoWorld();
  return [
    demo!,
    { ...acme!, resources: [...acme!.resources, { id: '2999', name: HOSTILE, cname: 'x.example' }] },
  ];
}

async function run(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 1000) {
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function get(s: Stack, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${s.url}${path}`);
  return { status: res.status, body: await res.text() };
}

/** The text of the tile `label` in the account's card (its caption's bold figure). */
function tile(html: string, account: string, label: string): string | undefined {
  const start = html.indexOf(`<section class="acct" aria-label="traffic of ${account}"`);
  if (start < 0) return undefined;
  const card = html.slice(start, html.indexOf('</section>', start));
  return new RegExp(`<figcaption>${label}<b>([^<]*)</b>`).exec(card)?.[1];
}

function sum(sc: Scrape, name: string, match: Record<string, string>): number {
  return sc
    .all(name)
    .filter((x) => Object.entries(match).every(([k, v]) => x.labels[k] === v))
    .reduce((a, x) => a + x.value, 0);
}

describe('landing page: traffic', () => {
  it('shows each account newest window as the counters give it, charts with their values, and the top resources', async () => {
    const clock = new FakeClock(T0);
    const s = await startStack({
      clock,
      sim: { accounts: world() },
      config: {
        metrics: { window: '5m', delay: '1m', lookback: '30m', window_gauges: true },
        accounts: [{ name: 'demo' }, { name: 'acme', token: 'acme-token' }],
      },
    });
    stacks.push(s);
    // Before the first window: said so, no chart.
    let page = (await get(s, '/?refresh=off')).body;
    expect(page).toContain('kept in memory only: the charts start empty after each restart');
    // Both pending, neither ever polled: in the page's order, by name.
    expect(page).toMatch(/No traffic window counted yet since the start for acme, demo/);

    await run(clock, 20_000);
    await s.exporter.store.refresh();
    const sc = await s.scrape();
    page = (await get(s, '/?refresh=off')).body;
    for (const account of ['demo', 'acme']) {
      const card = page.slice(page.indexOf(`<section class="acct" aria-label="traffic of ${account}"`));
      const windowSeconds = Number(/Newest window [^(]+\((\d+) min\)/.exec(card)![1]) * 60;
      const requests = sum(sc, 'cdn_edge_window_requests', { account });
      const bytes = sum(sc, 'cdn_edge_window_transferred_bytes', { account });
      const hit = sum(sc, 'cdn_edge_window_cache_hit_bytes', { account });
      const fiveXx = sum(sc, 'cdn_edge_window_responses_by_class', { account, class: '5xx' });
      const bits = sum(sc, 'cdn_edge_bandwidth_bytes_per_second', { account }) * 8;
      expect(requests).toBeGreaterThan(0);
      // The newest window is the one the window gauges hold: 10 minutes while catching up, 5 after.
      const reqText = tile(page, account, 'Edge requests')!;
      const rate = requests / windowSeconds;
      expect(Number.parseFloat(reqText.replace(/,/g, ''))).toBeCloseTo(rate, rate >= 1000 ? -1 : 1);
      expect(tile(page, account, 'Edge 5xx')).toBe(
        `${((fiveXx / requests) * 100).toFixed(fiveXx / requests >= 0.1 ? 1 : 2)}%`,
      );
      expect(Number.parseFloat(tile(page, account, 'Cache hit ratio')!)).toBeCloseTo((hit / bytes) * 100, 0);
      const bw = tile(page, account, 'Edge bandwidth')!;
      expect(bw).toMatch(/^[\d.]+ [kMG]?bit\/s$/);
      const scale = { '': 1, k: 1e3, M: 1e6, G: 1e9 }[/ ([kMG]?)bit/.exec(bw)![1]! as '' | 'k' | 'M' | 'G'];
      expect(Number.parseFloat(bw) * scale).toBeCloseTo(bits, -Math.floor(Math.log10(bits)) + 2);
    }
    // Six charts per account, each with its newest value as text for screen readers.
    const charts = [
      ...page.matchAll(
        /<svg class="spark"[^>]*role="img"[^>]*><title id="[^"]+">([^<]+)<\/title><desc id="[^"]+">([^<]+)<\/desc>/g,
      ),
    ];
    expect(charts).toHaveLength(12);
    expect(charts.map((c) => c[1]!)).toContain(
      `Edge requests: ${tile(page, 'demo', 'Edge requests')} in the newest window`,
    );
    expect(charts[0]![2]).toMatch(/^\d+ windows from \d\d:\d\d to \d\d:\d\d UTC: lowest .+, highest .+\.$/);
    expect(page).not.toMatch(/<script|src="http/);
    // Revisit off: every window is final at its first read, so nothing is marked provisional.
    expect(page).not.toMatch(/class="(prov|dash|open)"/);

    // The account page: linked from the accounts table, top resources ranked as the bandwidth gauges rank them.
    expect(page).toMatch(
      /<tr><td>acme<\/td><td>metrics<\/td>.*<td><a href="accounts\/acme" aria-label="traffic of acme">traffic<\/a><\/td><\/tr>/,
    );
    const acme = await get(s, '/accounts/acme');
    expect(acme.status).toBe(200);
    const byTraffic = acme.body.slice(acme.body.indexOf('aria-label="top resources by traffic"'));
    const listed = [
      ...byTraffic.slice(0, byTraffic.indexOf('</table>')).matchAll(/<tr><td>([^<]+)<\/td>/g),
    ].map((m) => m[1]);
    const ranked = sc
      .all('cdn_edge_bandwidth_bytes_per_second')
      .filter((x) => x.labels.account === 'acme' && x.value > 0)
      .sort((a, b) => b.value - a.value || (a.labels.resource! < b.labels.resource! ? -1 : 1))
      .map((x) => x.labels.resource);
    expect(listed).toEqual(ranked.slice(0, 10));
    expect(listed).toContain('2999');
    // What the API names is escaped, never markup.
    expect(acme.body).not.toContain(HOSTILE);
    expect(acme.body).toContain('&#60;img src=x onerror=alert(1)&#62;&#38;&#34;&#39;');
    expect(acme.body).toContain('aria-label="top resources by 5xx"');

    expect((await get(s, '/accounts/nobody')).status).toBe(404);
    expect((await get(s, `/accounts/${encodeURIComponent(HOSTILE)}`)).status).toBe(404);
  }, 60_000);
});

describe('traffic history', () => {
  const response = (bits: number): TrafficResponse => ({
    account: 'a',
    metrics: [],
    issues: [],
    unknownKeys: [],
    records: [
      {
        resource: 'r1',
        edge: {
          codes: new Map(),
          classes: new Map([
            ['5xx', 3],
            ['2xx', 97],
          ]),
          requestTimeSeconds: new Map(),
          bandwidthBitsPerSecond: bits,
        },
        origin: {
          codes: new Map([
            ['502', 1],
            ['200', 9],
          ]),
          classes: new Map(),
          requestTimeSeconds: new Map(),
        },
      },
    ],
  });

  it(`keeps the last ${HISTORY_WINDOWS} windows per account, oldest first, and forgets a removed account`, () => {
    const h = new TrafficHistory();
    for (let i = 0; i < HISTORY_WINDOWS + 30; i++) h.record('a', i * 300_000, (i + 1) * 300_000, response(i));
    const got = h.get('a')!;
    expect(got.ends).toHaveLength(HISTORY_WINDOWS);
    expect(got.ends[0]).toBe(31 * 300_000);
    expect(got.figures.bandwidthBitsPerSecond.at(-1)).toBe(HISTORY_WINDOWS + 29);
    expect(got.figures.edgeRequestsPerSecond.at(-1)).toBeCloseTo(100 / 300);
    expect(got.figures.edge5xxRatio.at(-1)).toBeCloseTo(0.03);
    expect(got.figures.origin5xxRatio.at(-1)).toBeCloseTo(0.1);
    // No hit bytes nor hit ratio in the answer: no figure, not zero.
    expect(got.figures.cacheHitRatio.at(-1)).toBeNaN();
    h.remove('a');
    expect(h.get('a')).toBeUndefined();
  });
});
