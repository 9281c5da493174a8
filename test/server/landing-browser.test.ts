/** The landing page as a browser renders it (headless Chromium, --dump-dom): rows present, no token anywhere. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { createApp, type ExporterStatus } from '../../src/server/app.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { findTool } from '../helpers/tools.js';
import { FakeExposition, sampleFamilies } from './fake-exposition.js';
import { listen, type Running } from './http.js';

const SECRET = 'cdn-token-5e1f0c2d9a';
const chromium = findTool('chromium');

function runChromium(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      args,
      { timeout: 30_000, maxBuffer: 10 * 1024 * 1024, killSignal: 'SIGKILL' },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}

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
        cursor: new Date(clock.now() - 360_000),
        lagSeconds: 360,
        windowMinutes: 10,
        lastSuccess: new Date(clock.now() - 20_000),
      },
      { name: 'acme', api: 'dvr', up: true, lastSuccess: new Date(clock.now() - 5_000) },
      {
        name: '<img src=x onerror=alert(1)>',
        api: 'recordings',
        up: false,
        lastError: `401 Invalid token ${SECRET}</td></tr></table><h1>injected</h1>`,
      },
    ],
    problems: {
      dvr: [{ account: 'acme', stream: 'news/hd', host: 'edge-2', problem: 'coverage 62%' }],
      recordings: [],
    },
  };

  beforeAll(async () => {
    const registry = new Registry();
    createSelfMetrics(registry, { version: '0.1.0', defaultMetrics: false });
    const app = createApp({
      registry,
      store: new FakeExposition(sampleFamilies()),
      status: () => status,
      log: silentLogger,
      secrets: () => [SECRET],
      clock,
    });
    server = await listen(app);
    profile = mkdtempSync(join(tmpdir(), 'cdn-exporter-chromium-'));
  });

  afterAll(async () => {
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('renders the account rows and shows no token', async () => {
    const dom = await runChromium(chromium!, [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${profile}`,
      '--dump-dom',
      `${server.url}/`,
    ]);
    expect(dom).toContain('<h1>cdn-exporter</h1>');
    // Chromium serialises the parsed DOM: three account rows in the first table, whatever the injected text.
    const accounts = dom.slice(dom.indexOf('<table aria-label="accounts"'), dom.indexOf('</table>') + 8);
    const rows = accounts.match(/<tr>/g) ?? [];
    expect(rows).toHaveLength(4); // header + 3
    expect(accounts).toContain('<td>acme</td><td>metrics</td><td class="up">up</td>');
    expect(accounts).toContain('<td class="down">down</td>');
    expect(accounts).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(dom).not.toContain('<img');
    expect(dom).not.toContain('<h1>injected</h1>');
    expect(dom).toContain('news/hd');
    expect(dom).not.toContain(SECRET);
    // The marker is text like any other: the serialised DOM shows it escaped.
    expect(dom).toContain('&lt;redacted&gt;');
  });
});
