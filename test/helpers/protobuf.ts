/**
 * Decodes the protobuf exposition (delimited io.prometheus.client.MetricFamily messages) with protobufjs, from
 * the published schema (prometheus/client_model metrics.proto, the fields Prometheus reads), independently of the
 * exporter's hand encoding (src/store/protobuf.ts).
 */
import protobuf from 'protobufjs';
import { escapeLabel } from './exposition.js';

const SCHEMA = `
syntax = "proto2";
package io.prometheus.client;
message Timestamp { optional int64 seconds = 1; optional int32 nanos = 2; }
message LabelPair { optional string name = 1; optional string value = 2; }
enum MetricType { COUNTER = 0; GAUGE = 1; SUMMARY = 2; UNTYPED = 3; HISTOGRAM = 4; GAUGE_HISTOGRAM = 5; }
message Gauge { optional double value = 1; }
message Counter { optional double value = 1; optional Timestamp created_timestamp = 3; }
message Quantile { optional double quantile = 1; optional double value = 2; }
message Summary { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Quantile quantile = 3;
  optional Timestamp created_timestamp = 4; }
message Untyped { optional double value = 1; }
message Bucket { optional uint64 cumulative_count = 1; optional double upper_bound = 2; }
message Histogram { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Bucket bucket = 3;
  optional Timestamp created_timestamp = 15; }
message Metric { repeated LabelPair label = 1; optional Gauge gauge = 2; optional Counter counter = 3;
  optional Summary summary = 4; optional Untyped untyped = 5; optional Histogram histogram = 7;
  optional int64 timestamp_ms = 6; }
message MetricFamily { optional string name = 1; optional string help = 2; optional MetricType type = 3;
  repeated Metric metric = 4; }
`;

const root = protobuf.parse(SCHEMA).root;
const MetricFamily = root.lookupType('io.prometheus.client.MetricFamily');

export interface DecodedMetric {
  labels: Record<string, string>;
  gauge?: number;
  counter?: number;
  /** Counter or histogram created_timestamp, in seconds. */
  created?: number;
  histogram?: { count: number; sum: number; buckets: { le: number; count: number }[] };
  summary?: { count: number; sum: number };
  untyped?: number;
}

export interface DecodedFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'summary' | 'untyped' | 'histogram' | 'gauge_histogram';
  metrics: DecodedMetric[];
}

interface Stamp {
  seconds?: number;
  nanos?: number;
}

function seconds(t: Stamp | undefined): number | undefined {
  return t ? (t.seconds ?? 0) + (t.nanos ?? 0) / 1e9 : undefined;
}

/** Every MetricFamily of the body, in order; throws on anything that is not a clean delimited stream. */
export function decodeProtobuf(body: Uint8Array): DecodedFamily[] {
  const reader = protobuf.Reader.create(body);
  const out: DecodedFamily[] = [];
  while (reader.pos < reader.len) {
    const msg = MetricFamily.decodeDelimited(reader);
    const o = MetricFamily.toObject(msg, { longs: Number, enums: String, defaults: false }) as {
      name: string;
      help?: string;
      type?: string;
      metric?: Record<string, unknown>[];
    };
    out.push({
      name: o.name,
      help: o.help ?? '',
      type: (o.type ?? 'COUNTER').toLowerCase() as DecodedFamily['type'],
      metrics: (o.metric ?? []).map((m) => {
        const d: DecodedMetric = { labels: {} };
        for (const l of (m.label as { name: string; value?: string }[] | undefined) ?? []) {
          d.labels[l.name] = l.value ?? '';
        }
        const counter = m.counter as { value?: number; createdTimestamp?: Stamp } | undefined;
        if (counter) {
          d.counter = counter.value ?? 0;
          d.created = seconds(counter.createdTimestamp);
        }
        const gauge = m.gauge as { value?: number } | undefined;
        if (gauge) d.gauge = gauge.value ?? 0;
        const untyped = m.untyped as { value?: number } | undefined;
        if (untyped) d.untyped = untyped.value ?? 0;
        const h = m.histogram as
          | {
              sampleCount?: number;
              sampleSum?: number;
              bucket?: { cumulativeCount?: number; upperBound?: number }[];
              createdTimestamp?: Stamp;
            }
          | undefined;
        if (h) {
          d.histogram = {
            count: h.sampleCount ?? 0,
            sum: h.sampleSum ?? 0,
            buckets: (h.bucket ?? []).map((b) => ({ le: b.upperBound ?? 0, count: b.cumulativeCount ?? 0 })),
          };
          d.created = seconds(h.createdTimestamp);
        }
        const s = m.summary as { sampleCount?: number; sampleSum?: number } | undefined;
        if (s) d.summary = { count: s.sampleCount ?? 0, sum: s.sampleSum ?? 0 };
        return d;
      }),
    });
  }
  return out;
}

function sampleLine(name: string, labels: Record<string, string>, value: number): string {
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',');
  const v = value === Number.POSITIVE_INFINITY ? '+Inf' : `${value}`;
  return `${name}${text ? `{${text}}` : ''} ${v}`;
}

/**
 * Decoded families back in the classic text format (HELP, TYPE, samples; a histogram's buckets with the +Inf
 * bucket from its count, its `_sum` and `_count`), so `promtool check metrics` and text comparisons can read them.
 */
export function protobufToText(families: readonly DecodedFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(
      `# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
      `# TYPE ${f.name} ${f.type}`,
    );
    for (const m of f.metrics) {
      if (m.histogram) {
        const h = m.histogram;
        for (const b of h.buckets)
          lines.push(sampleLine(`${f.name}_bucket`, { ...m.labels, le: `${b.le}` }, b.count));
        lines.push(sampleLine(`${f.name}_bucket`, { ...m.labels, le: '+Inf' }, h.count));
        lines.push(
          sampleLine(`${f.name}_sum`, m.labels, h.sum),
          sampleLine(`${f.name}_count`, m.labels, h.count),
        );
      } else if (m.summary) {
        lines.push(sampleLine(`${f.name}_sum`, m.labels, m.summary.sum));
        lines.push(sampleLine(`${f.name}_count`, m.labels, m.summary.count));
      } else {
        lines.push(sampleLine(f.name, m.labels, m.counter ?? m.gauge ?? m.untyped ?? Number.NaN));
      }
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
