/**
 * One metric family of the series store: one slot per series.
 *
 * Memory is the point of this design (issue 15: 1M series within 300 MB). A series costs about 30 bytes of typed
 * arrays and nothing in the JavaScript heap: its label text (`{a="x",b="y"}`, escaped, in UTF-8) is not kept as a
 * string but read from the last rendered body, which the store holds anyway to serve scrapes. Per slot:
 *
 * - `values`: the value (Float64Array);
 * - `labelAt`/`labelLen`: where the label text is: in `body`, or in `arena` for a series newer than the body;
 * - `state`: free, in body, in arena;
 * - `hashes`: the label text's FNV-1a hash, for the index and for rehashing without reading the text.
 *
 * The index is an open-addressing table (linear probing, backward-shift deletion) of slot + 1, keyed by hash and
 * checked byte for byte. A render reads each live series' label bytes from the current body (or the arena), writes
 * the line into the new body and notes where it put the label; the store hands the finished body back (`finishRender`),
 * which becomes the new source and empties the arena. The store restarts a render whenever a series is added or
 * removed during it (`structure` moved), so an adopted body always holds every live series.
 *
 * Freed slots are reused; output order is slot order.
 */

import { SECRETS } from '../redact.js';
import {
  escapeHelp,
  type LabelTemplate,
  labelTemplate,
  labelText,
  parseLabelText,
  writeValue,
} from './format.js';
import { freeNow } from './free-now.js';
import { openMetricsName, validateSpec } from './names.js';
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
import type { ExpositionFormat, Family, FamilySpec, Slot } from './types.js';

const INITIAL_CAPACITY = 16;
/** formatValue's longest output: a negative 17-digit mantissa with a 3-digit exponent, `-1.2345678901234567e-100`. */
const MAX_VALUE_CHARS = 24;
/**
 * What a new series' value is expected to take in a render's first estimate (a first window's counts are short
 * integers): reserving the longest form made the first render of 1M series 24 MB too big, then copied it.
 */
const NEW_VALUE_CHARS = 8;
/** `state` of a slot: free, label text in `body`, label text in `arena` (created since the body was rendered). */
const FREE = 0;
const IN_BODY = 1;
const IN_ARENA = 2;
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

