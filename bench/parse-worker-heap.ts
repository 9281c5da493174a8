/**
 * The traffic parse worker's heap while it reads a 15k-resource answer (22 MB, the shape of the process bench's
 * fake API): JSON.parse of the whole body (what the worker did before issue 15) against the element-by-element
 * read (src/offloop/elements.ts) in a worker with the parse pool's resource limits (the whole-body parse
 * ran with V8's defaults). Each way runs in a fresh worker that parses the answer RUNS times; the figure is the
 * largest heap total seen after a parse (V8 keeps the heap it grew to, until the worker stops).
 */
import { Worker } from 'node:worker_threads';
import { METRIC_NAMES } from '../src/api/vocabulary.js';
import { MINUTE } from '../src/clock.js';
import { PARSE_WORKER_LIMITS } from '../src/offloop/pool.js';
import { metricValues } from '../src/simulator/traffic.js';
import { TrafficModel } from '../src/simulator/traffic-model.js';
import { median } from './measure.js';
import type { BenchRow } from './report.js';

const RESOURCES = 15_000;
const RUNS = 5;
const WORKER = new URL('./parse-heap-worker.js', import.meta.url);

function answer(resources: number): Buffer {
  const t0 = Date.UTC(2026, 0, 1, 18, 0);
  const model = new TrafficModel(15);
  const data = [];
  for (let i = 0; i < resources; i++) {
    const id = String(100_000 + i);
    data.push({
      cname: `r${i}.cdn.example`,
      resource: id,
      resource_name: `resource-${i}`,
      ...metricValues(model.totals('bench', [id], t0, t0 + MINUTE), 60, METRIC_NAMES, 'object'),
    });
  }
  return Buffer.from(JSON.stringify({ account: 'bench', metrics: METRIC_NAMES, data }));
}

interface Reply {
  ms: number;
  records: number;
  heapTotal: number;
  heapUsed: number;
}

async function measure(mode: 'whole' | 'elements', body: Buffer): Promise<{ heapMb: number; ms: number }> {
  const worker = new Worker(WORKER, {
    workerData: { mode },
    ...(mode === 'elements' ? { resourceLimits: PARSE_WORKER_LIMITS } : {}),
  });
  try {
    const replies: Reply[] = [];
    for (let i = 0; i < RUNS; i++) {
      const bytes = new Uint8Array(body);
      replies.push(
        await new Promise<Reply>((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
          worker.postMessage(bytes, [bytes.buffer]);
        }),
      );
    }
    if (replies.some((r) => r.records !== RESOURCES)) throw new Error(`${mode}: not ${RESOURCES} records`);
    return {
      heapMb: Math.max(...replies.map((r) => r.heapTotal)) / 1e6,
      ms: median(replies.map((r) => r.ms)),
    };
  } finally {
    await worker.terminate();
  }
}

export async function parseWorkerHeapBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const body = answer(RESOURCES);
  log(`parse worker: an answer of ${RESOURCES} resources, ${(body.length / 1e6).toFixed(1)} MB`);
  const whole = await measure('whole', body);
  const elements = await measure('elements', body);
  log(
    `parse worker: heap ${whole.heapMb.toFixed(0)} MB whole, ${elements.heapMb.toFixed(0)} MB element by element`,
  );
  return [
    {
      name: 'parse worker heap, 22 MB answer, vs whole-body JSON.parse',
      unit: 'MB',
      value: elements.heapMb,
      baseline: whole.heapMb,
      target: { minRatio: 2 },
    },
    {
      name: 'parse worker time, 22 MB answer, vs whole-body JSON.parse',
      unit: 'ms',
      value: elements.ms,
      baseline: whole.ms,
      // Off the event loop: a little slower is the price of the heap.
      target: { minRatio: 1 / 1.5 },
    },
  ];
}
