/**
 * A RecordingListResponse packed to cross from the parse worker (src/offloop/worker.ts) to the event loop (see
 * src/offloop/packing.ts for why): per setting and per record a few numbers, every text in one string. Unpacked, it is the
 * object the parser made, key for key and in the same key order, a key the parser set to undefined (a bad value)
 * included (a test compares them strictly).
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
import {
  parseRecordingsBody,
  RECORDING_STATUSES,
  type RecordingInstance,
  type RecordingListResponse,
  type RecordingSetting,
  type RecordingStatus,
} from './response.js';

const STRINGS = [
  'resourceId',
  'accountName',
  'sourceDomain',
  'sourcePath',
  'streamType',
  'launchType',
] as const;
const NUMBERS = ['stopTimeout', 'dvrWindow', 'storageTime'] as const;
const BOOLEANS = ['dvrEnabled', 'smil', 'active'] as const;
/** Presence bits of a setting's optional keys, in the order the parser sets them. */
const OPTIONAL = [...STRINGS, ...NUMBERS, ...BOOLEANS, 'status'] as const;
/** Per setting: presence mask, the 3 numbers, the 3 booleans, status, records, qualities (-1: null). */
const PER_SETTING = 10;
const S_NUMBERS = 1;
const S_BOOLEANS = 4;
const S_STATUS = 7;
const S_RECORDS = 8;
const S_QUALITIES = 9;
/** Per record: presence mask (start, stop, initPath, status), start, stop, status. */
const PER_RECORD = 4;
const RECORD_KEYS = ['start', 'stop', 'initPath', 'status'] as const;

export interface PackedRecordingList {
  /** Unknown keys, issues (path, problem), then per setting its id, strings, path, qualities and records' paths. */
  texts: PackedTexts;
  unknownKeys: number;
  issues: number;
  settings: Float64Array;
  records: Float64Array;
}

/** A present value as a number: NaN for undefined (the parser never keeps a NaN). */
function num(v: number | boolean | undefined): number {
  if (v === undefined) return Number.NaN;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function statusIndex(s: RecordingStatus | undefined): number {
  return s === undefined ? Number.NaN : RECORDING_STATUSES.indexOf(s);
}

export function packRecordingList(r: RecordingListResponse): PackedRecordingList {
  const w = new TextWriter();
  const counts = writeReport(w, r);
  const settings = new Float64Array(r.settings.length * PER_SETTING);
  let total = 0;
  for (const s of r.settings) total += s.records.length;
  const records = new Float64Array(total * PER_RECORD);
  let ri = 0;
  r.settings.forEach((s, n) => {
    const o = n * PER_SETTING;
    let mask = 0;
    OPTIONAL.forEach((key, bit) => {
      if (key in s) mask |= 1 << bit;
    });
    settings[o] = mask;
    NUMBERS.forEach((key, k) => {
      settings[o + S_NUMBERS + k] = num(s[key]);
    });
    BOOLEANS.forEach((key, k) => {
      settings[o + S_BOOLEANS + k] = num(s[key]);
    });
    settings[o + S_STATUS] = statusIndex(s.status);
    settings[o + S_RECORDS] = s.records.length;
    w.add(s.id);
    for (const key of STRINGS) if (key in s) w.add(s[key]);
    w.add(s.path);
    if (s.qualities === null) settings[o + S_QUALITIES] = -1;
    else {
      const pairs = Object.entries(s.qualities);
      settings[o + S_QUALITIES] = pairs.length;
      for (const [url, name] of pairs) {
        w.add(url);
        w.add(name);
      }
    }
    for (const rec of s.records) {
      let m = 0;
      RECORD_KEYS.forEach((key, bit) => {
        if (key in rec) m |= 1 << bit;
      });
      records[ri] = m;
      records[ri + 1] = num(rec.start);
      records[ri + 2] = num(rec.stop);
      records[ri + 3] = statusIndex(rec.status);
      ri += PER_RECORD;
      if ('initPath' in rec) w.add(rec.initPath);
    }
  });
  return {
    texts: w.done(),
    ...counts,
    settings,
    records,
  };
}

/** The buffers a postMessage of `p` can hand over instead of copying. */
export function recordingsTransferables(p: PackedRecordingList): ArrayBuffer[] {
  return [p.texts.ends.buffer, p.settings.buffer, p.records.buffer] as ArrayBuffer[];
}

function present(v: number): number | undefined {
  return Number.isNaN(v) ? undefined : v;
}

function bool(v: number): boolean | undefined {
  return Number.isNaN(v) ? undefined : v === 1;
}

function status(v: number): RecordingStatus | undefined {
  return Number.isNaN(v) ? undefined : RECORDING_STATUSES[v];
}

/** Unpacks on the event loop, yielding every `sliceMs` (src/offloop/packing.ts). */
export async function unpackRecordingList(
  p: PackedRecordingList,
  opts: SliceOptions = {},
): Promise<RecordingListResponse> {
  const slicer = new Slicer(opts);
  const t = new TextReader(p.texts);
  const { unknownKeys, issues } = await readReport(t, p, slicer);
  const count = p.settings.length / PER_SETTING;
  const settings: RecordingSetting[] = [];
  let ri = 0;
  for (let n = 0; n < count; n++) {
    const o = n * PER_SETTING;
    const mask = p.settings[o]!;
    const has = (key: (typeof OPTIONAL)[number]) => (mask & (1 << OPTIONAL.indexOf(key))) !== 0;
    const s: RecordingSetting = { id: t.string(), qualities: null, records: [], path: null };
    for (const key of STRINGS) if (has(key)) s[key] = t.next() ?? undefined;
    NUMBERS.forEach((key, k) => {
      if (has(key)) s[key] = present(p.settings[o + S_NUMBERS + k]!);
    });
    BOOLEANS.forEach((key, k) => {
      if (has(key)) s[key] = bool(p.settings[o + S_BOOLEANS + k]!);
    });
    if (has('status')) s.status = status(p.settings[o + S_STATUS]!);
    s.path = t.next() ?? null;
    const qualities = p.settings[o + S_QUALITIES]!;
    if (qualities >= 0) {
      const q: Record<string, string> = {};
      for (let i = 0; i < qualities; i++) {
        const url = t.string();
        q[url] = t.string();
      }
      s.qualities = q;
    }
    const end = ri + PER_RECORD * p.settings[o + S_RECORDS]!;
    while (ri < end) {
      const m = p.records[ri]!;
      const rec: RecordingInstance = {};
      if (m & 1) rec.start = p.records[ri + 1]!;
      if (m & 2) rec.stop = p.records[ri + 2]!;
      if (m & 4) rec.initPath = t.next() ?? undefined;
      if (m & 8) rec.status = status(p.records[ri + 3]!);
      s.records.push(rec);
      ri += PER_RECORD;
      if (slicer.due()) await slicer.yieldNow();
    }
    settings.push(s);
    if (slicer.due()) await slicer.yieldNow();
  }
  return { settings, issues, unknownKeys };
}

/** `arg`: the account asked for. */
export const recordingsCodec: AnswerCodec<string | undefined, RecordingListResponse, PackedRecordingList> = {
  api: 'recorder-cloud',
  module: 'recordings/codec.js',
  parse: parseRecordingsBody,
  pack: (bytes, account) => packRecordingList(parseRecordingsBody(bytes, account)),
  transferables: recordingsTransferables,
  unpack: (p) => unpackRecordingList(p),
};
