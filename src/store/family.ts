/**
 * One metric family of the series store: its series (the index, ./series-index.ts) and the rendering of its bodies,
 * in text, OpenMetrics and protobuf.
 *
 * A render reads each live series' label bytes from the current body (or the arena), writes the line into the new
 * body and notes where it put the label; the store hands the finished body back (`finishRender`), which becomes the
 * new source and empties the arena. The store restarts a render whenever a series is added or removed during it
 * (`structure` moved), so an adopted body always holds every live series. Output order is slot order.
 */
import { escapeHelp, labelTemplate, writeValue } from './format.js';
import { freeNow } from './free-now.js';
import { openMetricsName } from './names.js';
import {
  FIXED64,
  familyHeader,
  LEN,
  tag,
  timestampSize,
  varintSize,
  writeTimestamp,
  writeVarint,
} from './protobuf.js';
import { FREE, IN_ARENA, moved, SeriesIndex } from './series-index.js';
import type { ExpositionFormat, FamilySpec } from './types.js';

/** formatValue's longest output: a negative 17-digit mantissa with a 3-digit exponent, `-1.2345678901234567e-100`. */
const MAX_VALUE_CHARS = 24;
/**
 * What a new series' value is expected to take in a render's first estimate (a first window's counts are short
 * integers): reserving the longest form made the first render of 1M series 24 MB too big, then copied it.
 */
const NEW_VALUE_CHARS = 8;
/** A rendered body is given this much room beyond the estimate before it has to grow. */
const BODY_MARGIN = 64 * 1024;
/** A rendered body with more unused room than this share is copied into a buffer of its exact size. */
const MAX_SLACK = 0.05;
const SPACE = 0x20;
const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LETTER_N = 0x6e;
/** Protobuf tags: MetricFamily.metric, Metric.label, Metric.gauge, Metric.counter, LabelPair.value, the doubles. */
const METRIC_FIELD = tag(4, LEN);
const LABEL_FIELD = tag(1, LEN);
const GAUGE_FIELD = tag(2, LEN);
const COUNTER_FIELD = tag(3, LEN);
const LABEL_VALUE_FIELD = tag(2, LEN);
const VALUE_FIELD = tag(1, FIXED64);
const CREATED_FIELD = tag(3, LEN);
/** A protobuf series' bytes beyond its label pairs' name and value bytes, as a first estimate. */
const PROTOBUF_SERIES_BYTES = 32;

/**
 * A body being rendered: the store calls renderRange until `next` reaches highWater, then finishRender. A text
 * body is the family's sample lines in both text formats (a gauge's OpenMetrics body is its text body); an
 * `openmetrics` body (counters only) adds each series' `_created` sample; a `protobuf` body is the family's
 * Metric fields (the store writes the MetricFamily header before it, ./protobuf.ts).
 */
export interface BodyRender {
  readonly format: ExpositionFormat;
  /** Next slot to write. */
  next: number;
  /** Bytes written. */
  pos: number;
  buf: Buffer;
  /** Where each written slot's label text is in `buf`. */
  at: Uint32Array<ArrayBuffer>;
  /** The family's structure and version when the render began. */
  readonly structure: number;
  readonly version: number;
}

/** A family of the store: its series (SeriesIndex) and their exposition bodies. */
export class SeriesFamily extends SeriesIndex {
  private readonly headers: Record<'text' | 'openmetrics', Buffer>;
  private readonly name: Buffer;
  /** `<name without _total>_created`: a counter's start sample in OpenMetrics. */
  private readonly createdName: Buffer;
  /** Per label: the template part's length in UTF-8 (`{a="` or `",b="`) and LabelPair.name's tag, length, bytes. */
  private readonly partLen: Uint32Array;
  private readonly pairNames: Buffer[];
  /** Scratch of a protobuf render: each label value's start, end (escaped) and length (unescaped) in the source. */
  private readonly valFrom: Uint32Array;
  private readonly valTo: Uint32Array;
  private readonly valLen: Uint32Array;
  /** Bytes the values took in the last complete render (the next one's estimate). */
  private lastValueBytes = 0;

