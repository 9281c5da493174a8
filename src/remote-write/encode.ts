/**
 * Prometheus remote write 1.0: a batch's series cut into requests of at most `max_samples_per_send` samples, each
 * encoded as a `prometheus.WriteRequest` (prometheus/prompb types.proto and remote.proto) and compressed with
 * snappy's block format (not the framed format).
 *
 * The encoding is by hand, as src/store/protobuf.ts's: each message's size first, then the bytes straight into one
 * buffer of the exact size. bench/remote-write.ts measures it against protobufjs' Writer and its reflection
 * encoder (`Type.encode` of plain objects from WRITE_REQUEST_PROTO): at 1M series it is 2 to 3 times as fast as
 * either. The tests decode it with protobufjs, and a real Prometheus takes it.
 *
 * Contracts:
 * - A request holds whole samples of consecutive series; a series' samples may be split across requests, in order,
 *   and the requests of a batch are in the batch's order (./queue.ts sends them one after the other).
 * - Labels are written sorted by name (byte order of the names; Prometheus' label names are ASCII). A series
 *   without samples is left out.
 * - Fields at their default (a value of 0, an empty label value) are written anyway: proto3 readers take either.
 */
import { compress } from 'snappy';
import type { SeriesSamples } from './types.js';

/** The messages of remote write 1.0 this module writes (metadata is not sent). */
export const WRITE_REQUEST_PROTO = `
syntax = "proto3";
package prometheus;
message WriteRequest { repeated TimeSeries timeseries = 1; reserved 2; repeated MetricMetadata metadata = 3; }
message MetricMetadata {
  enum MetricType { UNKNOWN = 0; COUNTER = 1; GAUGE = 2; HISTOGRAM = 3; GAUGEHISTOGRAM = 4; SUMMARY = 5;
    INFO = 6; STATESET = 7; }
  MetricType type = 1; string metric_family_name = 2; string help = 4; string unit = 5;
}
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
message Label { string name = 1; string value = 2; }
message Sample { double value = 1; int64 timestamp = 2; }
`;

/** The headers of every request (remote write 1.0); User-Agent and auth are the client's. */
export const REMOTE_WRITE_HEADERS: Readonly<Record<string, string>> = {
  'content-encoding': 'snappy',
  'content-type': 'application/x-protobuf',
  'x-prometheus-remote-write-version': '0.1.0',
};

/**
 * Where a request starts and ends in a batch's series: from sample `fromSample` of series `fromSeries` to sample
 * `toSample` (exclusive) of series `toSeries` (inclusive).
 */
export interface Span {
  fromSeries: number;
  fromSample: number;
  toSeries: number;
  toSample: number;
  /** Samples in the span, at most the `max` it was cut with. */
  samples: number;
}

/** The spans of at most `max` samples that cover every sample of `series`, in order. */
export function* cutRequests(series: readonly SeriesSamples[], max: number): Generator<Span> {
  if (!(max >= 1)) throw new RangeError(`cutRequests: max must be at least 1, got ${max}`);
  let span: Span | undefined;
  for (let s = 0; s < series.length; s++) {
    const n = series[s]!.samples.length;
    let at = 0;
    while (at < n) {
      span ??= { fromSeries: s, fromSample: at, toSeries: s, toSample: at, samples: 0 };
      const take = Math.min(n - at, max - span.samples);
      at += take;
      span.toSeries = s;
      span.toSample = at;
      span.samples += take;
      if (span.samples === max) {
        yield span;
        span = undefined;
      }
    }
  }
  if (span) yield span;
}

/** Samples in all of `series`. */
export function countSamples(series: readonly SeriesSamples[]): number {
  let n = 0;
  for (const s of series) n += s.samples.length;
  return n;
}

