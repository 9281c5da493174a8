/**
 * Worker entry of ./parse-worker-heap.ts: parses each body it is sent the way `mode` says (`whole`: JSON.parse of
 * the body, then packed; `elements`: the parse worker's element-by-element read) and answers with the time and
 * this isolate's heap right after (its total: what the heap grew to; V8 keeps it).
 */

import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { packTrafficResponse, parseTrafficBodyPacked } from '../src/offloop/traffic.js';
import { parseTrafficBody } from '../src/traffic/parse.js';

const { mode } = workerData as { mode: 'whole' | 'elements' };
const port = parentPort!;
const opts = { account: 'bench', breakdown: 'resource' as const };
port.on('message', (bytes: Uint8Array) => {
  const t = performance.now();
  const packed =
    mode === 'whole'
      ? packTrafficResponse(parseTrafficBody(bytes, opts))
      : parseTrafficBodyPacked(bytes, opts);
  const ms = performance.now() - t;
  const heap = getHeapStatistics();
  port.postMessage({
    ms,
    records: packed.count,
    heapTotal: heap.total_heap_size,
    heapUsed: heap.used_heap_size,
  });
});