  /** As SeriesIndex's constructor. */
  constructor(spec: FamilySpec, now: () => number = Date.now, changed: () => void = () => {}) {
    super(spec, now, changed);
    this.name = Buffer.from(spec.name);
    const om = openMetricsName(spec);
    this.createdName = Buffer.from(`${om}_created`);
    const n = spec.labelNames.length;
    this.partLen = Uint32Array.from(labelTemplate(spec.labelNames).parts, (p) => Buffer.byteLength(p));
    this.pairNames = spec.labelNames.map((l) => {
      const name = Buffer.from(l);
      const field = Buffer.alloc(1 + varintSize(name.length) + name.length);
      field[0] = tag(1, LEN);
      name.copy(field, writeVarint(field, 1, name.length));
      return field;
    });
    this.valFrom = new Uint32Array(n);
    this.valTo = new Uint32Array(n);
    this.valLen = new Uint32Array(n);
    this.headers = {
      text: Buffer.from(
        `# HELP ${spec.name} ${escapeHelp(spec.help, 'text')}\n# TYPE ${spec.name} ${spec.type}\n`,
      ),
      openmetrics: Buffer.from(
        `# HELP ${om} ${escapeHelp(spec.help, 'openmetrics')}\n# TYPE ${om} ${spec.type}\n`,
      ),
    };
  }

  /** The `# HELP` and `# TYPE` lines in this text format. */
  header(format: 'text' | 'openmetrics'): Buffer {
    return this.headers[format];
  }

  /** The MetricFamily's length prefix, name, help and type before a protobuf body of `bodyBytes`. */
  protobufHeader(bodyBytes: number): Buffer {
    return familyHeader(this.spec.name, this.spec.help, this.spec.type, bodyBytes);
  }

  /** Whether the format has a body of its own: a gauge's OpenMetrics body is its text body. */
  rendersOwn(format: ExpositionFormat): boolean {
    return format === 'protobuf' || (format === 'openmetrics' && this.isCounter);
  }

  /**
   * Starts rendering a body in `format` (text by default; see BodyRender). The buffer is sized from the label
   * bytes and the last text render's value bytes (plus room for new series); a render that outgrows it grows it
   * by a quarter. Only a text body records where it put each label text (`at`): it becomes the label source.
   */
  beginRender(format: ExpositionFormat = 'text'): BodyRender {
    const lines = this.live * (this.name.length + 2);
    const values = this.lastValueBytes + (this.newSeries + 16) * NEW_VALUE_CHARS;
    let size = this.labelBytes + lines + values;
    // A counter's `_created` line repeats the labels; its start takes 10 digits.
    if (format === 'openmetrics') size += this.labelBytes + this.live * (this.createdName.length + 12);
    if (format === 'protobuf') size = this.labelBytes + this.live * PROTOBUF_SERIES_BYTES;
    return {
      format,
      next: 0,
      pos: 0,
      buf: Buffer.allocUnsafeSlow(size + BODY_MARGIN),
      at: new Uint32Array(format === 'text' ? this.values.length : 0),
      structure: this.structure,
      version: this.version,
    };
  }

  /** Writes the series of slots [r.next, to) (to capped at highWater). The structure must not have moved. */
  renderRange(r: BodyRender, to: number): void {
    if (r.format === 'protobuf') this.renderProtobufRange(r, to);
    else if (r.format === 'openmetrics' && this.isCounter) this.renderOpenMetricsRange(r, to);
    else this.renderTextRange(r, to);
  }

