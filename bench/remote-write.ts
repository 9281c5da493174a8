/**
 * Remote write's encoding (src/remote-write/encode.ts) of 1M series of one sample each (a settled window of a big
 * account: 9 labels like the traffic families' on /metrics plus job and instance), cut into requests of 5,000
 * samples (remote_write.queue.max_samples_per_send's default), three ways: the exporter's (bytes written straight
 * into one buffer of the exact size), protobufjs' Writer (lengths computed first, no fork/ldelim) and protobufjs'
 * reflection encoder (`Type.encode` of plain objects from WRITE_REQUEST_PROTO); then snappy. Prints samples per
 * second and the bytes on the wire.
 *
 * Run: `npm run build && node dist/bench/remote-write.js [series]`.
 */
import { pathToFileURL } from 'node:url';
import protobuf from 'protobufjs';
import { compressSync } from 'snappy';
import {
  cutRequests,
  encodeWriteRequest,
  type Span,
  WRITE_REQUEST_PROTO,
} from '../src/remote-write/encode.js';
import type { SeriesSamples } from '../src/remote-write/types.js';
import { fullGc } from './measure.js';

const PER_SEND = 5000;
const WriteRequest = protobuf.parse(WRITE_REQUEST_PROTO).root.lookupType('prometheus.WriteRequest');

function makeSeries(n: number): SeriesSamples[] {
  const at = Date.UTC(2026, 0, 1, 12, 0, 0);
  return Array.from({ length: n }, (_, i) => ({
    labels: [
      ['__name__', `cdn_edge_responses_total`],
      ['account', `account-${i % 7}`],
      ['resource', String(100_000 + Math.floor(i / 70))],
      ['resource_name', `video-site-${Math.floor(i / 70)}.example.com`],
      ['cname', `cdn-${Math.floor(i / 70)}.cdn.example`],
      ['code', String(200 + (i % 70))],
      ['job', 'cdn-exporter-settled'],
      ['instance', 'exporter-0'],
      ['region', 'eu-west'],
    ],
    samples: [{ value: i * 1.5, timestampMs: at }],
  }));
}

const utf8Length = protobuf.util.utf8.length;

function varintLength(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** The same request through protobufjs' Writer, each message's length computed first (no fork/ldelim). */
function encodeWriter(series: readonly SeriesSamples[], span: Span): Uint8Array {
  const w = protobuf.Writer.create();
  for (let s = span.fromSeries; s <= span.toSeries; s++) {
    const one = series[s]!;
    const from = s === span.fromSeries ? span.fromSample : 0;
    const to = s === span.toSeries ? span.toSample : one.samples.length;
    if (to <= from) continue;
    const labels = [...one.labels].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    let size = 0;
    const labelSizes: number[] = [];
    for (const [name, value] of labels) {
      const n = utf8Length(name);
      const v = utf8Length(value);
      const body = 1 + varintLength(n) + n + 1 + varintLength(v) + v;
      labelSizes.push(body);
      size += 1 + varintLength(body) + body;
    }
    for (let i = from; i < to; i++) size += 2 + 10 + varintLength(one.samples[i]!.timestampMs);
    w.uint32(10).uint32(size);
    for (const [i, [name, value]] of labels.entries())
      w.uint32(10).uint32(labelSizes[i]!).uint32(10).string(name).uint32(18).string(value);
    for (let i = from; i < to; i++) {
      const { value, timestampMs } = one.samples[i]!;
      w.uint32(18)
        .uint32(10 + varintLength(timestampMs))
        .uint32(9)
        .double(value)
        .uint32(16)
        .int64(timestampMs);
    }
  }
  return w.finish();
}

/** The same request through protobufjs' reflection: plain objects, then Type.encode. */
function encodeReflect(series: readonly SeriesSamples[], span: Span): Uint8Array {
  const timeseries: unknown[] = [];
  for (let s = span.fromSeries; s <= span.toSeries; s++) {
    const one = series[s]!;
    const from = s === span.fromSeries ? span.fromSample : 0;
    const to = s === span.toSeries ? span.toSample : one.samples.length;
    const labels = [...one.labels]
      .sort((a, b) => (a[0] < b[0] ? -1 : 1))
      .map(([name, value]) => ({ name, value }));
    const samples = one.samples.slice(from, to).map((x) => ({ value: x.value, timestamp: x.timestampMs }));
    timeseries.push({ labels, samples });
  }
  return WriteRequest.encode({ timeseries }).finish();
}

export interface EncodeFigures {
  way: string;
  samplesPerSecond: number;
  encodeMs: number;
  compressMs: number;
  protobufBytes: number;
  snappyBytes: number;
}

function run(way: string, series: SeriesSamples[], encode: typeof encodeWriteRequest): EncodeFigures {
  const spans = [...cutRequests(series, PER_SEND)];
  fullGc();
  let protobufBytes = 0;
  let snappyBytes = 0;
  let encodeMs = 0;
  let compressMs = 0;
  for (const span of spans) {
    const t0 = performance.now();
    const raw = encode(series, span);
    const t1 = performance.now();
    const body = compressSync(raw);
    compressMs += performance.now() - t1;
    encodeMs += t1 - t0;
    protobufBytes += raw.length;
    snappyBytes += body.length;
  }
  return {
    way,
    samplesPerSecond: Math.round(series.length / ((encodeMs + compressMs) / 1000)),
    encodeMs: Math.round(encodeMs),
    compressMs: Math.round(compressMs),
    protobufBytes,
    snappyBytes,
  };
}

export function remoteWriteEncodeBench(n = 1_000_000): EncodeFigures[] {
  const series = makeSeries(n);
  // A warm-up round of each, then the measured ones, alternated.
  const ways: [string, typeof encodeWriteRequest][] = [
    ['direct (shipped)', encodeWriteRequest],
    ['protobufjs Writer', encodeWriter],
    ['protobufjs reflection', encodeReflect],
  ];
  for (const [way, encode] of ways) run(way, series.slice(0, 50_000), encode);
  return ways.map(([way, encode]) => run(way, series, encode));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const n = Number(process.argv[2] ?? 1_000_000);
  for (const f of remoteWriteEncodeBench(n)) {
    process.stdout.write(
      `${f.way}: ${n} series, 1 sample each, requests of ${PER_SEND}: encode ${f.encodeMs} ms + snappy ` +
        `${f.compressMs} ms = ${f.samplesPerSecond} samples/s; protobuf ${(f.protobufBytes / 1e6).toFixed(1)} MB, ` +
        `on the wire (snappy) ${(f.snappyBytes / 1e6).toFixed(1)} MB\n`,
    );
  }
}