/** Bytes of `n` (a whole number) as a varint: an int64 field's encoding (a negative number takes 10). */
function varintLength(n: number): number {
  if (n < 0) return 10;
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** Writes `n` (a whole number, 0 <= n < 2^53) as a varint at `at`; returns the offset after it. */
function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 128) {
    buf[at++] = (n % 128) | 128;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/** An int64 varint: a negative number is its 64-bit two's complement, 10 bytes. */
function writeInt64(buf: Buffer, at: number, n: number): number {
  if (n >= 0) return writeVarint(buf, at, n);
  // -n < 2^63: the low and high 32 bits of 2^64 - |n|, then 7 bits at a time.
  const abs = -n;
  let lo = abs % 4294967296;
  let hi = Math.floor(abs / 4294967296);
  lo = (~lo >>> 0) + 1;
  hi = ~hi >>> 0;
  if (lo > 4294967295) {
    lo = 0;
    hi = (hi + 1) >>> 0;
  }
  for (let i = 0; i < 9; i++) {
    buf[at++] = (lo & 127) | 128;
    lo = (lo >>> 7) | ((hi & 127) << 25);
    hi >>>= 7;
  }
  buf[at++] = lo & 1;
  return at;
}

/** UTF-8 length of `s`: ASCII counted in JavaScript, anything else asked of Buffer. */
function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** Writes `s` (`len` UTF-8 bytes) at `at`: short ASCII byte by byte, anything else by Buffer. */
function writeString(buf: Buffer, at: number, s: string, len: number): number {
  if (len === s.length && len < 64) {
    for (let i = 0; i < len; i++) buf[at + i] = s.charCodeAt(i);
    return at + len;
  }
  return at + buf.write(s, at, len, 'utf8');
}

/** The labels sorted by name; the array itself when it already is. */
function sortedLabels(labels: SeriesSamples['labels']): SeriesSamples['labels'] {
  for (let i = 1; i < labels.length; i++) {
    if (labels[i - 1]![0] > labels[i]![0])
      return [...labels].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
  return labels;
}

/** Tags: field number << 3 | wire type (2: length-delimited, 1: 64-bit, 0: varint). */
const TIMESERIES = (1 << 3) | 2;
const LABELS = (1 << 3) | 2;
const SAMPLES = (2 << 3) | 2;
const NAME = (1 << 3) | 2;
const VALUE_STRING = (2 << 3) | 2;
const VALUE_DOUBLE = (1 << 3) | 1;
const TIMESTAMP = (2 << 3) | 0;

/** What the first pass found of one series, for the second to write. */
interface Sized {
  labels: SeriesSamples['labels'];
  samples: SeriesSamples['samples'];
  /** UTF-8 lengths: name and value of each label, in order. */
  lengths: number[];
  from: number;
  to: number;
  /** The TimeSeries message's body. */
  size: number;
}

/**
 * The WriteRequest of one span of `series`, not compressed. Two passes: the sizes of every message (so each length
 * prefix is written before its message, into one buffer of the exact size), then the bytes.
 */
export function encodeWriteRequest(series: readonly SeriesSamples[], span: Span): Uint8Array {
  const sized: Sized[] = [];
  let total = 0;
  for (let s = span.fromSeries; s <= span.toSeries; s++) {
    const one = series[s]!;
    const from = s === span.fromSeries ? span.fromSample : 0;
    const to = s === span.toSeries ? span.toSample : one.samples.length;
    if (to <= from) continue;
    const labels = sortedLabels(one.labels);
    const lengths = new Array<number>(labels.length * 2);
    let size = 0;
    for (let i = 0; i < labels.length; i++) {
      const [name, value] = labels[i]!;
      const n = utf8Length(name);
      const v = utf8Length(value);
      lengths[2 * i] = n;
      lengths[2 * i + 1] = v;
      const body = 1 + varintLength(n) + n + 1 + varintLength(v) + v;
      size += 1 + varintLength(body) + body;
    }
    for (let i = from; i < to; i++) {
      // int64: a fraction of a millisecond is cut, here and where it is written alike.
      const body = 9 + 1 + varintLength(Math.trunc(one.samples[i]!.timestampMs));
      size += 1 + 1 + body;
    }
    sized.push({ labels, samples: one.samples, lengths, from, to, size });
    total += 1 + varintLength(size) + size;
  }
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  for (const one of sized) {
    const { samples } = one;
    buf[at++] = TIMESERIES;
    at = writeVarint(buf, at, one.size);
    const { labels, lengths } = one;
    for (let i = 0; i < labels.length; i++) {
      const [name, value] = labels[i]!;
      const n = lengths[2 * i]!;
      const v = lengths[2 * i + 1]!;
      buf[at++] = LABELS;
      at = writeVarint(buf, at, 1 + varintLength(n) + n + 1 + varintLength(v) + v);
      buf[at++] = NAME;
      at = writeVarint(buf, at, n);
      at = writeString(buf, at, name, n);
      buf[at++] = VALUE_STRING;
      at = writeVarint(buf, at, v);
      at = writeString(buf, at, value, v);
    }
    for (let i = one.from; i < one.to; i++) {
      const { value, timestampMs } = samples[i]!;
      const ts = Math.trunc(timestampMs);
      buf[at++] = SAMPLES;
      buf[at++] = 9 + 1 + varintLength(ts);
      buf[at++] = VALUE_DOUBLE;
      buf.writeDoubleLE(value, at);
      at += 8;
      buf[at++] = TIMESTAMP;
      at = writeInt64(buf, at, ts);
    }
  }
  if (at !== total) throw new Error(`encodeWriteRequest: wrote ${at} bytes, sized ${total}`);
  return buf;
}

/** A request's body: the WriteRequest of the span, snappy block format (compressed off the event loop). */
export async function encodeRequestBody(series: readonly SeriesSamples[], span: Span): Promise<Uint8Array> {
  return compress(encodeWriteRequest(series, span));
}
