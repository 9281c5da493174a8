/**
 * The cost of the web config on a scrape: the same exporter app served over HTTPS with basic auth and without, side
 * by side in one run (request by request, alternating), over a kept-alive connection (how Prometheus scrapes) and over a new connection each time
 * (a TLS handshake per scrape). Also the first request of a credential, which pays bcrypt at cost 10 once; after
 * that the verdict is cached. Certificates are made with openssl in a temporary directory and removed after.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import bcrypt from 'bcryptjs';
import { Registry } from 'prom-client';
import { silentLogger } from '../src/log.js';
import { createApp } from '../src/server/app.js';
import { createSelfMetrics } from '../src/server/self-metrics.js';
import type { Exposition } from '../src/store/types.js';
import { AuthCache } from '../src/web/auth.js';
import { startWebServer, type WebServer } from '../src/web/server.js';
import { WebConfigSource } from '../src/web/source.js';
import { median } from './measure.js';
import type { BenchRow } from './report.js';

function app() {
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'bench', apis: ['metrics'] });
  // About 1000 series (~60 KB), a small exporter's page: the same body for both servers.
  const lines = ['# HELP cdn_bench_requests_total Requests.', '# TYPE cdn_bench_requests_total counter'];
  for (let i = 0; i < 1000; i++)
    lines.push(`cdn_bench_requests_total{account="acme",resource="${i}"} ${i * 7}`);
  const body = Buffer.from(`${lines.join('\n')}\n`);
  const store: Exposition = {
    render: () => body,
    hold: () => ({ chunks: [body], release: () => {} }),
    renderGzip: () => gzipSync(body),
    familyNames: () => ['cdn_bench_requests'],
  };
  return createApp({
    registry,
    store,
    status: () => ({
      ready: true,
      version: 'bench',
      startedAt: new Date(),
      accounts: [],
      problems: { dvr: [], recordings: [] },
    }),
    log: silentLogger,
  });
}

function scrape(port: number, ca: Buffer, agent: https.Agent | false, auth?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/metrics',
        ca,
        servername: 'localhost',
        agent,
        headers: auth ? { authorization: auth } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Mean ms per scrape of `a` and of `b`, one of each in turn (a, b, a, b, ...): on a shared machine the load
 * drifts, and alternating puts both under the same drift.
 */
async function paired(
  n: number,
  a: () => Promise<number>,
  b: () => Promise<number>,
): Promise<[number, number]> {
  const total = [0, 0];
  for (let i = 0; i < n; i++) {
    for (const [k, one] of [a, b].entries()) {
      const t0 = performance.now();
      const status = await one();
      total[k]! += performance.now() - t0;
      if (status !== 200) throw new Error(`scrape answered ${status}`);
    }
  }
  return [total[0]! / n, total[1]! / n];
}

export async function webBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-bench-web-'));
  const servers: WebServer[] = [];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.crt',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { cwd: dir, stdio: 'ignore' },
  );
  const ca = readFileSync(join(dir, 'server.crt'));
  const password = 'bench-password';
  const hash = bcrypt.hashSync(password, 10).replace(/^\$2b\$/, '$2y$');
  const tls = 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n';
  writeFileSync(join(dir, 'open.yml'), tls);
  writeFileSync(join(dir, 'auth.yml'), `${tls}basic_auth_users:\n  prometheus: ${hash}\n`);
  const auth = `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}`;
  const start = async (file: string, cache?: AuthCache) => {
    const web = await startWebServer({
      app: app(),
      listen: { host: '127.0.0.1', port: 0 },
      source: new WebConfigSource(join(dir, file), silentLogger),
      log: silentLogger,
      ...(cache ? { authCache: cache } : {}),
    });
    servers.push(web);
    return (web.server.address() as AddressInfo).port;
  };
  try {
    const cache = new AuthCache();
    const open = await start('open.yml');
    const authed = await start('auth.yml', cache);

    const t0 = performance.now();
    await scrape(authed, ca, false, auth);
    const firstMs = performance.now() - t0;

    const keepOpen = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const keepAuth = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const kept = { open: [] as number[], auth: [] as number[] };
    const fresh = { open: [] as number[], auth: [] as number[] };
    for (let round = 0; round < 5; round++) {
      const [ko, ka] = await paired(
        300,
        () => scrape(open, ca, keepOpen),
        () => scrape(authed, ca, keepAuth, auth),
      );
      const [fo, fa] = await paired(
        40,
        () => scrape(open, ca, false),
        () => scrape(authed, ca, false, auth),
      );
      kept.open.push(ko);
      kept.auth.push(ka);
      fresh.open.push(fo);
      fresh.auth.push(fa);
      log(`  round ${round + 1}/5`);
    }
    keepOpen.destroy();
    keepAuth.destroy();
    if (cache.bcryptRuns !== 1) throw new Error(`bcrypt ran ${cache.bcryptRuns} times for one credential`);
    return [
      {
        name: 'HTTPS scrape, kept-alive: basic auth (baseline: open)',
        unit: 'ms',
        value: median(kept.auth),
        baseline: median(kept.open),
        target: { minRatio: 0.7 },
      },
      {
        name: 'HTTPS scrape, new TLS connection each: basic auth (baseline: open)',
        unit: 'ms',
        value: median(fresh.auth),
        baseline: median(fresh.open),
        target: { minRatio: 0.7 },
      },
      { name: 'first request of a credential (bcrypt cost 10, then cached)', unit: 'ms', value: firstMs },
    ];
  } finally {
    for (const s of servers) await s.close(100);
    rmSync(dir, { recursive: true, force: true });
  }
}
