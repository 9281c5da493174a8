/**
 * The landing page's traffic charts as headless Chromium renders them, at a phone's width and a desktop's: the
 * parsed DOM has a chart per figure with its values as text, and the screenshot (decoded PNG) shows the charts'
 * bands with their lines in them, several side by side on a desktop and at most two abreast on a phone, none cut
 * off. Windows still open to late data (provisional, issue 32) are drawn apart: the DOM has their dashed
 * segments and hollow points and says so in words, and the screenshot has the provisional colour inside the
 * bands of the account that has such windows, and none in those of the account whose windows are all final.
 * LANDING_TRAFFIC_SCREENSHOT=/path/prefix keeps copies (prefix-phone.png, prefix-desktop.png, prefix-acme.png,
 * prefix-globex.png).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { ExporterStatus } from '../../src/server/app.js';
import { PROVISIONAL_COLOUR } from '../../src/server/charts.js';
import { TrafficHistory } from '../../src/server/traffic-history.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { type Png, readPng } from '../helpers/png.js';
import { chromiumArgs, findTool, runChromium } from '../helpers/tools.js';
import { listen, type Running } from './http.js';

const chromium = findTool('chromium');
/** The chart band and line colours of src/server/charts.ts. */
const BAND = [0xee, 0xf1, 0xf5] as const;
const LINE = [0x1d, 0x23, 0x30] as const;
const ACCOUNTS = ['acme', 'globex'];
/** acme's newest windows still open to late data (not settled); globex's are all final. */
const OPEN = 6;
const NOTE = 'provisional: still open to late data (revisit)';

function window(i: number, account: string): TrafficResponse {
  const wave = 1 + Math.sin(i / 8);
  const records = ['r1', 'r2', 'r3'].map((resource, k) => ({
    resource,
    resourceName: `${account}-${resource}`,
    edge: {
      codes: new Map<string, number>(),
      classes: new Map([
        ['2xx', Math.round(30_000 * wave) + k],
        ['5xx', 10 + (i % 7) * k],
      ]),
      requestTimeSeconds: new Map<string, number>(),
      bandwidthBitsPerSecond: 1e8 * wave * (k + 1),
      hitBytes: Math.round(((1e8 * wave * (k + 1) * 300) / 8) * 0.9),
    },
    origin: {
      codes: new Map<string, number>(),
      classes: new Map([
        ['2xx', 3000],
        ['5xx', i % 5],
      ]),
      requestTimeSeconds: new Map<string, number>(),
    },
  }));
  return { account, metrics: [], issues: [], unknownKeys: [], records };
}

const isColour = (png: Png, i: number, c: readonly number[], tolerance = 6) =>
  Math.abs(png.rgb[i * 3]! - c[0]!) <= tolerance &&
  Math.abs(png.rgb[i * 3 + 1]! - c[1]!) <= tolerance &&
  Math.abs(png.rgb[i * 3 + 2]! - c[2]!) <= tolerance;

/**
 * A pixel of the provisional colour (dark amber) or of its anti-aliasing on the band: red well above blue. The line
 * and its anti-aliasing are greys (blue at or above red), so they never count.
 */
const isProvisional = (png: Png, i: number) => png.rgb[i * 3]! - png.rgb[i * 3 + 2]! > 60;
/** The colour charts.ts draws provisional segments in, as [r, g, b]. */
const PROVISIONAL = [1, 3, 5].map((k) => Number.parseInt(PROVISIONAL_COLOUR.slice(k, k + 2), 16));

/**
 * The chart bands on the screenshot: for each pixel row, the runs of band colour at least 100 px wide (a chart is
 * 126 px), and the dark line pixels and the provisional ones inside such runs.
 */
function charts(png: Png): {
  mostAbreast: number;
  linePixels: number;
  provisionalPixels: number;
  rightmost: number;
} {
  let mostAbreast = 0;
  let linePixels = 0;
  let provisionalPixels = 0;
  let rightmost = 0;
  for (let y = 0; y < png.height; y++) {
    let runs = 0;
    let x = 0;
    while (x < png.width) {
      if (!isColour(png, y * png.width + x, BAND)) {
        x++;
        continue;
      }
      const from = x;
      let dark = 0;
      let amber = 0;
      // A run of band colour, with the line's pixels (dark, or anti-aliased between dark and the band) in it.
      while (x < png.width) {
        const i = y * png.width + x;
        const lum = (png.rgb[i * 3]! + png.rgb[i * 3 + 1]! + png.rgb[i * 3 + 2]!) / 3;
        if (isColour(png, i, BAND)) x++;
        else if (lum < 235) {
          if (isColour(png, i, LINE, 60)) dark++;
          else if (isProvisional(png, i)) amber++;
          x++;
        } else break;
      }
      if (x - from >= 100) {
        runs++;
        linePixels += dark;
        provisionalPixels += amber;
        rightmost = Math.max(rightmost, x);
      }
    }
    mostAbreast = Math.max(mostAbreast, runs);
  }
  return { mostAbreast, linePixels, provisionalPixels, rightmost };
}

