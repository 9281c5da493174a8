/**
 * Hostile requests of issue 33 against the exporter's HTTP app (in a worker thread, ./hostile-server.ts, so its
 * CPU is measured apart from the clients'):
 *
 * - row 1: `HEAD /metrics` with a 16 KB `Accept: *\/*,*\/*,...` (within Node's 16 KiB header limit). The
 *   negotiation alone, negotiator (what the app called before) against src/server/negotiate.ts; the app's CPU per
 *   request against the same request with Prometheus' header; and `/healthz` (a new connection each, as kubelet
 *   probes) while 16 clients send such requests as fast as they are answered, against `/healthz` idle. The
 *   kubelet's default probe timeout is 1 s (`timeoutSeconds: 1`): the target for `/healthz` under load;
 * - row 3: 200 requests with a malformed percent-escape in the path (`/accounts/%ZZ`, ...): what they make the app
 *   log at info, the default level (400 each, at most a debug line: nothing);
 * - row 6: basic auth (bcrypt at cost 10, in its worker), a client at the scraper's address guessing a new password
 *   every 50 ms for 15 s while the scraper scrapes every second, just after a restart: with the verdict file kept
 *   beside state_file (the scraper known good) and without it (its first login needs the budget the guesser has
 *   spent, as docs/configuration.md says).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';
import express from 'express';
import { silentLogger } from '../src/log.js';
import { negotiateFormat } from '../src/server/negotiate.js';
import { AuthCache, verdictFileBeside } from '../src/web/auth.js';
import { startWebServer } from '../src/web/server.js';
import { WebConfigSource } from '../src/web/source.js';
import { appFor } from './hostile-app.js';
import { median } from './measure.js';
import type { BenchRow } from './report.js';

/** What Prometheus 2.x sends by default. */
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
/** The issue's header: 4000 wildcards, 16 KB. */
const HOSTILE_ACCEPT = Array.from({ length: 4000 }, () => '*/*').join(',');
/** kubelet's default probe timeout (timeoutSeconds: 1). */
const PROBE_TIMEOUT_MS = 1000;
const CLIENTS = 16;

/** The offers the app gave negotiator before (src/server/negotiate.ts's history), for the "before" figure. */
const OLD_OFFERS = [
  'text/plain; version=0.0.4',
  'application/openmetrics-text; version=1.0.0',
  'application/openmetrics-text; version=0.0.1',
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited',
].flatMap((t) => [t, ...['allow-utf-8', 'underscores', 'dots', 'values'].map((e) => `${t}; escaping=${e}`)]);

/** Mean ms of `fn` over `n` calls. */
function perCall(n: number, fn: () => unknown): number {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  return (performance.now() - t0) / n;
}

interface Served {
  url: string;
  cpuMs(): Promise<number>;
  logged(): Promise<{ lines: number; bytes: number }>;
  close(): Promise<void>;
}

function serve(): Promise<Served> {
  const worker = new Worker(new URL('./hostile-server.js', import.meta.url));
  const next = <T>(): Promise<T> =>
    new Promise((resolve, reject) => {
      const onError = (err: Error) => {
        worker.off('message', onMessage);
        reject(err);
      };
      const onMessage = (msg: T) => {
        worker.off('error', onError);
        resolve(msg);
      };
      worker.once('message', onMessage);
      worker.once('error', onError);
    });
  return next<{ url: string }>().then(({ url }) => ({
    url,
    cpuMs: async () => {
      const reply = next<{ cpuMs: number }>();
      worker.postMessage('cpu');
      return (await reply).cpuMs;
    },
    logged: async () => {
      const reply = next<{ lines: number; bytes: number }>();
      worker.postMessage('log');
      return reply;
    },
    close: async () => {
      const closed = next<string>();
      worker.postMessage('close');
      await closed;
      await worker.terminate();
    },
  }));
}