/** FNV-1a over bytes [0, len) of `b`. */
function hashBytes(b: Uint8Array, from: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = from, end = from + len; i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

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

export class SeriesFamily implements Family {
  readonly spec: FamilySpec;
  /** Bumped by every change that alters the exposition (a value that changed, a series added or removed). */
  version = 0;
  /** Bumped when a series is added or removed: a render interrupted by such a change must start over. */
  structure = 0;

  private readonly template: LabelTemplate;
  private readonly isCounter: boolean;
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
  /** When the series was created, or, for a counter, the start of the first window it counted (its created timestamp). */
  private readonly now: () => number;
  /** Called after every change that moves `version` (the store refreshes itself: ./series-store.ts). */
  private readonly changed: () => void;

  private values = new Float64Array(INITIAL_CAPACITY);
  private labelAt = new Uint32Array(INITIAL_CAPACITY);
  private labelLen = new Uint32Array(INITIAL_CAPACITY);
  private hashes = new Uint32Array(INITIAL_CAPACITY);
  /** FREE, IN_BODY or IN_ARENA. */
  private state = new Uint8Array(INITIAL_CAPACITY);
  /**
   * A counter's start (created timestamp) in whole seconds since the epoch, 0 for none (see startSecondsOf);
   * unused for gauges.
   */
  private startSeconds = new Uint32Array(INITIAL_CAPACITY);
  /** One past the highest slot ever used. */
  private top = 0;
  private readonly freeSlots: Slot[] = [];
  /** Open addressing: slot + 1, 0 empty; its length is a power of two, at most half full. */
  private table = new Int32Array(2 * INITIAL_CAPACITY);
  /** The label source: the last adopted body. */
  private body: Buffer = Buffer.alloc(0);
  /** Label texts of series created since `body` was rendered, appended; emptied by each finished render. */
  private arena = Buffer.allocUnsafeSlow(1024);
  private arenaUsed = 0;
  /** Scratch for a key's UTF-8 bytes. */
  private scratch = Buffer.allocUnsafeSlow(256);
  private live = 0;
  /** Sum of the live series' label text sizes in UTF-8. */
  private labelBytes = 0;
  /** Bytes the values took in the last complete render (the next one's estimate). */
  private lastValueBytes = 0;
  /** Series created since the last finished render. */
  private newSeries = 0;

  /**
   * `now`: the clock of a series' start when slot() is not given one (milliseconds since the epoch); `changed`:
   * told after every change of the exposition (a value, a series added or removed).
   */
  constructor(spec: FamilySpec, now: () => number = Date.now, changed: () => void = () => {}) {
    validateSpec(spec);
    this.spec = Object.freeze({ ...spec, labelNames: Object.freeze([...spec.labelNames]) });
    this.template = labelTemplate(spec.labelNames);
    this.isCounter = spec.type === 'counter';
    this.now = now;
    this.changed = changed;
    this.name = Buffer.from(spec.name);
    const om = openMetricsName(spec);
    this.createdName = Buffer.from(`${om}_created`);
    const n = spec.labelNames.length;
    this.partLen = Uint32Array.from(this.template.parts, (p) => Buffer.byteLength(p));
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

  get size(): number {
    return this.live;
  }

  /** One past the highest slot ever used: renders scan [0, highWater). */
  get highWater(): number {
    return this.top;
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
   * The series' key (its label text) in `this.scratch`, returning its length. A label value holding a secret (an
   * upstream echoing the token as a resource id, say) is masked: the series is kept under the masked value, never
   * shown with the secret. Two such values masked alike share one series; each series created so is counted
   * (`SECRETS.redactions('label')`).
   */
  private keyOf(labelValues: readonly string[]): { len: number; masked: boolean } {
    let masked = false;
    let text = labelText(this.template, labelValues);
    if (SECRETS.size > 0 && !labelValues.every((v) => SECRETS.isClean(v))) {
      text = labelText(
        this.template,
        labelValues.map((v) => SECRETS.redact(v)),
      );
      masked = true;
    }
    if (text.length * 3 > this.scratch.length) {
      this.scratch = Buffer.allocUnsafeSlow(Math.max(text.length * 3, 2 * this.scratch.length));
    }
    return { len: this.scratch.write(text, 0, 'utf8'), masked };
  }

  /** The slot whose label text is scratch[0, len) with this hash, or -1; `home` receives the free table index. */
  private lookup(h: number, len: number): { slot: number; home: number } {
    const table = this.table;
    const mask = table.length - 1;
    const scratch = this.scratch;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const e = table[i]!;
      if (e === 0) return { slot: -1, home: i };
      const s = e - 1;
      if (this.hashes[s] === h && this.labelLen[s] === len) {
        const src = this.state[s] === IN_ARENA ? this.arena : this.body;
        const from = this.labelAt[s]!;
        let j = 0;
        while (j < len && src[from + j] === scratch[j]) j++;
        if (j === len) return { slot: s, home: i };
      }
    }
  }

  startOf(slot: Slot): number {
    return this.startSeconds[slot]! * 1000;
  }

  slot(labelValues: readonly string[], startMs?: number): Slot {
    const { len, masked } = this.keyOf(labelValues);
    const h = hashBytes(this.scratch, 0, len);
    const { slot: found, home } = this.lookup(h, len);
    if (found >= 0) return found;
    if (masked) SECRETS.count('label');
    const slot = this.freeSlots.pop() ?? this.top++;
    if (slot >= this.values.length) this.grow();
    this.values[slot] = 0;
    this.startSeconds[slot] = startSecondsOf(startMs ?? this.now());
    this.hashes[slot] = h;
    this.labelLen[slot] = len;
    this.labelAt[slot] = this.toArena(len);
    this.state[slot] = IN_ARENA;
    this.table[home] = slot + 1;
    this.labelBytes += len;
    this.newSeries++;
    this.live++;
    if (this.live * 2 > this.table.length) this.rehash(this.table.length * 2);
    this.version++;
    this.structure++;
    this.changed();
    return slot;
  }

  find(labelValues: readonly string[]): Slot | undefined {
    const { len } = this.keyOf(labelValues);
    const { slot } = this.lookup(hashBytes(this.scratch, 0, len), len);
    return slot >= 0 ? slot : undefined;
  }

  set(slot: Slot, value: number): void {
    this.check(slot);
    if (this.isCounter && !(value >= 0)) {
      throw new RangeError(`${this.spec.name}: a counter cannot be set to ${value}`);
    }
    if (this.values[slot] !== value) {
      this.values[slot] = value;
      this.version++;
      this.changed();
    }
  }

  add(slot: Slot, delta: number): void {
    this.check(slot);
    if (this.isCounter && !(delta >= 0)) {
      throw new RangeError(`${this.spec.name}: a counter only accepts non-negative deltas, got ${delta}`);
    }
    if (delta !== 0) {
      this.values[slot] = this.values[slot]! + delta;
      this.version++;
      this.changed();
    }
  }

  get(slot: Slot): number {
    this.check(slot);
    return this.values[slot]!;
  }

  delete(labelValues: readonly string[]): boolean {
    const slot = this.find(labelValues);
    if (slot === undefined) return false;
    this.release(slot);
    return true;
  }

  deleteWhere(match: (labelValues: readonly string[]) => boolean): number {
    const n = this.template.parts.length;
    let deleted = 0;
    for (let slot = 0; slot < this.top; slot++) {
      if (this.state[slot] !== FREE && match(parseLabelText(this.labelTextOf(slot), n))) {
        this.release(slot);
        deleted++;
      }
    }
    return deleted;
  }

  forEach(fn: (labelValues: readonly string[], value: number, slot: Slot) => void): void {
    const n = this.template.parts.length;
    for (let slot = 0; slot < this.top; slot++) {
      if (this.state[slot] !== FREE) fn(parseLabelText(this.labelTextOf(slot), n), this.values[slot]!, slot);
    }
  }

  private labelTextOf(slot: Slot): string {
    const at = this.labelAt[slot]!;
    const src = this.state[slot] === IN_ARENA ? this.arena : this.body;
    return src.toString('utf8', at, at + this.labelLen[slot]!);
  }

  /** Appends scratch[0, len) to the arena; returns where. */
  private toArena(len: number): number {
    if (this.arenaUsed + len > this.arena.length) {
      this.arena = moved(this.arena, this.arenaUsed, Math.max(2 * this.arena.length, this.arenaUsed + len));
    }
    const at = this.arenaUsed;
    this.scratch.copy(this.arena, at, 0, len);
    this.arenaUsed += len;
    return at;
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
    // The old body is the store's to free (scrapes may be writing it); the old offsets are nobody's.
    this.body = body;
    // Same length: the structure has not moved, so neither has the capacity.
    freeNow(this.labelAt);
    this.labelAt = r.at;
    this.state.fill(IN_BODY, 0, this.top);
    for (const slot of this.freeSlots) this.state[slot] = FREE;
    this.arenaUsed = 0;
    this.newSeries = 0;
    if (this.arena.length > 1024) {
      freeNow(this.arena);
      this.arena = Buffer.allocUnsafeSlow(1024);
    }
    this.lastValueBytes = r.pos - this.labelBytes - this.live * (this.name.length + 2);
    return body;
  }

  /** Frees a render's buffers that will not be finished (the store starts over after a structural change). */
  abandonRender(r: BodyRender): void {
    freeNow(r.buf);
    freeNow(r.at);
  }

  /**
   * The last adopted body, which the family reads label text from: it must outlive every body the store
   * replaces it with until the next finishRender.
   */
  get source(): Buffer {
    return this.body;
  }

  /** The whole body in `format`, synchronously (renders it; a text body is adopted as the label source). */
  renderBody(format: ExpositionFormat = 'text'): Buffer {
    const r = this.beginRender(format);
    this.renderRange(r, this.top);
    return this.finishRender(r);
  }

  private release(slot: Slot): void {
    this.unindex(slot);
    this.labelBytes -= this.labelLen[slot]!;
    this.state[slot] = FREE;
    this.values[slot] = 0;
    this.freeSlots.push(slot);
    this.live--;
    this.version++;
    this.structure++;
    this.changed();
  }

  /** Removes slot from the table by backward-shift deletion (no tombstones). */
  private unindex(slot: Slot): void {
    const table = this.table;
    const mask = table.length - 1;
    let i = this.hashes[slot]! & mask;
    while (table[i] !== slot + 1) i = (i + 1) & mask;
    for (let j = (i + 1) & mask; table[j] !== 0; j = (j + 1) & mask) {
      const home = this.hashes[table[j]! - 1]! & mask;
      // Entry j may move to the hole at i when its home is not within (i, j] cyclically.
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        table[i] = table[j]!;
        i = j;
      }
    }
    table[i] = 0;
  }

  private rehash(size: number): void {
    const table = new Int32Array(size);
    const mask = size - 1;
    for (let s = 0; s < this.top; s++) {
      if (this.state[s] === FREE) continue;
      let i = this.hashes[s]! & mask;
      while (table[i] !== 0) i = (i + 1) & mask;
      table[i] = s + 1;
    }
    freeNow(this.table);
    this.table = table;
  }

  private check(slot: Slot): void {
    if (this.state[slot] === FREE) {
      throw new RangeError(`${this.spec.name}: slot ${slot} is not a live series`);
    }
  }

  private grow(): void {
    const n = this.values.length * 2;
    this.values = grownArray(this.values, n);
    this.labelAt = grownArray(this.labelAt, n);
    this.labelLen = grownArray(this.labelLen, n);
    this.hashes = grownArray(this.hashes, n);
    this.state = grownArray(this.state, n);
    this.startSeconds = grownArray(this.startSeconds, n);
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

/** The first `used` bytes of `buf` in a new buffer of `size` bytes, off Buffer's pool; `buf` is freed now. */
function moved(buf: Buffer, used: number, size: number): Buffer<ArrayBuffer> {
  const out = Buffer.allocUnsafeSlow(size);
  buf.copy(out, 0, 0, used);
  freeNow(buf);
  return out;
}

/**
 * A counter's start as the store keeps it: whole seconds since the epoch, from 1 up to 2^32 - 1 (in 2106), what a
 * Uint32Array holds; anything else (before 1970-01-01T00:00:01Z, past 2106, not a number) is 0, none, which both
 * formats leave out (OpenMetrics no `_created` sample, protobuf no created_timestamp). A Uint32Array would wrap a
 * larger value instead (2^32 + 1000 s became 1970-01-01T00:16:40Z) and make a negative one 0.
 */
export function startSecondsOf(startMs: number): number {
  const seconds = Math.floor(startMs / 1000);
  return seconds >= 1 && seconds <= 0xffff_ffff ? seconds : 0;
}

/** `old`'s elements at the start of a new array of `n` (zeros after them); `old` is freed now. */
function grownArray<A extends Float64Array | Uint32Array | Uint8Array>(old: A, n: number): A {
  const out = new (old.constructor as new (length: number) => A)(n);
  out.set(old);
  freeNow(old);
  return out;
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
