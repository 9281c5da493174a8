/**
 * A DvrStreamResponse packed to cross from the parse worker (src/offloop/worker.ts) to the event loop (see
 * src/offloop/packing.ts for why): the entries' numbers in one array, every range as a (from, duration) pair in another, every text in
 * one string. Unpacked, it is the object the parser made, key for key and in the same key order (a test compares
 * their JSON).
 */

import {
  type AnswerCodec,
  type PackedTexts,
  readReport,
  type SliceOptions,
  Slicer,
  TextReader,
  TextWriter,
  writeReport,
} from '../offloop/packing.js';
import { type DvrHostEntry, type DvrRange, type DvrStreamResponse, parseDvrBody } from './response.js';

/** Per entry: alive, enabled, window, duration, from (NaN: absent; the parser never keeps a NaN), ranges. */
const PER_ENTRY = 6;
const OPTIONAL = ['window', 'duration', 'from'] as const;

export interface PackedDvrStreamResponse {
  /** streamName, unknown keys, issues (path, problem), then each entry's streamName and host. */
  texts: PackedTexts;
  unknownKeys: number;
  issues: number;
  entries: Float64Array;
  /** (from, duration) of every range, entry after entry. */
  ranges: Float64Array;
}

export function packDvrStreamResponse(r: DvrStreamResponse): PackedDvrStreamResponse {
  const w = new TextWriter();
  w.add(r.streamName);
  const counts = writeReport(w, r);
  const entries = new Float64Array(r.entries.length * PER_ENTRY);
  let total = 0;
  for (const e of r.entries) total += e.dvr.ranges.length;
  const ranges = new Float64Array(total * 2);
  let at = 0;
  r.entries.forEach((e, n) => {
    w.add(e.streamName);
    w.add(e.host);
    const o = n * PER_ENTRY;
    entries[o] = e.alive ? 1 : 0;
    entries[o + 1] = e.dvr.enabled ? 1 : 0;
    for (let k = 0; k < OPTIONAL.length; k++) entries[o + 2 + k] = e.dvr[OPTIONAL[k]!] ?? Number.NaN;
    entries[o + 5] = e.dvr.ranges.length;
    for (const range of e.dvr.ranges) {
      ranges[at++] = range.from;
      ranges[at++] = range.duration;
    }
  });
  return {
    texts: w.done(),
    ...counts,
    entries,
    ranges,
  };
}

/** The buffers a postMessage of `p` can hand over instead of copying. */
export function dvrTransferables(p: PackedDvrStreamResponse): ArrayBuffer[] {
  return [p.texts.ends.buffer, p.entries.buffer, p.ranges.buffer] as ArrayBuffer[];
}

/** Unpacks on the event loop, yielding every `sliceMs` (src/offloop/packing.ts). */
export async function unpackDvrStreamResponse(
  p: PackedDvrStreamResponse,
  opts: SliceOptions = {},
): Promise<DvrStreamResponse> {
  const slicer = new Slicer(opts);
  const t = new TextReader(p.texts);
  const streamName = t.string();
  const { unknownKeys, issues } = await readReport(t, p, slicer);
  const count = p.entries.length / PER_ENTRY;
  const entries: DvrHostEntry[] = [];
  let at = 0;
  for (let n = 0; n < count; n++) {
    const o = n * PER_ENTRY;
    const entry: DvrHostEntry = {
      streamName: t.string(),
      host: t.string(),
      alive: p.entries[o] === 1,
      dvr: { enabled: p.entries[o + 1] === 1, ranges: [] },
    };
    for (let k = 0; k < OPTIONAL.length; k++) {
      const v = p.entries[o + 2 + k]!;
      if (!Number.isNaN(v)) entry.dvr[OPTIONAL[k]!] = v;
    }
    const ranges: DvrRange[] = entry.dvr.ranges;
    const end = at + 2 * p.entries[o + 5]!;
    while (at < end) {
      ranges.push({ from: p.ranges[at]!, duration: p.ranges[at + 1]! });
      at += 2;
      if (slicer.due()) await slicer.yieldNow();
    }
    entries.push(entry);
    if (slicer.due()) await slicer.yieldNow();
  }
  return { streamName, entries, issues, unknownKeys };
}

/** `arg`: the stream asked for. */
export const dvrCodec: AnswerCodec<string | undefined, DvrStreamResponse, PackedDvrStreamResponse> = {
  api: 'dvr-net',
  module: 'dvr/codec.js',
  parse: parseDvrBody,
  pack: (bytes, stream) => packDvrStreamResponse(parseDvrBody(bytes, stream)),
  transferables: dvrTransferables,
  unpack: (p) => unpackDvrStreamResponse(p),
};
