/**
 * Reading a big traffic answer through the HTTP client: the streamed, size-bounded read (and its decoding) against
 * undici's own `arrayBuffer()` of the same body, which is what the client did before it counted bytes and decoded
 * Content-Encoding. The body is shaped like a 15k-resource traffic answer, served from loopback.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { HttpClient } from '../src/http/request.js';
import { fullGc, median } from './measure.js';
import type { BenchRow } from './report.js';

const RUNS = 15;

function trafficLikeBody(resources: number): Buffer {
  const data: Record<string, unknown>[] = [];
  for (let i = 0; i < resources; i++) {
    const o: Record<string, unknown> = { resource: String(100_000 + i) };
    for (let k = 0; k < 40; k++) o[`edge_status_${200 + k}`] = i * k;
    data.push(o);
  }
  return Buffer.from(JSON.stringify({ start: '2026-01-01T12:00:00', end: '2026-01-01T12:10:00', data }));
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    fullGc(1);
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

export async function httpBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const plain = trafficLikeBody(15_000);
  const gz = gzipSync(plain);
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  log(`body ${mb(plain.length)}, gzip ${mb(gz.length)}`);
  const server = createServer((req, res) => {
    const zipped = req.url?.startsWith('/gz') ?? false;
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(zipped ? { 'content-encoding': 'gzip' } : {}),
    });
    res.end(zipped ? gz : plain);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new HttpClient({ baseUrl: base, token: () => 'bench-token', timeoutMs: 60_000 });
  const bytes = async (b: Uint8Array) => b.byteLength;
  try {
    const baseline = await timed(async () => (await request(`${base}/plain`)).body.arrayBuffer());
    const streamed = await timed(() =>
      client.request({ api: 'metrics', method: 'GET', path: '/plain', decode: bytes }),
    );
    const decoded = await timed(() =>
      client.request({ api: 'metrics', method: 'GET', path: '/gz', decode: bytes }),
    );
    return [
      {
        name: `read a ${mb(plain.length)} answer (bounded stream)`,
        unit: 'ms',
        value: streamed,
        baseline,
        target: { minRatio: 0.7 },
      },
      { name: `read it gzipped (${mb(gz.length)} sent, decoded)`, unit: 'ms', value: decoded, baseline },
    ];
  } finally {
    await client.close();
    server.close();
  }
}