  private renderTextRange(r: BodyRender, to: number): void {
    const end = Math.min(to, this.top);
    const name = this.name;
    const nameLen = name.length;
    const state = this.state;
    const arena = this.arena;
    const labelAt = this.labelAt;
    const labelLen = this.labelLen;
    const values = this.values;
    const body = this.body;
    let buf = r.buf;
    let pos = r.pos;
    for (let slot = r.next; slot < end; slot++) {
      const st = state[slot]!;
      if (st === FREE) continue;
      const len = labelLen[slot]!;
      if (pos + nameLen + len + MAX_VALUE_CHARS + 2 > buf.length) {
        buf = moved(buf, pos, Math.ceil(buf.length * 1.25) + len + BODY_MARGIN);
      }
      for (let i = 0; i < nameLen; i++) buf[pos++] = name[i]!;
      r.at[slot] = pos;
      const src = st === IN_ARENA ? arena : body;
      const from = labelAt[slot]!;
      if (len > 64) {
        src.copy(buf, pos, from, from + len);
        pos += len;
      } else {
        for (let i = from, e = from + len; i < e; i++) buf[pos++] = src[i]!;
      }
      buf[pos++] = SPACE;
      pos = writeValue(buf, pos, values[slot]!);
      buf[pos++] = NEWLINE;
    }
    r.buf = buf;
    r.pos = pos;
    r.next = end;
  }

  /** Grows r.buf when fewer than `need` bytes are left after `pos`. */
  private room(r: BodyRender, pos: number, need: number): Buffer {
    const buf = r.buf;
    if (pos + need <= buf.length) return buf;
    r.buf = moved(buf, pos, Math.ceil(buf.length * 1.25) + need + BODY_MARGIN);
    return r.buf;
  }

  /** A counter's OpenMetrics lines: `name_total{...} value` and `name_created{...} start` per series. */
  private renderOpenMetricsRange(r: BodyRender, to: number): void {
    const end = Math.min(to, this.top);
    const name = this.name;
    const created = this.createdName;
    const extra = name.length + created.length + 2 * (MAX_VALUE_CHARS + 2);
    let pos = r.pos;
    for (let slot = r.next; slot < end; slot++) {
      const st = this.state[slot]!;
      if (st === FREE) continue;
      const len = this.labelLen[slot]!;
      const buf = this.room(r, pos, 2 * len + extra);
      const src = st === IN_ARENA ? this.arena : this.body;
      const from = this.labelAt[slot]!;
      pos = copyBytes(name, 0, name.length, buf, pos);
      pos = copyBytes(src, from, from + len, buf, pos);
      buf[pos++] = SPACE;
      pos = writeValue(buf, pos, this.values[slot]!);
      buf[pos++] = NEWLINE;
      // No start, no `_created` sample: as protobuf leaves created_timestamp out (./protobuf.ts, timestampSize).
      const start = this.startSeconds[slot]!;
      if (start === 0) continue;
      pos = copyBytes(created, 0, created.length, buf, pos);
      pos = copyBytes(src, from, from + len, buf, pos);
      buf[pos++] = SPACE;
      pos = writeValue(buf, pos, start);
      buf[pos++] = NEWLINE;
    }
    r.pos = pos;
    r.next = end;
  }

