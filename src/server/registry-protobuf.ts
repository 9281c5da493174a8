/**
 * prom-client's registry (self metrics, process and Node.js defaults) in the protobuf exposition format
 * (../store/protobuf.ts has the schema). prom-client writes only text, so its metrics are taken as objects
 * (`getMetricsAsJSON`) and encoded here: a few hundred series per scrape, message by message.
 *
 * prom-client keeps no start per series. Each counter and histogram of the registry counts from 0 since the
 * process started (a labelled child appearing later was 0 until then), so `startedMs` is their created timestamp.
 */
import type { Registry } from 'prom-client';
import {
  FIXED64,
  LEN,
  type ProtoType,
  TYPE_CODES,
  tag,
  VARINT,
  varintSize,
  writeTimestamp,
  writeVarint,
} from '../store/protobuf.js';

type Labels = Partial<Record<string, string | number>>;

interface JsonValue {
  value: number;
  labels: Labels;
  metricName?: string;
}

interface JsonMetric {
  name: string;
  help: string;
  type: string;
  values: JsonValue[];
}

function bytesField(field: number, bytes: Buffer): Buffer {
  const head = Buffer.allocUnsafe(1 + varintSize(bytes.length));
  head[0] = tag(field, LEN);
  writeVarint(head, 1, bytes.length);
  return Buffer.concat([head, bytes]);
}

function stringField(field: number, s: string): Buffer {
  return bytesField(field, Buffer.from(s, 'utf8'));
}

function doubleField(field: number, v: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = tag(field, FIXED64);
  b.writeDoubleLE(v, 1);
  return b;
}

function varintField(field: number, n: number): Buffer {
  const b = Buffer.allocUnsafe(1 + varintSize(n));
  b[0] = tag(field, VARINT);
  writeVarint(b, 1, n);
  return b;
}

function timestamp(ms: number): Buffer {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const b = Buffer.allocUnsafe(1 + varintSize(seconds));
  const secondsEnd = writeTimestamp(b, 0, seconds);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return nanos > 0
    ? Buffer.concat([b.subarray(0, secondsEnd), varintField(2, nanos)])
    : b.subarray(0, secondsEnd);
}

function labelPairs(labels: Labels, skip?: string): Buffer[] {
  const out: Buffer[] = [];
  for (const [name, value] of Object.entries(labels)) {
    if (name === skip || value === undefined) continue;
    out.push(bytesField(1, Buffer.concat([stringField(1, name), stringField(2, String(value))])));
  }
  return out;
}

/** The label set without `skip` (a histogram's `le`, a summary's `quantile`), as a grouping key. */
function groupKey(labels: Labels, skip: string): string {
  return JSON.stringify(Object.entries(labels).filter(([n]) => n !== skip));
}

/** Histogram or summary samples grouped into one Metric per label set, in first-seen order. */
function grouped(m: JsonMetric, skip: string): { labels: Labels; samples: JsonValue[] }[] {
  const groups = new Map<string, { labels: Labels; samples: JsonValue[] }>();
  for (const v of m.values) {
    const key = groupKey(v.labels, skip);
    const g = groups.get(key) ?? { labels: v.labels, samples: [] };
    groups.set(key, g);
    g.samples.push(v);
  }
  return [...groups.values()];
}

function metricsOf(m: JsonMetric, created: Buffer): { type: ProtoType; metrics: Buffer[] } {
  switch (m.type) {
    case 'counter':
      return {
        type: 'counter',
        metrics: m.values.map((v) =>
          Buffer.concat([
            ...labelPairs(v.labels),
            bytesField(3, Buffer.concat([doubleField(1, v.value), bytesField(3, created)])),
          ]),
        ),
      };
    case 'gauge':
      return {
        type: 'gauge',
        metrics: m.values.map((v) =>
          Buffer.concat([...labelPairs(v.labels), bytesField(2, doubleField(1, v.value))]),
        ),
      };
    case 'histogram':
      return {
        type: 'histogram',
        metrics: grouped(m, 'le').map(({ labels, samples }) => {
          const fields: Buffer[] = [];
          for (const s of samples) {
            if (s.metricName === `${m.name}_count`) fields.push(varintField(1, s.value));
            else if (s.metricName === `${m.name}_sum`) fields.push(doubleField(2, s.value));
          }
          for (const s of samples) {
            const le = s.labels.le;
            // The +Inf bucket is implicit (sample_count), as Go's client writes it.
            if (s.metricName !== `${m.name}_bucket` || le === undefined || le === '+Inf') continue;
            fields.push(bytesField(3, Buffer.concat([varintField(1, s.value), doubleField(2, Number(le))])));
          }
          fields.push(bytesField(15, created));
          return Buffer.concat([...labelPairs(labels, 'le'), bytesField(7, Buffer.concat(fields))]);
        }),
      };
    case 'summary':
      return {
        type: 'summary',
        metrics: grouped(m, 'quantile').map(({ labels, samples }) => {
          const fields: Buffer[] = [];
          for (const s of samples) {
            if (s.metricName === `${m.name}_count`) fields.push(varintField(1, s.value));
            else if (s.metricName === `${m.name}_sum`) fields.push(doubleField(2, s.value));
            else if (s.labels.quantile !== undefined) {
              const q = Buffer.concat([doubleField(1, Number(s.labels.quantile)), doubleField(2, s.value)]);
              fields.push(bytesField(3, q));
            }
          }
          return Buffer.concat([...labelPairs(labels, 'quantile'), bytesField(4, Buffer.concat(fields))]);
        }),
      };
    default:
      return {
        type: 'untyped',
        metrics: m.values.map((v) =>
          Buffer.concat([...labelPairs(v.labels), bytesField(5, doubleField(1, v.value))]),
        ),
      };
  }
}

/** The registry's metrics as delimited MetricFamily messages; counters and histograms start at `startedMs`. */
export async function registryToProtobuf(registry: Registry, startedMs: number): Promise<Buffer> {
  const created = timestamp(startedMs);
  const out: Buffer[] = [];
  for (const m of (await registry.getMetricsAsJSON()) as unknown as JsonMetric[]) {
    if (m.values.length === 0) continue;
    const { type, metrics } = metricsOf(m, created);
    const family = Buffer.concat([
      stringField(1, m.name),
      stringField(2, m.help),
      varintField(3, TYPE_CODES[type]),
      ...metrics.map((metric) => bytesField(4, metric)),
    ]);
    const prefix = Buffer.allocUnsafe(varintSize(family.length));
    writeVarint(prefix, 0, family.length);
    out.push(prefix, family);
  }
  return Buffer.concat(out);
}
