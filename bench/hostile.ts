/**
 * Hostile requests of issue 33 against the exporter's HTTP app (in a worker thread, ./hostile-server.ts, so its
 * CPU is measured apart from the clients'):
 *
 * - row 1: `HEAD /metrics` with a 16 KB `Accept: *\/*,*\/*,...` (within Node's 16 KiB header limit). The
 *   negotiation alone, negotiator (what the app called before) against src/server/negotiate.ts; the app's CPU per
 *   request against the same request with Prometheus' header; and `/healthz` (a new connection each, as kubelet
 *   probes) while 16 clients send such requests as fast as they are answered, against `/healthz` idle. The
 *   kubelet's default probe timeout is 1 s (`timeoutSeconds: 1`): the target for `/healthz` under load.
 */
import http from 'node:http';
import { Worker } from 'node:worker_threads';
import express from 'express';
import { negotiateFormat } from '../src/server/negotiate.js';
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
    return [
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
