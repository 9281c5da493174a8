/**
 * The exporter process under misuse (issue 15), as a user runs it (`cdn-exporter run`) with ~100k series: 200
 * clients that ask for /metrics and never read it, 2,000 connections that send nothing, and 200 scrapes at once.
 * What a user checks: /healthz keeps answering, memory stays within 2x of normal, open files stay bounded, and
 * every one of 200 concurrent scrapes gets the whole text (served from the cached bytes, not a copy per client).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { METRIC_NAMES } from '../../src/api/vocabulary.js';
import { metricValues } from '../../src/simulator/traffic.js';
import { TrafficModel } from '../../src/simulator/traffic-model.js';
import { type CliProcess, cliTestFolder, startCli } from '../helpers/cli-process.js';
import { probeHealth } from '../helpers/health-probe.js';
import { type HostileApi, resourceJson, startHostileApi } from '../helpers/hostile-api.js';
import { waitFor } from '../helpers/stack.js';

/** 1,450 resources with every metric: about 100k series. */
const RESOURCES = 1450;
const MAX_CONNECTIONS = 256;

const dir = cliTestFolder('cli-misuse-');
let api: HostileApi;
const sockets: Socket[] = [];
beforeAll(async () => {
  const model = new TrafficModel(3);
  const t0 = Date.UTC(2026, 0, 1, 18);
  const data = Array.from({ length: RESOURCES }, (_, i) => {
    const id = String(100_000 + i);
    const values = metricValues(model.totals('acme', [id], t0, t0 + 60_000), 60, METRIC_NAMES, 'object');
    return resourceJson(id, values as unknown as Record<string, number>);
  });
  api = await startHostileApi(() => data);
});
afterAll(async () => {
  await api?.close();
});
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

function procMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

function openFiles(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** The open-file limit of processes started from here (the exporter inherits it). */
function fileLimit(): number {
  const r = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' });
  const n = Number(r.stdout.trim());
  return Number.isFinite(n) ? n : 1024;
}

/** Bytes of a GET, read to the end (nothing kept); status and length. */
function fetchLength(url: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`${url}: no answer in 30 s`)));
  });
}

function openSocket(port: number, send?: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      if (send) s.write(send);
      // Never read: what the server sends stays in the kernel buffers until they fill.
      s.pause();
      resolve(s);
    });
    s.on('error', () => undefined);
    s.once('error', reject);
    sockets.push(s);
  });
}

/**
 * A scrape that reads the first piece of its answer, then nothing more: it resolves once the exporter has begun
 * to answer (the scrape is in flight from then on, its answer held in the kernel buffers).
 */
function openScrape(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.once('data', () => {
      s.pause();
      resolve(s);
    });
    s.on('error', () => undefined);
    s.once('error', reject);
    sockets.push(s);
  });
}

async function startExporter(
  server: Record<string, unknown>,
): Promise<{ p: CliProcess; base: string; port: number }> {
  const file = join(dir, `config-${Date.now()}.yml`);
  writeFileSync(
    file,
    stringify({
      api: { base_url: api.url, token: 't', requests_per_second: 20 },
      metrics: { window: '1m', delay: 0, lookback: '10m' },
      accounts: [{ name: 'acme' }],
      server,
    }),
  );
  const p = startCli(['run', '--config', file, '--web.listen-address', '127.0.0.1:0', '--log.level', 'info']);
  const line = await p.logLine((l) => typeof l.address === 'string', 20_000);
  const base = `http://${String(line.address)}`;
  const port = Number(String(line.address).split(':').pop());
  // Caught up (the cursor within two minutes of now), with the text of every resource: about 100k series.
  await waitFor(
    async () => {
      const page = await (await fetch(`${base}/`)).text();
      const m = /<td class="ts">(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})/.exec(page);
      if (!m || Date.now() - Date.parse(`${m[1]}:00Z`) > 120_000) return false;
      return (await fetchLength(`${base}/metrics`)).bytes > 7_000_000;
    },
    60_000,
    'about 100k series on /metrics',
  );
  return { p, base, port };
}

describe('the exporter process under misuse', () => {
  it('200 clients that never read and 2,000 idle connections: /healthz answers throughout, RSS within 2x, files bounded', async () => {
    const { p, base, port } = await startExporter({ max_connections: MAX_CONNECTIONS, write_timeout: '5s' });
    const pid = p.child.pid!;
    const normal = procMb(pid, 'VmRSS');
    const limit = fileLimit();
    // This process holds every client socket: stay under its own open-file limit.
    const idle = Math.min(2000, limit - 300);
    expect(idle).toBeGreaterThan(MAX_CONNECTIONS);

    const health = probeHealth(base, async (url) => (await fetchLength(url)).status, 10_000);

    for (let i = 0; i < 200; i++) await openSocket(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
    for (let i = 0; i < idle; i++) await openSocket(port);
    let maxRss = procMb(pid, 'VmRSS');
    let maxFiles = openFiles(pid);
    // Hold them for a while, past the write timeout: the stuck scrapes are cut, memory comes back. And on until
    // /healthz has answered often meanwhile, however slowly a loaded machine runs the probes (bounded: 60 s).
    for (let i = 0; i < 40 || (health.probes <= 20 && i < 300); i++) {
      await new Promise((r) => setTimeout(r, 200));
      maxRss = Math.max(maxRss, procMb(pid, 'VmRSS'));
      maxFiles = Math.max(maxFiles, openFiles(pid));
    }
    await health.stop();
    expect(health.failed).toBe(0);
    expect(health.probes).toBeGreaterThan(20);
    expect(maxRss).toBeLessThan(2 * normal);
    // Its connections, plus the files a Node process has open anyway.
    expect(maxFiles).toBeLessThan(MAX_CONNECTIONS + 100);
    // A scrape gets in again once the server has cut the idle connections that fill max_connections (their
    // timeouts fire later on a loaded machine): waited for, bounded.
    await waitFor(
      async () => (await fetchLength(`${base}/metrics`).catch(() => ({ status: 0 }))).status === 200,
      30_000,
      'a scrape answered 200 after the misuse',
    );
  }, 120_000);

  it('200 scrapes at once each get the whole text, without a copy of it per client', async () => {
    const { p, base } = await startExporter({ max_scrapes_in_flight: 200 });
    const pid = p.child.pid!;
    const { bytes: size } = await fetchLength(`${base}/metrics`);
    const normal = procMb(pid, 'VmRSS');
    let maxRss = normal;
    const watch = setInterval(() => {
      maxRss = Math.max(maxRss, procMb(pid, 'VmRSS'));
    }, 20);
    const results = await Promise.all(Array.from({ length: 200 }, () => fetchLength(`${base}/metrics`)));
    clearInterval(watch);
    for (const r of results) expect(r.status).toBe(200);
    // Values move between polls (so does the length of their digits); a cut text would be far shorter.
    for (const r of results) expect(Math.abs(r.bytes - size)).toBeLessThan(size * 0.05);
    // 200 copies of an 8 MB text would be 1.6 GB.
    expect(maxRss).toBeLessThan(2 * normal);
  }, 120_000);

  it('beyond max_scrapes_in_flight a scrape gets 503 with Retry-After, at once', async () => {
    const { port, base } = await startExporter({ max_scrapes_in_flight: 2 });
    // Both scrapes are in flight once their answers have begun (and they stay so: about 8 MB, never read).
    for (let i = 0; i < 2; i++) await openScrape(port);
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.text()).toContain('server.max_scrapes_in_flight');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 60_000);
});