describe.skipIf(!chromium)('landing page traffic charts in headless Chromium', () => {
  let server: Running;
  let profile: string;
  const clock = new FakeClock();
  const history = new TrafficHistory();
  const status: ExporterStatus = {
    ready: true,
    version: '0.1.0',
    startedAt: new Date(clock.now() - 9 * 3_600_000),
    accounts: ACCOUNTS.map((name) => ({
      name,
      api: 'metrics',
      up: true,
      tried: true,
      lastSuccess: new Date(clock.now() - 20_000),
    })),
    problems: { dvr: [], recordings: [] },
  };
  const args = (): string[] => chromiumArgs(profile);

  beforeAll(async () => {
    const now = Math.floor(clock.now() / 300_000) * 300_000;
    for (const account of ACCOUNTS)
      for (let i = 0; i < 120; i++) {
        const end = now - (120 - i) * 300_000;
        history.record(account, end - 300_000, end, window(i, account));
        // Final: the same answer (read once final), but for acme's newest OPEN windows.
        if (account === 'globex' || i < 120 - OPEN)
          history.settle(account, end - 300_000, end, window(i, account));
      }
    server = await listen(exporterApp(silentLogger, { status: () => status, history, clock }));
    profile = mkdtempSync(join(tmpdir(), 'cdn-exporter-chromium-'));
  });

  afterAll(async () => {
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('has a chart per figure and account, each with its newest value and range as text', async () => {
    const dom = await runChromium(chromium!, [...args(), '--dump-dom', `${server.url}/?refresh=off`]);
    const svgs = [...dom.matchAll(/<svg class="spark"[^>]*role="img"[^>]*>([\s\S]*?)<\/svg>/g)];
    expect(svgs).toHaveLength(12);
    const h = history.get('acme')!;
    const newest = (f: keyof typeof h.figures) => h.figures[f].at(-1)!;
    const titles = svgs.map((m) => /<title[^>]*>([^<]*)<\/title>/.exec(m[1]!)![1]!);
    expect(titles).toContain(
      `Edge bandwidth: ${(newest('bandwidthBitsPerSecond') / 1e9).toPrecision(3)} Gbit/s in the newest window (provisional)`,
    );
    expect(titles).toContain(
      `Edge 5xx: ${(newest('edge5xxRatio') * 100).toFixed(2)}% in the newest window (provisional)`,
    );
    expect(titles).toContain(
      `Cache hit ratio: ${(newest('cacheHitRatio') * 100).toFixed(1)}% in the newest window (provisional)`,
    );
    for (const m of svgs)
      expect(m[1]).toMatch(
        /<desc[^>]*>96 windows from \d\d:\d\d to \d\d:\d\d UTC: lowest .+, highest .+\.( 6 of them provisional \(still open to late data\), drawn dashed\.)?<\/desc>/,
      );
    // acme's six charts (the first card) have their dashed segment and hollow newest point; globex's none.
    const drawnApart = svgs.map(
      (m) => /<path class="dash" d="[^"]+"/.test(m[1]!) && /<circle class="open"/.test(m[1]!),
    );
    expect(drawnApart).toEqual([...Array(6).fill(true), ...Array(6).fill(false)]);
    expect(dom).toContain(`${OPEN} of them ${NOTE}</span>, drawn dashed, the newest point hollow`);
    expect(dom).not.toMatch(/<script|<img|<link/);
  });

  it.each([
    ['phone', 390, 2400],
    ['desktop', 1400, 1400],
  ])('%s: the charts are drawn, with their lines, inside the page width', async (name, width, height) => {
    const file = join(profile, `${name}.png`);
    await runChromium(chromium!, [
      ...args(),
      `--window-size=${width},${height}`,
      `--screenshot=${file}`,
      `${server.url}/?refresh=off`,
    ]);
    const keep = process.env.LANDING_TRAFFIC_SCREENSHOT;
    if (keep) copyFileSync(file, `${keep}-${name}.png`);
    const png = readPng(readFileSync(file));
    expect([png.width, png.height]).toEqual([width, height]);
    const c = charts(png);
    // Every chart has its line: dark pixels in the bands, more than a few per chart.
    expect(c.linePixels).toBeGreaterThan(12 * 50);
    expect(c.rightmost).toBeLessThanOrEqual(width);
    if (name === 'phone') {
      expect(c.mostAbreast).toBeGreaterThanOrEqual(1);
      expect(c.mostAbreast).toBeLessThanOrEqual(2);
    } else expect(c.mostAbreast).toBeGreaterThanOrEqual(4);
    // acme's provisional windows show in their own colour inside the bands (a colour the test can tell apart).
    expect(PROVISIONAL[0]! - PROVISIONAL[2]!).toBeGreaterThan(60);
    expect(c.provisionalPixels).toBeGreaterThan(6 * 10);
  });

  it.each([
    ['acme', true],
    ['globex', false],
  ])(
    'account page of %s: the provisional colour in its charts only while it has provisional windows',
    async (account, open) => {
      const file = join(profile, `${account}.png`);
      await runChromium(chromium!, [
        ...args(),
        '--window-size=1400,900',
        `--screenshot=${file}`,
        `${server.url}/accounts/${account}`,
      ]);
      const keep = process.env.LANDING_TRAFFIC_SCREENSHOT;
      if (keep) copyFileSync(file, `${keep}-${account}.png`);
      const c = charts(readPng(readFileSync(file)));
      expect(c.linePixels).toBeGreaterThan(6 * 50);
      if (open) expect(c.provisionalPixels).toBeGreaterThan(6 * 10);
      else expect(c.provisionalPixels).toBe(0);
    },
  );
});
