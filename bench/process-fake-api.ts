/**
 * A fake metrics API for the process benchmark (./process.ts), in a worker thread: `/app/metrics/v1/resources`
 * answers every window with the same N resources of the documented shape (every metric, `*_request_time` as an
 * object keyed by size range; values from the simulator's traffic model for one minute). The data part is
 * rendered once, so an answer costs the API a write and nothing else: the benchmark measures the exporter.
 *
 * workerData: `{ resources, account }`. Posts `{ url, bytes }` once listening, `{ asked }` when a request for an
 * answer arrives and `{ served }` after each answer (running counts); a `'close'` message closes it and posts
 * `'closed'`.
 */
import { createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { METRIC_NAMES } from '../src/api/vocabulary.js';
import { MINUTE } from '../src/clock.js';
import { metricValues } from '../src/simulator/traffic.js';
import { TrafficModel } from '../src/simulator/traffic-model.js';

const { resources, account } = workerData as { resources: number; account: string };
const port = parentPort!;
const T0 = Date.UTC(2026, 0, 1, 18, 0);
const model = new TrafficModel(15);
const parts: string[] = [];
for (let i = 0; i < resources; i++) {
  const id = String(100_000 + i);
  const totals = model.totals(account, [id], T0, T0 + MINUTE);
  parts.push(
    JSON.stringify({
      cname: `r${i}.cdn.example`,
      resource: id,
      resource_name: `resource-${i}`,
      ...metricValues(totals, 60, METRIC_NAMES, 'object'),
    }),
  );
}
const data = Buffer.from(`${parts.join(',')}]}`);
parts.length = 0;
let served = 0;
let asked = 0;

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== '/app/metrics/v1/resources') {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"description":"Not found"}');
    return;
  }
  port.postMessage({ asked: ++asked });
  const head = Buffer.from(
    JSON.stringify({
      start: url.searchParams.get('start'),
      end: url.searchParams.get('end'),
      account: url.searchParams.get('account'),
      metrics: METRIC_NAMES,
    }).replace(/}$/, ',"data":['),
  );
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': head.length + data.length });
  res.write(head);
  res.end(data, () => port.postMessage({ served: ++served }));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  const p = typeof a === 'object' && a ? a.port : 0;
  port.postMessage({ url: `http://127.0.0.1:${p}`, bytes: data.length });
});
port.on('message', (msg: unknown) => {
  if (msg === 'close') {
    server.closeAllConnections();
    server.close(() => port.postMessage('closed'));
  }
});
