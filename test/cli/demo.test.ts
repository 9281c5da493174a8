/**
 * `cdn-exporter demo` as a person starts it: once it serves, a few lines of plain text on stderr say where the
 * landing page and /metrics are and how to point Prometheus at it (on the port it really serves); `demo --help`
 * describes the demo itself.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { demoBanner, EXAMPLE_PROMETHEUS_TARGET } from '../../src/demo.js';
import { killAll, requireBuild, runCli, startCli } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';

beforeAll(requireBuild);
afterEach(killAll);

describe('demo banner', () => {
  it('names the landing page, /metrics and the scrape target on the port it serves, as text', async () => {
    const p = startCli(['demo', '--web.listen-address', '127.0.0.1:0']);
    const metricsLine = await p.textLine(/^ {2}Metrics\s+http:/, 20_000);
    const metricsUrl = /(http:\/\/\S+\/metrics)$/.exec(metricsLine)?.[1];
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*\/metrics$/);
    const port = new URL(metricsUrl!).port;
    const err = p.stderr();
    const banner = err.split('\n').filter((l) => !l.startsWith('{'));
    expect(banner.join('\n')).toContain(`Landing page  http://127.0.0.1:${port}/\n`);
    // Not the example's port, so the banner says what to change and gives the command.
    const prometheus = banner
      .slice(banner.findIndex((l) => l.includes('Prometheus')))
      .join(' ')
      .replace(/\s+/g, ' ');
    expect(prometheus).toContain(`scrape 127.0.0.1:${port}`);
    expect(prometheus).toContain(`set its target to 127.0.0.1:${port}`);
    expect(prometheus).toContain('prometheus --config.file=examples/prometheus.yml');
    expect(banner.join('\n')).toContain('Ctrl-C');
    // The banner is no field of a JSON log line.
    for (const line of err.split('\n').filter((l) => l.startsWith('{'))) {
      expect(line).not.toMatch(/Landing page|prometheus --config|in a browser/);
    }

    const landing = await fetch(`http://127.0.0.1:${port}/`);
    expect(landing.status).toBe(200);
    expect(landing.headers.get('content-type')).toMatch(/^text\/html/);
    const scrape = Scrape.of(await (await fetch(metricsUrl!)).text());
    expect(scrape.value('cdn_exporter_build_info', {})).toBeDefined();
  });

  it("the landing page shows each demo account's traffic charts within two minutes of start", async () => {
    const p = startCli(['demo', '--web.listen-address', '127.0.0.1:0']);
    const line = await p.textLine(/^ {2}Landing page\s+http:/, 20_000);
    const url = /(http:\/\/\S+\/)$/.exec(line)![1]!;
    const until = Date.now() + 120_000;
    let page = '';
    // The demo walks its lookback at once: windows are counted seconds after start.
    while (Date.now() < until) {
      page = await (await fetch(`${url}?refresh=off`)).text();
      if ((page.match(/<svg class="spark"/g) ?? []).length >= 12) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const account of ['demo', 'acme']) {
      const start = page.indexOf(`<section class="acct" aria-label="traffic of ${account}"`);
      expect(start, account).toBeGreaterThan(0);
      const card = page.slice(start, page.indexOf('</section>', start));
      expect(card.match(/<svg class="spark"/g)).toHaveLength(6);
      expect(card).toMatch(/<figcaption>Edge requests<b>[\d.,]+\/s<\/b>/);
    }
  }, 150_000);

  it('the example Prometheus configuration scrapes the port the banner names for the default address', () => {
    const config = parse(
      readFileSync(join(import.meta.dirname, '../../examples/prometheus.yml'), 'utf8'),
    ) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    expect(config.scrape_configs[0]!.static_configs[0]!.targets).toEqual([EXAMPLE_PROMETHEUS_TARGET]);
    expect(EXAMPLE_PROMETHEUS_TARGET.endsWith(':9877')).toBe(true);
  });
});

describe('demo banner on every interface', () => {
  // The process test above serves on loopback port 0; the default address (every interface, :9877) may be taken
  // on a test machine, so its banner is checked from the function the process prints.
  it('on the default address: localhost for the browser, the example configuration as it is', () => {
    const text = demoBanner('[::]:9877', 'http://127.0.0.1:40000');
    expect(text).toContain('Landing page  http://localhost:9877/\n');
    expect(text).toContain('Metrics       http://localhost:9877/metrics\n');
    expect(text).toContain(
      'Prometheus    prometheus --config.file=examples/prometheus.yml   (scrapes 127.0.0.1:9877)',
    );
    expect(text).not.toContain('set its');
  });

  it('on another port of every interface: the loopback target to put in the example configuration', () => {
    const text = demoBanner('0.0.0.0:9900', 'http://127.0.0.1:40000').replace(/\s+/g, ' ');
    expect(text).toContain('Landing page http://localhost:9900/ ');
    expect(text).toContain(
      'scrape 127.0.0.1:9900: examples/prometheus.yml scrapes 127.0.0.1:9877, set its target to 127.0.0.1:9900',
    );
  });
});

describe('demo --help', () => {
  it('describes the demo, its accounts and its flags, and exits 0', async () => {
    const r = await runCli(['demo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: cdn-exporter demo/);
    for (const word of [
      'simulator',
      'acme',
      'live/main',
      '45 minutes back',
      '--web.listen-address',
      'Ctrl-C',
    ])
      expect(r.stdout).toContain(word);
    // Its own text, not the general usage.
    expect(r.stdout).not.toContain('check-config');
  });
});
