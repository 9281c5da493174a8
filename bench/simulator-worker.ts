/**
 * The simulator in a worker thread, for benchmarks that measure what the API sees: on its own event loop it
 * stamps each request when it arrives, as an API on another machine would, not after the exporter's work on a
 * shared loop. `workerData` is the simulator's options; the worker posts `{url}` once listening, and answers a
 * `'log'` message with the request log and a `'close'` message by closing and posting `'closed'`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type SimulatorOptions, startSimulator } from '../src/simulator/server.js';

const port = parentPort!;
const sim = await startSimulator(workerData as SimulatorOptions, { host: '127.0.0.1', port: 0 });
port.on('message', (msg: unknown) => {
  if (msg === 'log') port.postMessage({ log: sim.requestLog });
  else if (msg === 'close') void sim.close().then(() => port.postMessage('closed'));
});
port.postMessage({ url: sim.url });
