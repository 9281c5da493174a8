/**
 * A TrafficResponse as a handful of arrays, to cross from the parse worker (./worker.ts) to the event loop.
 * Structured-cloning 15k records object by object costs the receiving thread about as much as parsing them did;
 * these arrays cost it a few milliseconds, and their buffers are transferred, not copied.
 *
 * Per record: 3 labels; per side, 4 scalars (NaN: absent; the parser never keeps a NaN) and 3 keyed fields, each
 * an index into the distinct key lists (-1: empty) and an offset into one array of values.
 */

import type { FieldIssue } from '../http/parse.js';
import { KeyedNumbers, NO_KEYS } from '../traffic/keyed.js';
import { type ParseMetricsOptions, parseTrafficBody } from '../traffic/parse.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../traffic/response.js';
import { parseTrafficElements } from './elements.js';
import { type AnswerCodec, type SliceOptions, Slicer } from './packing.js';

const SIDES = ['edge', 'origin'] as const;
const SCALARS = ['requests', 'bandwidthBitsPerSecond', 'hitBytes', 'hitRatio'] as const;
const KEYED = ['codes', 'classes', 'requestTimeSeconds'] as const;
const LABELS = ['resource', 'resourceName', 'cname'] as const;
const SCALARS_PER_RECORD = SIDES.length * SCALARS.length;
const KEYED_PER_RECORD = SIDES.length * KEYED.length;

export interface PackedTrafficResponse {
  account: string;
  start?: number;
  end?: number;
  metrics: string[];
  issues: FieldIssue[];
  unknownKeys: string[];
  count: number;
  /** resource, resourceName, cname of each record; null where absent. */
  labels: Array<string | null>;
  scalars: Float64Array;
  keyLists: string[][];
  keyed: Int32Array;
  offsets: Int32Array;
  values: Float64Array;
}

function listOf(map: ReadonlyMap<string, number>): {
  keys: readonly string[];
  values: ArrayLike<number>;
  offset: number;
} {
  if (map instanceof KeyedNumbers) return { keys: map.keyList, values: map.valueList, offset: map.offset };
  return { keys: [...map.keys()], values: [...map.values()], offset: 0 };
}

export function packTrafficResponse(r: TrafficResponse): PackedTrafficResponse {
  const packer = new TrafficPacker(r.records.length);
  for (const record of r.records) packer.add(record);
  return packer.finish(r);
}

/**
 * Packs records one at a time, so that a parser can let each record go as soon as it is read (the parse worker
 * reads an answer element by element: ./elements.ts). `capacity` is how many records to make room for
 * first; more only cost a copy.
 */
export class TrafficPacker {
  private count = 0;
  private capacity: number;
  private readonly labels: Array<string | null> = [];
  private scalars: Float64Array;
  private keyed: Int32Array;
  private offsets: Int32Array;
  private values: Float64Array;
  private total = 0;
  // Records of one answer share their key lists (src/traffic/keyed.ts): one entry per distinct list, found by identity.
  private readonly listIndex = new Map<readonly string[], number>();
  private readonly keyLists: string[][] = [];

  constructor(capacity = 0) {
    this.capacity = Math.max(0, capacity);
    this.scalars = new Float64Array(this.capacity * SCALARS_PER_RECORD).fill(Number.NaN);
    this.keyed = new Int32Array(this.capacity * KEYED_PER_RECORD).fill(-1);
    this.offsets = new Int32Array(this.capacity * KEYED_PER_RECORD);
    this.values = new Float64Array(this.capacity * 8);
  }

  add(record: TrafficRecord): void {
    if (this.count === this.capacity) this.grow(Math.max(64, this.capacity * 2));
    const i = this.count++;
    for (let l = 0; l < LABELS.length; l++) this.labels.push(record[LABELS[l]!] ?? null);
    for (let s = 0; s < SIDES.length; s++) {
      const side = record[SIDES[s]!];
      for (let k = 0; k < SCALARS.length; k++) {
        const v = side[SCALARS[k]!];
        if (v !== undefined) this.scalars[i * SCALARS_PER_RECORD + s * SCALARS.length + k] = v;
      }
      for (let k = 0; k < KEYED.length; k++) {
        const map = side[KEYED[k]!];
        if (map.size === 0) continue;
        const { keys, values, offset } = listOf(map);
        let index = this.listIndex.get(keys);
        if (index === undefined) {
          index = this.keyLists.length;
          this.keyLists.push([...keys]);
          this.listIndex.set(keys, index);
        }
        const at = i * KEYED_PER_RECORD + s * KEYED.length + k;
        this.keyed[at] = index;
        this.offsets[at] = this.total;
        const n = keys.length;
        if (this.total + n > this.values.length) {
          const more = new Float64Array(Math.max(this.values.length * 2, this.total + n, 64));
          more.set(this.values.subarray(0, this.total));
          this.values = more;
        }
        for (let j = 0; j < n; j++) this.values[this.total + j] = values[offset + j]!;
        this.total += n;
      }
    }
  }

