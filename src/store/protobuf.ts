/**
 * The protobuf exposition format (`application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;
 * encoding=delimited`), hand-encoded from its published schema (prometheus/client_model, metrics.proto, proto2):
 * a stream of MetricFamily messages, each preceded by its length as a varint.
 *
 *   MetricFamily { name = 1; help = 2; type = 3 (COUNTER 0, GAUGE 1, SUMMARY 2, UNTYPED 3, HISTOGRAM 4); metric = 4 }
 *   Metric       { label = 1 (LabelPair); gauge = 2; counter = 3; summary = 4; untyped = 5; histogram = 7 }
 *   LabelPair    { name = 1; value = 2 }
 *   Gauge        { value = 1 (double) }
 *   Counter      { value = 1 (double); created_timestamp = 3 (google.protobuf.Timestamp { seconds = 1; nanos = 2 }) }
 *   Summary      { sample_count = 1; sample_sum = 2 (double); quantile = 3 (Quantile { quantile = 1; value = 2 }) }
 *   Histogram    { sample_count = 1; sample_sum = 2 (double); bucket = 3; created_timestamp = 15 }
 *   Bucket       { cumulative_count = 1; upper_bound = 2 (double) }
 *
 * Hand-encoded rather than through a protobuf library: the series store writes each series' message straight from
 * the label text it already keeps (family.ts), byte by byte into one buffer per family, as it writes the text
 * formats; a library would build a message object per series (1M objects per scrape) first. The tests decode the
 * output with protobufjs and a real Prometheus scrapes it.
 */

/** Wire types in a field's tag: `(field << 3) | wire`. */
export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;

export function tag(field: number, wire: number): number {
  return (field << 3) | wire;
}

/** Bytes of `n` (a non-negative integer up to 2^53) as a varint. */
export function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Writes `n` (a non-negative integer up to 2^53) as a varint at `pos`; returns the new position. */
export function writeVarint(buf: Uint8Array, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

export const TYPE_CODES = { counter: 0, gauge: 1, summary: 2, untyped: 3, histogram: 4 } as const;
export type ProtoType = keyof typeof TYPE_CODES;

/**
 * A MetricFamily's length prefix and fields name, help and type, for a family whose metric fields (field 4, each
 * with its tag and length) take `metricBytes` bytes: written before them, it makes the whole delimited message.
 */
export function familyHeader(name: string, help: string, type: ProtoType, metricBytes: number): Buffer {
  const nameLen = Buffer.byteLength(name);
  const helpLen = Buffer.byteLength(help);
  const fields = 1 + varintSize(nameLen) + nameLen + 1 + varintSize(helpLen) + helpLen + 2;
  const total = fields + metricBytes;
  const out = Buffer.allocUnsafe(varintSize(total) + fields);
  let pos = writeVarint(out, 0, total);
  out[pos++] = tag(1, LEN);
  pos = writeVarint(out, pos, nameLen);
  pos += out.write(name, pos, 'utf8');
  out[pos++] = tag(2, LEN);
  pos = writeVarint(out, pos, helpLen);
  pos += out.write(help, pos, 'utf8');
  out[pos++] = tag(3, VARINT);
  out[pos++] = TYPE_CODES[type];
  return out;
}

/** Bytes of a google.protobuf.Timestamp message's fields for whole `seconds` (nanos 0 is left out). */
export function timestampSize(seconds: number): number {
  return seconds > 0 ? 1 + varintSize(seconds) : 0;
}

/** Writes a google.protobuf.Timestamp's fields (not its tag and length) for whole `seconds`. */
export function writeTimestamp(buf: Uint8Array, pos: number, seconds: number): number {
  if (seconds <= 0) return pos;
  buf[pos++] = tag(1, VARINT);
  return writeVarint(buf, pos, seconds);
}
