/**
 * The landing page as a browser renders it (headless Chromium): --dump-dom for what the page says (rows, states,
 * settings, no token anywhere), and --screenshot of the failure states for what it looks like (the PNG is decoded
 * and its state colours counted; set LANDING_SCREENSHOT=/path.png to keep a copy and look at it).
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { ExporterStatus } from '../../src/server/app.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { countColour, inkRows, readPng } from '../helpers/png.js';
import { chromiumArgs, findTool, runChromium } from '../helpers/tools.js';
import { listen, type Running } from './http.js';

const SECRET = 'cdn-token-5e1f0c2d9a';
const chromium = findTool('chromium');

/** The colours of the states in landing.ts' CSS. */
const COLOURS = { up: '#0a7d32', down: '#b42318', failing: '#b54708' };
const WIDTH = 1400;
const HEIGHT = 1000;

describe.skipIf(!chromium)('landing page in headless Chromium', () => {
  let server: Running;
  let profile: string;
  const clock = new FakeClock();
  const status: ExporterStatus = {
    ready: true,
    version: '0.1.0',
    startedAt: new Date(clock.now() - 7_200_000),
    accounts: [
      {
        name: 'acme',
        api: 'metrics',
        up: true,
        tried: true,
        cursor: new Date(clock.now() - 360_000),
        lagSeconds: 360,
        windowMinutes: 5,
        maxWindowMinutes: 10,
        lastSuccess: new Date(clock.now() - 20_000),
      },
      {
        name: 'acme',
        api: 'dvr-net',
        up: true,
        tried: true,
        lastSuccess: new Date(clock.now() - 5_000),
        lastError: 'news/hdd: 404: stream not found',
        lastErrorAt: new Date(clock.now() - 5_000),
        errorsSinceSuccess: 4,
      },
      {
        name: 'globex',
        api: 'metrics',
        up: false,
        tried: true,
        cursor: new Date(clock.now() - 3_600_000),
        lagSeconds: 3600,
        windowMinutes: 2,
        maxWindowMinutes: 2,
        lastSuccess: new Date(clock.now() - 1_800_000),
        lastError: '504: execution timeout',
        lastErrorAt: new Date(clock.now() - 60_000),
        errorsSinceSuccess: 12,
      },
      {
        name: 'initech',
        api: 'metrics',
        up: false,
        tried: true,
        lastError: 'configuration: token file /run/secrets/initech: does not exist',
        lastErrorAt: new Date(clock.now() - 30_000),
        errorsSinceSuccess: 3,
      },
      { name: 'umbrella', api: 'recorder-cloud', up: false, tried: false },
      {
        name: '<img src=x onerror=alert(1)>',
        api: 'recorder-cloud',
        up: false,
        lastError: `401 Invalid token ${SECRET}</td></tr></table><h1>injected</h1>`,
      },
    ],
    problems: {
      dvr: [
        { account: 'acme', stream: 'news/hdd', problem: 'unknown stream (404: stream not found)' },
        { account: 'acme', stream: 'news/hd', host: 'edge-2', problem: 'coverage 62%' },
      ],
      recordings: [
        {
          account: 'acme',
          id: '65f0c0ffee0000000000abcd',
          sourceDomain: 'origin.acme.example',
          sourcePath: '/live/main/playlist.m3u8',
          resourceId: '1004',
          status: 'error',
          problem: 'recording in error',
        },
      ],
    },
    settings: {
      shard: 1,
      shards: 3,
      accountsConfigured: 12,
      accountsOwned: 5,
      apiHost: 'api.cdn.example',
      windowMs: 300_000,
      delayMs: 300_000,
      lookbackMs: 3_600_000,
      requestsPerSecond: 5,
      concurrency: 4,
    },
  };
  const args = (): string[] => chromiumArgs(profile);

  beforeAll(async () => {
    server = await listen(
      exporterApp(silentLogger, { status: () => status, secrets: () => [SECRET], clock }),
    );
    profile = mkdtempSync(join(tmpdir(), 'cdn-exporter-chromium-'));
  });

  afterAll(async () => {
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('renders the account rows and shows no token', async () => {
    const dom = await runChromium(chromium!, [...args(), '--dump-dom', `${server.url}/`]);
    expect(dom).toContain('<h1>cdn-exporter</h1>');
    // Chromium serialises the parsed DOM: six account rows in the first table, whatever the injected text.
    const accounts = dom.slice(dom.indexOf('<table aria-label="accounts"'), dom.indexOf('</table>') + 8);
    const rows = accounts.match(/<tr>/g) ?? [];
    expect(rows).toHaveLength(7); // header + 6
    expect(accounts).toContain('<td>acme</td><td>metrics</td><td class="up">up</td>');
    // Answering, but a stream fails: not "up".
    expect(accounts).toContain('<td>acme</td><td>dvr-net</td><td class="failing">failing</td>');
    expect(accounts).toContain('<td>globex</td><td>metrics</td><td class="down">down</td>');
    expect(accounts).toContain('<td>umbrella</td><td>recorder-cloud</td><td class="pending">pending</td>');
    expect(accounts).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(dom).not.toContain('<img');
    expect(dom).not.toContain('<h1>injected</h1>');
    expect(dom).toContain('news/hd');
    expect(dom).not.toContain(SECRET);
    // The marker is text like any other: the serialised DOM shows it escaped.
    expect(dom).toContain('&lt;redacted&gt;');
  });

  it('tells what an SRE on call needs: window in use, error time and count, shard and settings, recordings by source', async () => {
    const dom = await runChromium(chromium!, [...args(), '--dump-dom', `${server.url}/`]);
    const text = dom
      .replace(/<[^>]*>/g, '')
      .replace(/&nbsp;/g, ' ')
      .replace(/&amp;/g, '&');
    // The window in use (5m), and a shrunk limit said in words.
    expect(dom).toMatch(/<td>acme<\/td><td>metrics<\/td>.*?<td class="num">5m<\/td>/);
    expect(text).toContain('2m (at most 2m after 504)');
    // The last error: when, how often since the last success, what.
    expect(text).toContain('12× since the last success');
    expect(text).toContain('504: execution timeout');
    expect(text).toContain('configuration: token file /run/secrets/initech: does not exist');
    // Every account counted by its worst state, and where this page's accounts are among them.
    expect(text).toContain(
      '5 accounts: 3 down · 1 failing · 0 with problems listed · 1 pending · 0 up · DVR streams with problems: 2 · ' +
        'recordings with problems: 1 · accounts with series refused: 0',
    );
    expect(text).toContain('Accounts 1–5 of 5, worst first');
    expect(dom).toMatch(
      /<form class="find" method="get" role="search">.*<input type="search" name="q" value=""/,
    );
    // Which replica this is, with what.
    expect(text).toContain(
      'shard 2 of 3 (SHARD=1, SHARDS=3) polls 5 of 12 accounts · API api.cdn.example · ' +
        'window 5m, delay 5m, lookback 1h · 5 requests/s, concurrency 4',
    );
    // Recordings by what a person recognises.
    expect(text).toContain('origin.acme.example/live/main/playlist.m3u8');
    expect(dom).toMatch(
      /<td>acme<\/td><td>origin\.acme\.example\/live\/main\/playlist\.m3u8<\/td><td>1004<\/td>/,
    );
    expect(text).toContain('unknown stream (404: stream not found)');
    // Runbook and dashboards, and a visible, stoppable refresh.
    expect(dom).toMatch(
      /<a href="https:\/\/github\.com\/cdn-exporter\/cdn-exporter\/blob\/main\/docs\/alerts\.md">Runbook<\/a>/,
    );
    expect(dom).toMatch(
      /<a href="https:\/\/github\.com\/cdn-exporter\/cdn-exporter\/blob\/main\/docs\/operations\.md#dashboards">Dashboards<\/a>/,
    );
    expect(dom).toContain('<meta http-equiv="refresh" content="30">');
    expect(text).toContain('Reloads every 30 s · stop reloading');
    const off = await runChromium(chromium!, [...args(), '--dump-dom', `${server.url}/?refresh=off`]);
    expect(off).not.toContain('http-equiv="refresh"');
    expect(off).toContain('Reloading is off');
  });

  it('screenshot of the failure states: every state in its colour, the page filled, not blank', async () => {
    const file = join(profile, 'landing.png');
    await runChromium(chromium!, [
      ...args(),
      `--window-size=${WIDTH},${HEIGHT}`,
      `--screenshot=${file}`,
      `${server.url}/?refresh=off`,
    ]);
    expect(existsSync(file)).toBe(true);
    const keep = process.env.LANDING_SCREENSHOT;
    if (keep) copyFileSync(file, keep);
    const png = readPng(readFileSync(file));
    expect([png.width, png.height]).toEqual([WIDTH, HEIGHT]);
    // Text from the top to well down the page: the tables rendered, not an error page or a blank one.
    expect(inkRows(png)).toBeGreaterThan(HEIGHT / 4);
    // Each state's colour is on the page, as text a person sees: up (green), down (red), failing (orange).
    for (const [state, colour] of Object.entries(COLOURS)) {
      expect(countColour(png, colour), `${state} ${colour}`).toBeGreaterThan(20);
    }
  });
});