  /**
   * Metric fields (MetricFamily.metric) per series: its label pairs, transcoded from its label text (escapes
   * undone), then Gauge or Counter (with created_timestamp).
   */
  private renderProtobufRange(r: BodyRender, to: number): void {
    const end = Math.min(to, this.top);
    const n = this.partLen.length;
    const { partLen, pairNames, valFrom, valTo, valLen } = this;
    let pos = r.pos;
    for (let slot = r.next; slot < end; slot++) {
      const st = this.state[slot]!;
      if (st === FREE) continue;
      const src = st === IN_ARENA ? this.arena : this.body;
      // Each value runs from the end of its template part to the unescaped `"` that begins the next part.
      let p = this.labelAt[slot]!;
      let size = 0;
      for (let i = 0; i < n; i++) {
        p += partLen[i]!;
        const from = p;
        let escapes = 0;
        for (let c = src[p]!; c !== QUOTE; c = src[p]!) {
          if (c === BACKSLASH) {
            escapes++;
            p += 2;
          } else p++;
        }
        valFrom[i] = from;
        valTo[i] = p;
        const vlen = p - from - escapes;
        valLen[i] = vlen;
        const pair = pairNames[i]!.length + 1 + varintSize(vlen) + vlen;
        size += 1 + varintSize(pair) + pair;
      }
      const start = this.startSeconds[slot]!;
      const stamp = timestampSize(start);
      // Counter { value; created_timestamp } or Gauge { value }.
      const inner = this.isCounter ? 9 + (stamp > 0 ? 2 + stamp : 0) : 9;
      size += 2 + inner;
      const buf = this.room(r, pos, 1 + varintSize(size) + size);
      buf[pos++] = METRIC_FIELD;
      pos = writeVarint(buf, pos, size);
      for (let i = 0; i < n; i++) {
        const names = pairNames[i]!;
        const vlen = valLen[i]!;
        buf[pos++] = LABEL_FIELD;
        pos = writeVarint(buf, pos, names.length + 1 + varintSize(vlen) + vlen);
        pos = copyBytes(names, 0, names.length, buf, pos);
        buf[pos++] = LABEL_VALUE_FIELD;
        pos = writeVarint(buf, pos, vlen);
        const from = valFrom[i]!;
        const to = valTo[i]!;
        if (to - from === vlen) {
          pos = copyBytes(src, from, to, buf, pos);
          continue;
        }
        for (let j = from; j < to; j++) {
          let c = src[j]!;
          if (c === BACKSLASH) {
            c = src[++j]!;
            if (c === LETTER_N) c = NEWLINE;
          }
          buf[pos++] = c;
        }
      }
      buf[pos++] = this.isCounter ? COUNTER_FIELD : GAUGE_FIELD;
      buf[pos++] = inner;
      buf[pos++] = VALUE_FIELD;
      pos = buf.writeDoubleLE(this.values[slot]!, pos);
      if (this.isCounter && stamp > 0) {
        buf[pos++] = CREATED_FIELD;
        buf[pos++] = stamp;
        pos = writeTimestamp(buf, pos, start);
      }
    }
    r.pos = pos;
    r.next = end;
  }

  /**
   * Ends a render that wrote every slot with the structure unchanged: its body becomes the label source. Returns
   * the body, trimmed to what was written.
   */
  finishRender(r: BodyRender): Buffer {
    if (r.structure !== this.structure || r.next < this.top) {
      throw new Error(`${this.spec.name}: a render finished over a changed family`);
    }
    const body = tight(r.buf, r.pos);
    // Only a text body holds the label texts where `at` says: the others are read, not adopted.
    if (r.format !== 'text') return body;
    this.adopt(body, r.at);
    this.lastValueBytes = r.pos - this.labelBytes - this.live * (this.name.length + 2);
    return body;
  }

  /** Frees a render's buffers that will not be finished (the store starts over after a structural change). */
  abandonRender(r: BodyRender): void {
    freeNow(r.buf);
    freeNow(r.at);
  }

  /** The whole body in `format`, synchronously (renders it; a text body is adopted as the label source). */
  renderBody(format: ExpositionFormat = 'text'): Buffer {
    const r = this.beginRender(format);
    this.renderRange(r, this.top);
    return this.finishRender(r);
  }
}

/**
 * The first `used` bytes of `buf`, in a buffer of their own when the rest is worth freeing (a subarray would keep
 * all of it alive as long as the body is cached): an estimate too generous, or a buffer grown near the end.
 */
function tight(buf: Buffer, used: number): Buffer {
  if (buf.length - used <= buf.length * MAX_SLACK) return buf.subarray(0, used);
  return moved(buf, used, used);
}

/**
 * Copies src[from, to) to dst at `pos`; returns the new position. A short run is copied byte by byte: a
 * Buffer.copy call costs more than the copy itself below a few dozen bytes (label texts, names).
 */
function copyBytes(src: Buffer, from: number, to: number, dst: Buffer, pos: number): number {
  if (to - from > 64) return pos + src.copy(dst, pos, from, to);
  for (let i = from; i < to; i++) dst[pos++] = src[i]!;
  return pos;
}
