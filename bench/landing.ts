/**
 * The landing page with traffic at 10,000 resources x 50 accounts (issue 24): what one counted window costs the
 * history (its figures and its top resources, from an answer of 10,000 records), the memory the history holds once
 * every account's ring is full, and the bytes and render time of `/` and of `/accounts/<name>` through the real
 * app (HTTP on loopback). `node dist/bench/run.js landing` runs it alone.
 */
import { Registry } from 'prom-client';
import { systemClock } from '../src/clock.js';
import { silentLogger } from '../src/log.js';
import { createApp } from '../src/server/app.js';
import { createSelfMetrics } from '../src/server/self-metrics.js';
import type { ExporterStatus } from '../src/server/status.js';
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
  const app = createApp({
    registry,
    store: EMPTY_STORE,
    status: () => status,
    history,
    log: silentLogger,
    // The page's "ago" columns read the time; nothing here sleeps.
    clock: { ...systemClock, now: () => now },
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
