/**
 * The landing page with traffic at 10,000 resources x 50 accounts (issue 24): what one counted window costs the
 * history (its figures and its top resources, from an answer of 10,000 records), the memory the history holds once
 * every account's ring is full, and the bytes and render time of `/` and of `/accounts/<name>` through the real
 * app (HTTP on loopback). `node dist/bench/run.js landing` runs it alone.
 *
 * `landingScaleBenchmarks` (issue 33, row 2): the page at 1,000 and 10,000 accounts, 41 windows charted each: its
 * bytes (plain and gzipped), a render (the first request once the copy is a second old) and a request served from
 * the copy, and `/healthz` and `/metrics` while 20 clients reload `/` as fast as they are answered, each beside the
 * same request with no page load, in the same run. `node dist/bench/run.js 'landing page at'` runs it alone.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { Registry } from 'prom-client';
import { systemClock } from '../src/clock.js';
import { silentLogger } from '../src/log.js';
import { createApp } from '../src/server/app.js';
import { PAGE_ACCOUNTS, PAGE_TTL_MS } from '../src/server/landing.js';
import { createSelfMetrics } from '../src/server/self-metrics.js';
import type { AccountStatus, DvrProblem, ExporterStatus } from '../src/server/status.js';
import { HISTORY_BYTES_PER_ACCOUNT, HISTORY_WINDOWS, TrafficHistory } from '../src/server/traffic-history.js';
import type { Exposition } from '../src/store/types.js';
import type { TrafficRecord, TrafficResponse } from '../src/traffic/response.js';
import { fullGc, median } from './measure.js';
import type { BenchRow } from './report.js';

const ACCOUNTS = 50;
const RESOURCES = 10_000;
const WINDOW_MS = 300_000;

function answer(account: string, w: number): TrafficResponse {
  const records: TrafficRecord[] = [];
  for (let r = 0; r < RESOURCES; r++) {
    const load = ((r * 7919 + w * 104_729) % 1000) + 1;
    records.push({
      resource: String(100_000 + r),
      resourceName: `resource-${r}.${account}.example`,
      edge: {
        codes: new Map(),
        classes: new Map([
          ['2xx', load * 100],
          ['5xx', (r + w) % 13],
        ]),
        requestTimeSeconds: new Map(),
        bandwidthBitsPerSecond: load * 1e5,
        hitBytes: load * 3e6,
      },
      origin: {
        codes: new Map(),
        classes: new Map([
          ['2xx', load * 10],
          ['5xx', (r + w) % 3],
        ]),
        requestTimeSeconds: new Map(),
      },
    });
  }
  return { account, metrics: [], issues: [], unknownKeys: [], records };
}

const EMPTY_STORE: Exposition = {
  render: () => Buffer.alloc(0),
  hold: () => ({ chunks: [], release: () => {} }),
  renderGzip: () => Buffer.alloc(0),
  familyNames: () => [],
};

export async function landingBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const names = Array.from({ length: ACCOUNTS }, (_, i) => `account-${String(i).padStart(2, '0')}`);
  // Answers are reused across accounts (building 50 x 96 answers of 10k records would measure the bench).
  const answers = Array.from({ length: 4 }, (_, w) => answer('bench', w));
  const history = new TrafficHistory();
  const now = Date.UTC(2026, 2, 16, 12);
  fullGc();
  const heapBefore = process.memoryUsage().heapUsed;
  const recordMs: number[] = [];
  for (let w = 0; w < HISTORY_WINDOWS; w++) {
    const end = now - (HISTORY_WINDOWS - w) * WINDOW_MS;
    for (const name of names) {
      const t0 = performance.now();
      history.record(name, end - WINDOW_MS, end, answers[w % answers.length]!);
      recordMs.push(performance.now() - t0);
    }
  }
  fullGc();
  const heapAfter = process.memoryUsage().heapUsed;
  log(`history: ${names.length} accounts x ${HISTORY_WINDOWS} windows recorded`);

  const status: ExporterStatus = {
    ready: true,
    version: 'bench',
    startedAt: new Date(now - 9 * 3_600_000),
    accounts: names.map((name) => ({
      name,
      api: 'metrics',
      up: true,
      tried: true,
      lastSuccess: new Date(now),
    })),
    problems: { dvr: [], recordings: [] },
  };
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'bench', defaultMetrics: false });
  let skew = 0;
  const app = createApp({
    registry,
    store: EMPTY_STORE,
    status: () => status,
    history,
    log: silentLogger,
    // The page's "ago" columns read the time; nothing here sleeps. Each request below comes a copy's lifetime
    // later, so each is rendered anew (the copies are timed in landingScaleBenchmarks).
    clock: { ...systemClock, now: () => now + skew },
  });
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const addr = server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const page = async (path: string): Promise<{ bytes: number; ms: number }> => {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 15; i++) {
      skew += PAGE_TTL_MS;
      const t0 = performance.now();
      const res = await fetch(`${base}${path}`);
      bytes = (await res.arrayBuffer()).byteLength;
      times.push(performance.now() - t0);
    }
    return { bytes, ms: median(times) };
  };
  const landing = await page('/?refresh=off');
  const account = await page(`/accounts/${names[7]}`);
  await new Promise<void>((resolve) => server.close(() => resolve()));

  return [
    {
      name: `history: one window of ${RESOURCES} resources (median)`,
      unit: 'ms',
      value: median(recordMs),
      target: { maxValue: 20 },
    },
    {
      name: `history: heap of ${ACCOUNTS} accounts x ${HISTORY_WINDOWS} windows`,
      unit: 'KB',
      value: (heapAfter - heapBefore) / 1024,
      baseline: (ACCOUNTS * HISTORY_BYTES_PER_ACCOUNT) / 1024,
      target: { minRatio: 0.5 },
    },
    {
      name: `landing page, ${ACCOUNTS} accounts: bytes`,
      unit: 'KB',
      value: landing.bytes / 1024,
      target: { maxValue: 400 },
    },
    {
      name: `landing page, ${ACCOUNTS} accounts: served in (median)`,
      unit: 'ms',
      value: landing.ms,
      target: { maxValue: 100 },
    },
    {
      name: `account page, ${RESOURCES} resources: bytes`,
      unit: 'KB',
      value: account.bytes / 1024,
      target: { maxValue: 50 },
    },
    { name: 'account page: served in (median)', unit: 'ms', value: account.ms, target: { maxValue: 20 } },
  ];
}

/** Windows charted per account at scale: what the issue's measurements had (41, about 3.5 hours of 5 minutes). */
const SCALE_WINDOWS = 41;
/** Clients reloading `/` at once, and how long each load phase lasts. */
const CLIENTS = 20;
const LOAD_MS = 5000;
/** `/healthz` (or `/metrics`) is asked this often during a phase. */
const PROBE_EVERY_MS = 25;

