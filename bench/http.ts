/**
 * Reading a big traffic answer through the HTTP client: the streamed, size-bounded read (and its decoding) against
 * undici's own `arrayBuffer()` of the same body, which is what the client did before it counted bytes and decoded
 * Content-Encoding. The body is shaped like a 15k-resource traffic answer, served from loopback.
 *
 * Then the longest event-loop block while a 10 MB DVR answer (3 hosts x 100k ranges) and a 10 MB recordings
 * listing (350 settings x 240 instances) are parsed: in the worker and unpacked in slices (src/offloop/), against
 * JSON.parse and the tolerant parser inline, as the clients did before.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { dvrCodec } from '../src/dvr/codec.js';
import { parseDvrBody } from '../src/dvr/response.js';
import { HttpClient } from '../src/http/request.js';
import { ANSWER_POOL, ParsePool } from '../src/offloop/pool.js';
import { recordingsCodec } from '../src/recordings/codec.js';
import { parseRecordingsBody } from '../src/recordings/response.js';
import { fullGc, maxStall, median } from './measure.js';
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

/** 3 hosts with 100k ranges each: about 10 MB. */
export function dvrBody(): Buffer {
  const first = 1_760_000_000;
  const ranges = Array.from({ length: 100_000 }, (_, i) => `{"from":${first + 20 * i},"duration":15}`).join(
    ',',
  );
  const data = Array.from(
    { length: 3 },
    (_, h) =>
      `{"stream_name":"live/main","host":"edge-${h}.cdn.example","is_alive":true,` +
      `"dvr":{"enabled":true,"window":86400,"duration":1500000,"from":${first},"ranges":[${ranges}]}}`,
  );
  return Buffer.from(`{"status":"Completed","stream_name":"live/main","data":[${data.join(',')}]}`);
}

/** 350 settings listed with 240 instances each (`?all` lists every one): about 10 MB. */
export function recordingsBody(): Buffer {
  const at = (i: number, m: string) =>
    `2026-01-${String(1 + Math.floor(i / 24)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:${m}:00Z`;
  const settings = Array.from({ length: 350 }, (_, s) => ({
    id: `rec-${s}`,
    resource_id: String(1000 + s),
    account_name: 'acme',
    source_domain: 'live.example',
    source_path: `/live/channel-${s}/playlist.m3u8`,
    stream_type: 'long',
    launch_type: 'stream_start',
    stop_timeout: 1800,
    storage_time: 7,
    dvr_enabled: true,
    dvr_window: 3600,
    smil: false,
    qualities: { [`https://live.example/channel-${s}/720.m3u8`]: '720p' },
    records: Array.from({ length: 240 }, (_, i) => ({
      start: at(i, '00'),
      stop: at(i, '30'),
      init_path: `/records/rec-${s}/${i}/init.mp4`,
      status: 'finish',
    })),
    path: `/records/rec-${s}/playlist.m3u8`,
  }));
  return Buffer.from(JSON.stringify(settings));
}

/** The median over RUNS of the longest event-loop block (ms) while `parse` reads a copy of `body`. */
async function parseStall(body: Buffer, parse: (bytes: Uint8Array) => Promise<unknown>): Promise<number> {
  const stalls: number[] = [];
  for (let i = 0; i < 5; i++) {
    const bytes = new Uint8Array(body);
    fullGc(1);
    stalls.push(await maxStall(() => parse(bytes)));
  }
  return median(stalls);
}

async function answerStalls(log: (line: string) => void): Promise<BenchRow[]> {
  const dvr = dvrBody();
  const recordings = recordingsBody();
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  log(`DVR answer ${mb(dvr.length)}, recordings answer ${mb(recordings.length)}`);
  const worker = new ParsePool(ANSWER_POOL);
  try {
    // The worker's start is not part of a poll.
    await worker.parser(dvrCodec)(new Uint8Array(dvr), 'live/main');
    const rows: BenchRow[] = [];
    for (const [name, body, inline, off] of [
      [
        `DVR answer (${mb(dvr.length)}, 300k ranges)`,
        dvr,
        async (b: Uint8Array) => parseDvrBody(b, 'live/main'),
        (b: Uint8Array) => worker.parser(dvrCodec)(b, 'live/main'),
      ],
      [
        `recordings answer (${mb(recordings.length)}, 84k instances)`,
        recordings,
        async (b: Uint8Array) => parseRecordingsBody(b, 'acme'),
        (b: Uint8Array) => worker.parser(recordingsCodec)(b, 'acme'),
      ],
    ] as const) {
      const baseline = await parseStall(body, inline);
      const value = await parseStall(body, off);
      log(`${name}: longest block ${value.toFixed(0)} ms off the loop, ${baseline.toFixed(0)} ms inline`);
      rows.push({
        name: `max stall parsing a ${name}, off the loop`,
        unit: 'ms',
        value,
        baseline,
        target: { maxValue: 100 },
      });
    }
    return rows;
  } finally {
    await worker.close();
  }
}

export async function httpBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  return [...(await readBenchmarks(log)), ...(await answerStalls(log))];
}

async function readBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
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