function send(
  url: string,
  opts: { method: string; path: string; accept?: string; agent: http.Agent | false },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}${opts.path}`,
      { method: opts.method, agent: opts.agent, headers: opts.accept ? { accept: opts.accept } : {} },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Server CPU ms per `HEAD /metrics` with `accept`, over `n` requests on one kept-alive connection. */
async function cpuPerHead(s: Served, accept: string, n: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await send(s.url, { method: 'HEAD', path: '/metrics', accept, agent });
    const before = await s.cpuMs();
    for (let i = 0; i < n; i++) {
      const status = await send(s.url, { method: 'HEAD', path: '/metrics', accept, agent });
      if (status !== 200) throw new Error(`HEAD /metrics answered ${status}`);
    }
    return ((await s.cpuMs()) - before) / n;
  } finally {
    agent.destroy();
  }
}

/**
 * `/healthz` latencies (ms, a new connection each, every 100 ms) for `ms` while CLIENTS clients send
 * `HEAD /metrics` with `accept` back to back (none when `accept` is undefined); and the HEADs answered per second.
 */
async function healthzUnderLoad(
  s: Served,
  accept: string | undefined,
  ms: number,
): Promise<{ latencies: number[]; headsPerSecond: number }> {
  let running = true;
  let heads = 0;
  const agents: http.Agent[] = [];
  const clients = accept
    ? Array.from({ length: CLIENTS }, async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        while (running) {
          await send(s.url, { method: 'HEAD', path: '/metrics', accept, agent });
          heads++;
        }
      })
    : [];
  const latencies: number[] = [];
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < ms) {
      const p0 = performance.now();
      const status = await send(s.url, { method: 'GET', path: '/healthz', agent: false });
      if (status !== 200) throw new Error(`/healthz answered ${status}`);
      latencies.push(performance.now() - p0);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    running = false;
    await Promise.all(clients);
    for (const a of agents) a.destroy();
  }
  return { latencies, headsPerSecond: heads / ((performance.now() - t0) / 1000) };
}

/** Paths with a malformed percent-escape, as the issue sent them. */
const BAD_ESCAPES = [
  '/accounts/100%',
  '/accounts/%ZZ',
  '/accounts/%',
  '/accounts/%E0%A4%A',
  '/accounts/%C0%AE%C0%AE',
];

/** 200 requests with bad escapes: their statuses, and what the app logged at info meanwhile. */
async function badEscapes(s: Served): Promise<{ statuses: Set<number>; lines: number; bytes: number }> {
  const before = await s.logged();
  const statuses = new Set<number>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 200; i++)
      statuses.add(await send(s.url, { method: 'GET', path: BAD_ESCAPES[i % BAD_ESCAPES.length]!, agent }));
  } finally {
    agent.destroy();
  }
  const after = await s.logged();
  return { statuses, lines: after.lines - before.lines, bytes: after.bytes - before.bytes };
}

const PASSWORD = 'bench-scraper-password';

/** GET /metrics as `prometheus:password`: the status and ms. */
function scrapeAs(url: string, password: string, agent: http.Agent | false): Promise<[number, number]> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/metrics`,
      {
        agent,
        headers: { authorization: `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve([res.statusCode ?? 0, performance.now() - t0]));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Issue 33, row 6, on a real clock: a restart (the scraper has logged in before it, when `keepVerdicts`), then a
 * client at the same address guessing a new password every 50 ms for 15 s while the scraper scrapes every second
 * (15 tries; failure limit at its defaults, 10 then one a minute). The scraper's statuses and times.
 */
async function scraperUnderGuessing(keepVerdicts: boolean): Promise<{ statuses: number[]; ms: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-bench-hostile-'));
  const file = join(dir, 'web.yml');
  writeFileSync(file, `basic_auth_users:\n  prometheus: ${bcrypt.hashSync(PASSWORD, 10)}\n`);
  const verdicts = verdictFileBeside(join(dir, 'state.json'));
  const start = async (cache: AuthCache) => {
    const web = await startWebServer({
      app: appFor(silentLogger),
      listen: { host: '127.0.0.1', port: 0 },
      source: new WebConfigSource(file, silentLogger),
      log: silentLogger,
      authCache: cache,
    });
    return { web, url: `http://127.0.0.1:${(web.server.address() as AddressInfo).port}` };
  };
  try {
    if (keepVerdicts) {
      const cache = new AuthCache({ file: verdicts });
      const before = await start(cache);
      await scrapeAs(before.url, PASSWORD, false);
      await cache.saved();
      await before.web.close(100);
    }
    const { web, url } = await start(new AuthCache(keepVerdicts ? { file: verdicts } : {}));
    // The guesser sends every 50 ms whether answered or not (a check takes longer than that), each on a new
    // connection; what it has in flight is awaited at the end.
    let guessing = true;
    const inFlight = new Set<Promise<unknown>>();
    const guesser = (async () => {
      for (let i = 0; guessing; i++) {
        const p = scrapeAs(url, `guess-${i}`, false).catch(() => undefined);
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        await new Promise((r) => setTimeout(r, 50));
      }
      await Promise.all(inFlight);
    })();
    const statuses: number[] = [];
    const ms: number[] = [];
    try {
      for (let i = 0; i < 15; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        const [status, took] = await scrapeAs(url, PASSWORD, false);
        statuses.push(status);
        ms.push(took);
      }
    } finally {
      guessing = false;
      await guesser;
      await web.close(100);
    }
    return { statuses, ms };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function hostileBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  // The negotiation alone, in this thread: negotiator (before) and ours (now), on the hostile header.
  const accepts = express.request.accepts as (this: unknown, types: string[]) => unknown;
  const req = { headers: { accept: HOSTILE_ACCEPT } };
  perCall(3, () => accepts.call(req, OLD_OFFERS));
  const negotiatorMs = median([1, 2, 3].map(() => perCall(10, () => accepts.call(req, OLD_OFFERS))));
  perCall(100, () => negotiateFormat(req));
  const oursMs = median([1, 2, 3].map(() => perCall(2000, () => negotiateFormat(req))));
  log(
    `  negotiation of a 16 KB Accept: negotiator ${negotiatorMs.toFixed(2)} ms, now ${oursMs.toFixed(4)} ms`,
  );

  const s = await serve();
  try {
    const cpu = { prometheus: [] as number[], hostile: [] as number[] };
    for (let round = 0; round < 3; round++) {
      cpu.prometheus.push(await cpuPerHead(s, PROMETHEUS_ACCEPT, 300));
      cpu.hostile.push(await cpuPerHead(s, HOSTILE_ACCEPT, 300));
    }
    log(
      `  CPU per HEAD /metrics: Prometheus' Accept ${median(cpu.prometheus).toFixed(3)} ms, 16 KB ${median(cpu.hostile).toFixed(3)} ms`,
    );
    const idle = await healthzUnderLoad(s, undefined, 3000);
    const loaded = await healthzUnderLoad(s, HOSTILE_ACCEPT, 10_000);
    log(
      `  /healthz idle median ${median(idle.latencies).toFixed(2)} ms; with ${CLIENTS} clients: median ` +
        `${median(loaded.latencies).toFixed(2)} ms, max ${Math.max(...loaded.latencies).toFixed(2)} ms, ` +
        `${loaded.headsPerSecond.toFixed(0)} HEADs/s served`,
    );
    const escapes = await badEscapes(s);
    log(
      `  200 bad escapes: statuses ${[...escapes.statuses].join(',')}, ${escapes.lines} lines ` +
        `(${escapes.bytes} bytes) logged at info`,
    );
    if (escapes.statuses.size !== 1 || !escapes.statuses.has(400))
      throw new Error(`bad escapes answered ${[...escapes.statuses].join(', ')}`);
    const kept = await scraperUnderGuessing(true);
    const notKept = await scraperUnderGuessing(false);
    log(
      `  scraper under guessing after a restart: with the verdict file ${kept.statuses.join(',')} ` +
        `(median ${median(kept.ms).toFixed(1)} ms); without ${notKept.statuses.join(',')}`,
    );
    return [
      {
        name: 'log at info for 200 requests with a malformed percent-escape (400 each)',
        unit: 'B',
        value: escapes.bytes,
        target: { maxValue: 0 },
      },
      {
        name: 'scraper tries refused of 15, a client at its address guessing, after a restart with the verdict file',
        unit: 'tries',
        value: kept.statuses.filter((st) => st !== 200).length,
        target: { maxValue: 0 },
      },
      {
        name: 'the same without the verdict file (first login needs the budget; documented)',
        unit: 'tries',
        value: notKept.statuses.filter((st) => st !== 200).length,
      },
      {
        name: 'scraper scrape while guessed at, verdict file kept (median)',
        unit: 'ms',
        value: median(kept.ms),
      },
      {
        name: 'negotiating a 16 KB Accept: src/server/negotiate.ts (baseline: negotiator, before)',
        unit: 'ms',
        value: oursMs,
        baseline: negotiatorMs,
        target: { minRatio: 100 },
      },
      {
        name: "exporter CPU per HEAD /metrics, 16 KB Accept (baseline: Prometheus' Accept)",
        unit: 'ms',
        value: median(cpu.hostile),
        baseline: median(cpu.prometheus),
        target: { minRatio: 0.5 },
      },
      {
        name: `/healthz median, ${CLIENTS} clients sending 16 KB Accepts (baseline: idle)`,
        unit: 'ms',
        value: median(loaded.latencies),
        baseline: median(idle.latencies),
        target: { maxValue: PROBE_TIMEOUT_MS },
      },
      {
        name: `/healthz max, ${CLIENTS} clients sending 16 KB Accepts (kubelet's timeout: 1 s)`,
        unit: 'ms',
        value: Math.max(...loaded.latencies),
        target: { maxValue: PROBE_TIMEOUT_MS },
      },
      {
        name: `HEAD /metrics with a 16 KB Accept served per second, ${CLIENTS} clients`,
        unit: '/s',
        value: loaded.headsPerSecond,
      },
    ];
  } finally {
    await s.close();
  }
}