  /** The packed response: `head`'s fields (its records are not looked at) and the records added. */
  finish(head: Omit<TrafficResponse, 'records'>): PackedTrafficResponse {
    const count = this.count;
    const out: PackedTrafficResponse = {
      account: head.account,
      metrics: head.metrics,
      issues: head.issues,
      unknownKeys: head.unknownKeys,
      count,
      labels: this.labels,
      scalars: trimmed(this.scalars, count * SCALARS_PER_RECORD),
      keyLists: this.keyLists,
      keyed: trimmed(this.keyed, count * KEYED_PER_RECORD),
      offsets: trimmed(this.offsets, count * KEYED_PER_RECORD),
      values: trimmed(this.values, this.total),
    };
    if (head.start !== undefined) out.start = head.start;
    if (head.end !== undefined) out.end = head.end;
    return out;
  }

  private grow(capacity: number): void {
    const scalars = new Float64Array(capacity * SCALARS_PER_RECORD).fill(Number.NaN);
    scalars.set(this.scalars);
    const keyed = new Int32Array(capacity * KEYED_PER_RECORD).fill(-1);
    keyed.set(this.keyed);
    const offsets = new Int32Array(capacity * KEYED_PER_RECORD);
    offsets.set(this.offsets);
    this.scalars = scalars;
    this.keyed = keyed;
    this.offsets = offsets;
    this.capacity = capacity;
  }
}

/** `a` cut to `length`: a copy when it is longer, so that a transfer hands over no more than the answer. */
function trimmed<T extends Float64Array | Int32Array>(a: T, length: number): T {
  return (a.length === length ? a : a.slice(0, length)) as T;
}

/** The buffers a postMessage of `p` can hand over instead of copying. */
export function transferables(p: PackedTrafficResponse): ArrayBuffer[] {
  return [p.scalars.buffer, p.keyed.buffer, p.offsets.buffer, p.values.buffer] as ArrayBuffer[];
}

export function unpackTrafficResponse(p: PackedTrafficResponse): TrafficResponse {
  const records: TrafficRecord[] = new Array(p.count);
  for (let i = 0; i < p.count; i++) records[i] = unpackRecord(p, i);
  return response(p, records);
}

/**
 * The same as unpackTrafficResponse, yielding to the event loop every `sliceMs`: at 15k resources the whole
 * unpack is ~26 ms of CPU in one task, which a loaded machine stretches past 100 ms.
 */
export async function unpackTrafficResponseSliced(
  p: PackedTrafficResponse,
  opts: SliceOptions = {},
): Promise<TrafficResponse> {
  const slicer = new Slicer(opts);
  const records: TrafficRecord[] = new Array(p.count);
  for (let i = 0; i < p.count; i++) {
    records[i] = unpackRecord(p, i);
    if (i + 1 < p.count && slicer.due()) await slicer.yieldNow();
  }
  return response(p, records);
}

function unpackRecord(p: PackedTrafficResponse, i: number): TrafficRecord {
  const record: TrafficRecord = { edge: unpackSide(p, i, 0), origin: unpackSide(p, i, 1) };
  for (let l = 0; l < LABELS.length; l++) {
    const v = p.labels[i * LABELS.length + l];
    if (v !== null && v !== undefined) record[LABELS[l]!] = v;
  }
  return record;
}

function response(p: PackedTrafficResponse, records: TrafficRecord[]): TrafficResponse {
  const out: TrafficResponse = {
    account: p.account,
    metrics: p.metrics,
    records,
    issues: p.issues,
    unknownKeys: p.unknownKeys,
  };
  if (p.start !== undefined) out.start = p.start;
  if (p.end !== undefined) out.end = p.end;
  return out;
}

function unpackSide(p: PackedTrafficResponse, i: number, s: number): SideRecord {
  const maps: ReadonlyMap<string, number>[] = [];
  for (let k = 0; k < KEYED.length; k++) {
    const at = i * KEYED_PER_RECORD + s * KEYED.length + k;
    const index = p.keyed[at]!;
    if (index < 0) {
      maps.push(NO_KEYS);
      continue;
    }
    const keys = p.keyLists[index]!;
    const from = p.offsets[at]!;
    maps.push(new KeyedNumbers(keys, p.values, from));
  }
  const side: SideRecord = { codes: maps[0]!, classes: maps[1]!, requestTimeSeconds: maps[2]! };
  for (let k = 0; k < SCALARS.length; k++) {
    const v = p.scalars[i * SCALARS_PER_RECORD + s * SCALARS.length + k]!;
    if (!Number.isNaN(v)) side[SCALARS[k]!] = v;
  }
  return side;
}

/**
 * parseTrafficBody, packed: element by element when the body allows it (./elements.ts), else whole (and then
 * whatever that throws, it throws).
 */
export function parseTrafficBodyPacked(bytes: Uint8Array, opts: ParseMetricsOptions): PackedTrafficResponse {
  let packer = new TrafficPacker();
  let head: TrafficResponse | undefined;
  try {
    head = parseTrafficElements(bytes, opts, {
      reserve: (n) => {
        packer = new TrafficPacker(n);
      },
      add: (record) => packer.add(record),
    });
  } catch {
    // A top level parseMetricsResponse refuses: the whole body says how (and whether it is JSON at all).
    head = undefined;
  }
  if (head) return packer.finish(head);
  return packTrafficResponse(parseTrafficBody(bytes, opts));
}

export const trafficCodec: AnswerCodec<ParseMetricsOptions, TrafficResponse, PackedTrafficResponse> = {
  api: 'metrics',
  module: 'offloop/traffic.js',
  parse: parseTrafficBody,
  pack: parseTrafficBodyPacked,
  transferables,
  unpack: (p) => unpackTrafficResponseSliced(p),
};
