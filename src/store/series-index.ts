/**
 * The index of one metric family of the series store: one slot per series, found by its label text.
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
 * checked byte for byte. The rendering of a family's bodies (./family.ts) reads each live series' label bytes from
 * the current body (or the arena) and hands a finished text body back (`adopt`), which becomes the new source and
 * empties the arena.
 *
 * Freed slots are reused; output order is slot order.
 */
import { SECRETS } from '../redact.js';
import { type LabelTemplate, labelTemplate, labelText, parseLabelText } from './format.js';
import { freeNow } from './free-now.js';
import { validateSpec } from './names.js';
import type { Family, FamilySpec, Slot } from './types.js';

const INITIAL_CAPACITY = 16;
/** `state` of a slot: free, label text in `body`, label text in `arena` (created since the body was rendered). */
export const FREE = 0;
export const IN_BODY = 1;
export const IN_ARENA = 2;

/** FNV-1a over bytes [0, len) of `b`. */
function hashBytes(b: Uint8Array, from: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = from, end = from + len; i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

/** A family's series and their index; rendering them is ./family.ts (SeriesFamily). */
export class SeriesIndex implements Family {
  readonly spec: FamilySpec;
  /** Bumped by every change that alters the exposition (a value that changed, a series added or removed). */
  version = 0;
  /** Bumped when a series is added or removed: a render interrupted by such a change must start over. */
  structure = 0;

  private readonly template: LabelTemplate;
  protected readonly isCounter: boolean;
  /** When the series was created, or, for a counter, the start of the first window it counted (its created timestamp). */
  private readonly now: () => number;
  /** Called after every change that moves `version` (the store refreshes itself: ./series-store.ts). */
  private readonly changed: () => void;

  protected values = new Float64Array(INITIAL_CAPACITY);
  protected labelAt = new Uint32Array(INITIAL_CAPACITY);
  protected labelLen = new Uint32Array(INITIAL_CAPACITY);
  private hashes = new Uint32Array(INITIAL_CAPACITY);
  /** FREE, IN_BODY or IN_ARENA. */
  protected state = new Uint8Array(INITIAL_CAPACITY);
  /**
   * A counter's start (created timestamp) in whole seconds since the epoch, 0 for none (see startSecondsOf);
   * unused for gauges.
   */
  protected startSeconds = new Uint32Array(INITIAL_CAPACITY);
  /** One past the highest slot ever used. */
  protected top = 0;
  private readonly freeSlots: Slot[] = [];
  /** Open addressing: slot + 1, 0 empty; its length is a power of two, at most half full. */
  private table = new Int32Array(2 * INITIAL_CAPACITY);
  /** The label source: the last adopted body. */
  protected body: Buffer = Buffer.alloc(0);
  /** Label texts of series created since `body` was rendered, appended; emptied by each adopted body. */
  protected arena = Buffer.allocUnsafeSlow(1024);
  private arenaUsed = 0;
  /** Scratch for a key's UTF-8 bytes. */
  private scratch = Buffer.allocUnsafeSlow(256);
  protected live = 0;
  /** Sum of the live series' label text sizes in UTF-8. */
  protected labelBytes = 0;
  /** Series created since the last adopted body. */
  protected newSeries = 0;

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
  }

  get size(): number {
    return this.live;
  }

  /** One past the highest slot ever used: renders scan [0, highWater). */
  get highWater(): number {
    return this.top;
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
   * The last adopted body, which the family reads label text from: it must outlive every body the store
   * replaces it with until the next finishRender.
   */
  get source(): Buffer {
    return this.body;
  }

  /**
   * A text body rendered from every live series, with where it put each one's label text (`at`, one entry per
   * slot): it becomes the label source, and the arena is emptied. The old body is the store's to free (scrapes may
   * be writing it); the old offsets are nobody's.
   */
  protected adopt(body: Buffer, at: Uint32Array<ArrayBuffer>): void {
    this.body = body;
    // Same length: the structure has not moved, so neither has the capacity.
    freeNow(this.labelAt);
    this.labelAt = at;
    this.state.fill(IN_BODY, 0, this.top);
    for (const slot of this.freeSlots) this.state[slot] = FREE;
    this.arenaUsed = 0;
    this.newSeries = 0;
    if (this.arena.length > 1024) {
      freeNow(this.arena);
      this.arena = Buffer.allocUnsafeSlow(1024);
    }
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

/** The first `used` bytes of `buf` in a new buffer of `size` bytes, off Buffer's pool; `buf` is freed now. */
export function moved(buf: Buffer, used: number, size: number): Buffer<ArrayBuffer> {
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
