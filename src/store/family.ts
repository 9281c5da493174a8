/**
 * One metric family of the series store: one slot per series.
 *
 * Per series the store keeps only its label text (`{a="x",b="y"}`, escaped, rendered once when the series is
 * created), a Map entry from that text to the slot, and the value in a Float64Array. The label text doubles as
 * the Map key, so there is no second per-series string; the label values are parsed back from it for the rare
 * forEach/deleteWhere. Freed slots are reused; output order is slot order.
 */

import { SECRETS } from '../redact.js';
import {
  escapeHelp,
  formatValue,
  type LabelTemplate,
  labelTemplate,
  labelText,
  parseLabelText,
} from './format.js';
import { openMetricsName, validateSpec } from './names.js';
import type { ExpositionFormat, Family, FamilySpec, Slot } from './types.js';

const INITIAL_CAPACITY = 16;
/** formatValue's longest output: a negative 17-digit mantissa with a 3-digit exponent, `-1.2345678901234567e-100`. */
const MAX_VALUE_CHARS = 24;
/** Lines per intermediate string: measured fastest at 1M series (larger ropes fall out of the CPU cache). */
const LINES_PER_WRITE = 512;

export class SeriesFamily implements Family {
  readonly spec: FamilySpec;
  /** Bumped by every change that alters the exposition (a value that changed, a series added or removed). */
  version = 0;
  /** Bumped when a series is added or removed: a render interrupted by such a change must start over. */
  structure = 0;

  private readonly template: LabelTemplate;
  private readonly isCounter: boolean;
  private readonly headers: Record<ExpositionFormat, Buffer>;
  /** Slot -> label text; undefined marks a free slot. */
  private readonly labels: (string | undefined)[] = [];
  private readonly index = new Map<string, Slot>();
  private readonly freeSlots: Slot[] = [];
  private values = new Float64Array(INITIAL_CAPACITY);
  private live = 0;
  /** Sum of the live series' label text sizes in UTF-8. */
  private labelBytes = 0;
  private readonly nameBytes: number;

  constructor(spec: FamilySpec) {
    validateSpec(spec);
    this.spec = Object.freeze({ ...spec, labelNames: Object.freeze([...spec.labelNames]) });
    this.template = labelTemplate(spec.labelNames);
    this.isCounter = spec.type === 'counter';
    this.nameBytes = Buffer.byteLength(spec.name);
    const om = openMetricsName(spec);
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
    return this.labels.length;
  }

  /** The `# HELP` and `# TYPE` lines in this format. */
  header(format: ExpositionFormat): Buffer {
    return this.headers[format];
  }

  /**
   * The series' key (its label text). A label value holding a secret (an upstream echoing the token as a resource
   * id, say) is masked: the series is kept under the masked value, never shown with the secret. Two such values
   * masked alike share one series; each series created so is counted (`SECRETS.redactions('label')`).
   */
  private keyOf(labelValues: readonly string[]): { key: string; masked: boolean } {
    const key = labelText(this.template, labelValues);
    if (SECRETS.size === 0 || labelValues.every((v) => SECRETS.isClean(v))) return { key, masked: false };
    return {
      key: labelText(
        this.template,
        labelValues.map((v) => SECRETS.redact(v)),
      ),
      masked: true,
    };
  }

  slot(labelValues: readonly string[]): Slot {
    const { key, masked } = this.keyOf(labelValues);
    const found = this.index.get(key);
    if (found !== undefined) return found;
    if (masked) SECRETS.count('label');
    const slot = this.freeSlots.pop() ?? this.labels.length;
    if (slot === this.labels.length) {
      if (slot === this.values.length) this.grow();
      this.labels.push(key);
    } else {
      this.labels[slot] = key;
    }
    this.values[slot] = 0;
    this.index.set(key, slot);
    this.labelBytes += Buffer.byteLength(key);
    this.live++;
    this.version++;
    this.structure++;
    return slot;
  }

  find(labelValues: readonly string[]): Slot | undefined {
    return this.index.get(this.keyOf(labelValues).key);
  }

  set(slot: Slot, value: number): void {
    this.check(slot);
    if (this.isCounter && !(value >= 0)) {
      throw new RangeError(`${this.spec.name}: a counter cannot be set to ${value}`);
    }
    if (this.values[slot] !== value) {
      this.values[slot] = value;
      this.version++;
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
    for (let slot = 0; slot < this.labels.length; slot++) {
      const text = this.labels[slot];
      if (text !== undefined && match(parseLabelText(text, n))) {
        this.release(slot);
        deleted++;
      }
    }
    return deleted;
  }

  forEach(fn: (labelValues: readonly string[], value: number, slot: Slot) => void): void {
    const n = this.template.parts.length;
    for (let slot = 0; slot < this.labels.length; slot++) {
      const text = this.labels[slot];
      if (text !== undefined) fn(parseLabelText(text, n), this.values[slot]!, slot);
    }
  }

  /**
   * An upper bound of the body's size in bytes: the label texts (tracked) plus, per series, the name, a space,
   * the longest value formatValue can produce and a line feed.
   */
  bodyCapacity(): number {
    return this.labelBytes + this.live * (this.nameBytes + 2 + MAX_VALUE_CHARS);
  }

  /**
   * Writes the sample lines of slots [from, to) into `buf` at `pos`; returns the new position. `buf` must have
   * bodyCapacity() bytes from where the body starts. Only strings are built, a few hundred lines at a time (a
   * short rope stays in cache): the cached label text, the formatted value and the separators.
   */
  writeRange(buf: Buffer, pos: number, from: number, to: number): number {
    const labels = this.labels;
    const values = this.values;
    const name = this.spec.name;
    const end = Math.min(to, labels.length);
    for (let start = from; start < end; start += LINES_PER_WRITE) {
      const stop = Math.min(end, start + LINES_PER_WRITE);
      let s = '';
      for (let slot = start; slot < stop; slot++) {
        const text = labels[slot];
        if (text !== undefined) s += `${name}${text} ${formatValue(values[slot]!)}\n`;
      }
      if (s) pos += buf.write(s, pos, 'utf8');
    }
    return pos;
  }

  private release(slot: Slot): void {
    const key = this.labels[slot]!;
    this.index.delete(key);
    this.labelBytes -= Buffer.byteLength(key);
    this.labels[slot] = undefined;
    this.values[slot] = 0;
    this.freeSlots.push(slot);
    this.live--;
    this.version++;
    this.structure++;
  }

  private check(slot: Slot): void {
    if (this.labels[slot] === undefined) {
      throw new RangeError(`${this.spec.name}: slot ${slot} is not a live series`);
    }
  }

  private grow(): void {
    const next = new Float64Array(this.values.length * 2);
    next.set(this.values);
    this.values = next;
  }
}
