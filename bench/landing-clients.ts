/**
 * Browsers reloading the landing page, and probes of other paths, in a worker thread for bench/landing.ts: on their
 * own event loop, so a stalled exporter cannot delay a probe's start and hide its own stall.
 *
 * `workerData` is `{port, clients, ms, probes, everyMs}`. For `ms`, `clients` clients each ask `/` (with gzip, as a
 * browser does; the body counted, not decoded) again as soon as it is answered, while each path of `probes` is
 * asked every `everyMs` whether or not the earlier probes were answered (open loop), each timed from when it was
 * due. Then the worker waits for the probes still out and posts `{reloads, bytes, times}`: the answers to `/` with
 * 200, and per probed path its times, ms.
 */
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { port, clients, ms, probes, everyMs } = workerData as {
  port: number;
  clients: number;
  ms: number;
  probes: string[];
  everyMs: number;
};
const started = performance.now();
const until = started + ms;
let reloads = 0;
let bytes = 0;

function get(agent: http.Agent, path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode}`));
        else resolve(n);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const reloading = Array.from({ length: clients }, async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (performance.now() < until) {
    bytes += await get(agent, '/', { 'accept-encoding': 'gzip, deflate, br' });
    reloads++;
  }
  agent.destroy();
});

const probing = probes.map(async (path) => {
  const agent = new http.Agent({ keepAlive: true });
  const out: Promise<number>[] = [];
  for (let k = 0; started + k * everyMs < until; k++) {
    const due = started + k * everyMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    out.push(get(agent, path).then(() => performance.now() - due));
  }
  const times = await Promise.all(out);
  agent.destroy();
  return [path, times] as const;
});

const [, measured] = await Promise.all([Promise.all(reloading), Promise.all(probing)]);
parentPort!.postMessage({ reloads, bytes, times: Object.fromEntries(measured) });