/** `n` accounts as a big fleet looks: some down, failing, with DVR problems, pending; a third with DVR. */
function fleet(n: number, now: number): ExporterStatus {
  const accounts: AccountStatus[] = [];
  const dvr: DvrProblem[] = [];
  for (let i = 0; i < n; i++) {
    const name = `account-${String(i).padStart(5, '0')}`;
    const lastSuccess = new Date(now - (i % 600) * 1000);
    const down = i % 97 === 0;
    if (i % 50 === 1) accounts.push({ name, api: 'metrics', up: false, tried: false });
    else
      accounts.push({
        name,
        api: 'metrics',
        up: !down,
        tried: true,
        cursor: new Date(now - 360_000),
        lagSeconds: 360,
        windowMinutes: 5,
        maxWindowMinutes: 10,
        lastSuccess,
        ...(down
          ? {
              lastError: '504: execution timeout: the statistics API did not answer within 60 s',
              lastErrorAt: new Date(now - 30_000),
              errorsSinceSuccess: 7,
            }
          : {}),
      });
    if (i % 3 === 0) accounts.push({ name, api: 'dvr-net', up: true, tried: true, lastSuccess });
    if (i % 83 === 0)
      for (const stream of ['live/main', 'news/hd'])
        dvr.push({ account: name, stream, host: 'dvr-1.example', problem: 'coverage 62%' });
  }
  return {
    ready: true,
    version: 'bench',
    startedAt: new Date(now - 9 * 3_600_000),
    accounts,
    problems: { dvr, recordings: [] },
  };
}

/** A small answer whose figures move with the window and the account (each account's charts differ). */
function smallAnswer(a: number, w: number): TrafficResponse {
  const records: TrafficRecord[] = ['r1', 'r2', 'r3'].map((resource, k) => {
    const load = ((a * 7919 + w * 104_729 + k * 31) % 1000) + 1;
    return {
      resource,
      resourceName: `${resource}.example`,
      edge: {
        codes: new Map(),
        classes: new Map([
          ['2xx', load * 100],
          ['5xx', (a + w + k) % 13],
        ]),
        requestTimeSeconds: new Map(),
        bandwidthBitsPerSecond: load * 1e5,
        hitBytes: load * 3e6,
      },
      origin: { codes: new Map(), classes: new Map([['2xx', load * 10]]), requestTimeSeconds: new Map() },
    };
  });
  return { account: 'bench', metrics: [], issues: [], unknownKeys: [], records };
}

interface Raw {
  ms: number;
  bytes: number;
  status: number;
}

