/**
 * A fake metrics API for the burst-and-shrink benchmark (./process-shrink.ts), in a worker thread. Like
 * ./process-fake-api.ts it answers `/app/metrics/v1/resources` with resources of the documented shape (every
 * metric), rendered once; unlike it, the parent decides what each answer holds and when it is sent:
 *
 * - `base`: the N steady resources;
 * - `burst`: the same N followed by `burst` resources of their own ids (a resource set that grows, then shrinks
 *   again when the next answers are `base`).
 *
 * A request is held until the parent has queued an answer for it (`{ queue: 'base' | 'burst', count }`), so the
 * parent chooses which windows burst and how much wall-clock time passes between two answers (a vanished
 * resource's counters go after `metrics.counter_retention` of the exporter's clock).
 *
 * workerData: `{ resources, burst, account }`. Posts `{ url, baseBytes, burstBytes }` once listening, and
 * `{ served, kind }` after each answer; a `'close'` message closes it and posts `'closed'`.
 */
import { createServer, type ServerResponse } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { METRIC_NAMES } from '../src/api/vocabulary.js';
import { MINUTE } from '../src/clock.js';
import { metricValues } from '../src/simulator/traffic.js';
import { TrafficModel } from '../src/simulator/traffic-model.js';

export type AnswerKind = 'base' | 'burst';

const { resources, burst, account } = workerData as { resources: number; burst: number; account: string };
const port = parentPort!;
const T0 = Date.UTC(2026, 0, 1, 18, 0);
const model = new TrafficModel(15);

function render(from: number, count: number, prefix: string): Buffer {
  const parts: string[] = [];
  for (let i = from; i < from + count; i++) {
    const id = String(i);
    const totals = model.totals(account, [id], T0, T0 + MINUTE);
    parts.push(
      JSON.stringify({
        cname: `${prefix}${i}.cdn.example`,
        resource: id,
        resource_name: `${prefix}-${i}`,
        ...metricValues(totals, 60, METRIC_NAMES, 'object'),
      }),
    );
  }
  return Buffer.from(parts.join(','));
}

// Steady ids 100000.., burst ids 1000000..: never the same id, so every burst resource is a new one.
const base = render(100_000, resources, 'r');
const extra =
  burst > 0 ? Buffer.concat([Buffer.from(','), render(1_000_000, burst, 'burst')]) : Buffer.alloc(0);
const tail = Buffer.from(']}');

const queued: AnswerKind[] = [];
const waiting: { res: ServerResponse; head: Buffer }[] = [];
let served = 0;

function send(kind: AnswerKind, res: ServerResponse, head: Buffer): void {
  const parts = kind === 'burst' ? [head, base, extra, tail] : [head, base, tail];
  let length = 0;
  for (const p of parts) length += p.length;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': length });
  for (const p of parts.slice(0, -1)) res.write(p);
  res.end(parts.at(-1), () => port.postMessage({ served: ++served, kind }));
}

function drain(): void {
  while (queued.length > 0 && waiting.length > 0) {
    const { res, head } = waiting.shift()!;
    if (res.destroyed) continue;
    send(queued.shift()!, res, head);
  }
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== '/app/metrics/v1/resources') {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"description":"Not found"}');
    return;
  }
  const head = Buffer.from(
    JSON.stringify({
      start: url.searchParams.get('start'),
      end: url.searchParams.get('end'),
      account: url.searchParams.get('account'),
      metrics: METRIC_NAMES,
    }).replace(/}$/, ',"data":['),
  );
  waiting.push({ res, head });
  drain();
});
server.keepAliveTimeout = 120_000;
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  const p = typeof a === 'object' && a ? a.port : 0;
  port.postMessage({
    url: `http://127.0.0.1:${p}`,
    baseBytes: base.length,
    burstBytes: base.length + extra.length,
  });
});
port.on('message', (msg: unknown) => {
  if (msg === 'close') {
    server.closeAllConnections();
    server.close(() => port.postMessage('closed'));
    return;
  }
  const m = msg as { queue: AnswerKind; count: number };
  for (let i = 0; i < m.count; i++) queued.push(m.queue);
  drain();
});
