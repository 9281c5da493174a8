/**
 * The exporter's HTTP app (createApp, ~1000 series of ~60 KB from a fixed store) in a worker thread, for
 * bench/hostile.ts: the thread's own CPU time is what a request costs the exporter, apart from the clients'.
 *
 * Posts `{ url }` once listening; answers `'cpu'` with `{ cpuMs }` (this thread's user + system time so far) and
 * `'close'` by closing and posting `'closed'`.
 */
import { createServer } from 'node:http';
import { parentPort } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import { Registry } from 'prom-client';
import { silentLogger } from '../src/log.js';
import { createApp } from '../src/server/app.js';
import { createSelfMetrics } from '../src/server/self-metrics.js';
import type { Exposition } from '../src/store/types.js';

const registry = new Registry();
createSelfMetrics(registry, { version: 'bench', apis: ['metrics'] });
const lines = ['# HELP cdn_bench_requests_total Requests.', '# TYPE cdn_bench_requests_total counter'];
for (let i = 0; i < 1000; i++)
  lines.push(`cdn_bench_requests_total{account="acme",resource="${i}"} ${i * 7}`);
const body = Buffer.from(`${lines.join('\n')}\n`);
const gz = gzipSync(body);
const store: Exposition = {
  render: () => body,
  hold: () => ({ chunks: [body], release: () => {} }),
  renderGzip: () => gz,
  familyNames: () => ['cdn_bench_requests'],
};
const app = createApp({
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
const server = createServer(app);
const port = parentPort!;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  port.postMessage({ url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}` });
});
port.on('message', (msg: unknown) => {
  if (msg === 'cpu') {
    const u = process.threadCpuUsage();
    port.postMessage({ cpuMs: (u.user + u.system) / 1000 });
  } else if (msg === 'close') {
    server.closeAllConnections();
    server.close(() => port.postMessage('closed'));
  }
});