/** One GET on a keep-alive agent; the body is counted, not decoded (gzip stays gzip, as a browser receives it). */
function get(
  agent: http.Agent,
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<Raw> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => resolve({ ms: performance.now() - t0, bytes, status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

interface Load {
  reloads: number;
  times: Record<string, number[]>;
}

/**
 * `clients` browsers reloading `/` for LOAD_MS while `/healthz` and `/metrics` are probed every PROBE_EVERY_MS,
 * all from a worker thread (./landing-clients.ts).
 */
async function load(port: number, clients: number): Promise<Load> {
  const worker = new Worker(new URL('./landing-clients.js', import.meta.url), {
    workerData: { port, clients, ms: LOAD_MS, probes: ['/healthz', '/metrics'], everyMs: PROBE_EVERY_MS },
  });
  try {
    return await new Promise<Load>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  } finally {
    await worker.terminate();
  }
}

const max = (xs: readonly number[]): number => xs.reduce((a, b) => Math.max(a, b), 0);

async function atScale(n: number, log: (line: string) => void): Promise<BenchRow[]> {
  const realNow = Date.now();
  const status = fleet(n, realNow);
  const history = new TrafficHistory();
  for (let w = 0; w < SCALE_WINDOWS; w++) {
    const end = realNow - (SCALE_WINDOWS - w) * WINDOW_MS;
    for (let a = 0; a < n; a++) {
      const name = `account-${String(a).padStart(5, '0')}`;
      history.record(name, end - WINDOW_MS, end, smallAnswer(a, w));
    }
    // The history holds each newest answer weakly, and a WeakRef keeps its target to the end of the task: a turn
    // of the loop per window lets the answers go.
    await new Promise((resolve) => setImmediate(resolve));
  }
  log(`${n} accounts x ${SCALE_WINDOWS} windows recorded`);
  fullGc();
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'bench', defaultMetrics: true });
  // The bench moves the app's clock past the copy's lifetime to time a render; otherwise it is the real time.
  let skew = 0;
  const app = createApp({
    registry,
    store: EMPTY_STORE,
    status: () => status,
    history,
    log: silentLogger,
    clock: { ...systemClock, now: () => Date.now() + skew },
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const gzip = { 'accept-encoding': 'gzip, deflate, br' };

  const plain = await get(agent, port, '/');
  const zipped = await get(agent, port, '/', gzip);
  const rendered: number[] = [];
  const cached: number[] = [];
  for (let i = 0; i < 15; i++) {
    skew += PAGE_TTL_MS;
    rendered.push((await get(agent, port, '/', gzip)).ms);
    cached.push((await get(agent, port, '/', gzip)).ms);
  }
  skew = 0;

  fullGc();
  const quiet = await load(port, 0);
  const rssBefore = process.memoryUsage().rss;
  let rssMax = rssBefore;
  const watch = setInterval(() => {
    rssMax = Math.max(rssMax, process.memoryUsage().rss);
  }, 50);
  const loaded = await load(port, CLIENTS);
  const { reloads } = loaded;
  const healthQuiet = quiet.times['/healthz']!;
  const metricsQuiet = quiet.times['/metrics']!;
  const healthLoad = loaded.times['/healthz']!;
  const metricsLoad = loaded.times['/metrics']!;
  clearInterval(watch);
  agent.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  log(
    `${n} accounts: ${reloads} reloads of / in ${LOAD_MS / 1000} s by ${CLIENTS} clients; RSS ` +
      `${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rssMax / 2 ** 20).toFixed(0)} MB at most`,
  );
  const k = n.toLocaleString('en-US');
  return [
    { name: `${k} accounts: page bytes`, unit: 'KB', value: plain.bytes / 1024, target: { maxValue: 512 } },
    {
      name: `${k} accounts: page bytes, gzipped`,
      unit: 'KB',
      value: zipped.bytes / 1024,
      target: { maxValue: 128 },
    },
    {
      name: `${k} accounts: a render (copy a second old, median)`,
      unit: 'ms',
      value: median(rendered),
      baseline: median(healthQuiet),
      target: { maxValue: 250 },
    },
    {
      name: `${k} accounts: served from the copy (median)`,
      unit: 'ms',
      value: median(cached),
      baseline: median(healthQuiet),
    },
    {
      name: `${k} accounts: /healthz, ${CLIENTS} clients reloading / (median)`,
      unit: 'ms',
      value: median(healthLoad),
      baseline: median(healthQuiet),
      target: { maxValue: 50 },
    },
    {
      name: `${k} accounts: /healthz, ${CLIENTS} clients reloading / (max)`,
      unit: 'ms',
      value: max(healthLoad),
      baseline: max(healthQuiet),
      target: { maxValue: 500 },
    },
    {
      name: `${k} accounts: /metrics, ${CLIENTS} clients reloading / (median)`,
      unit: 'ms',
      value: median(metricsLoad),
      baseline: median(metricsQuiet),
      target: { maxValue: 100 },
    },
    {
      name: `${k} accounts: /metrics, ${CLIENTS} clients reloading / (max)`,
      unit: 'ms',
      value: max(metricsLoad),
      baseline: max(metricsQuiet),
      target: { maxValue: 500 },
    },
    {
      name: `${k} accounts: reloads of / answered per second`,
      unit: '/s',
      value: reloads / (LOAD_MS / 1000),
    },
    {
      name: `${k} accounts: RSS growth while reloaded`,
      unit: 'MB',
      value: (rssMax - rssBefore) / 2 ** 20,
      target: { maxValue: 64 },
    },
  ];
}

/** The landing page at 1,000 and 10,000 accounts (PAGE_ACCOUNTS of them on a page). */
export async function landingScaleBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  log(`${PAGE_ACCOUNTS} accounts a page, a copy lives ${PAGE_TTL_MS} ms`);
  const rows: BenchRow[] = [];
  for (const n of [1000, 10_000]) rows.push(...(await atScale(n, log)));
  return rows;
}
