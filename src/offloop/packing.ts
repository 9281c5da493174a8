/**
 * How a parsed answer crosses from the parse worker to the event loop: the contract each API's packing follows
 * (AnswerCodec: src/dvr/codec.ts, src/recordings/codec.ts, src/discovery/codec.ts, ./traffic.ts) and the
 * building blocks they share. A structured clone of an answer object by object costs the receiving thread about what parsing it cost (a 10 MB
 * DVR answer: ~300k range objects, 70-130 ms in one piece, on the event loop). Packed, an answer is a few typed
 * arrays (transferred, not copied) and ONE string holding every text value (copied as one block); the event loop
 * then rebuilds the objects in slices of a few milliseconds (Slicer).
 *
 * The texts read back are slices of the one string: V8 may keep it whole while any of them lives. What the exporter
 * keeps of an answer (host names, recording ids) is replaced by the next poll's, so at most the latest answers'
 * strings are held.
 */

import type { ApiName } from '../http/errors.js';
import type { FieldIssue } from '../http/parse.js';

/**
 * One API's answers, off the event loop: `pack` runs in the worker (./worker.ts), parsing the body as `parse`
 * does and packing the result (throwing what `parse` throws); `unpack` rebuilds that result on the event loop, in
 * slices. `parse` is the inline parser, for small bodies and when there is no worker. `arg` is what the parser
 * checks the answer against (traffic: the window asked for; DVR: the stream; recordings: the account).
 */
export interface AnswerCodec<Arg, Answer, Packed> {
  /** For `malformed` errors, and how the worker tells one API's codec from another's in a module. */
  readonly api: ApiName;
  /**
   * Where the worker imports this codec from: the module's path under src/ as built (`dvr/codec.js`), which
   * exports it. The worker names no API; it loads the codec a request names (./worker.ts).
   */
  readonly module: string;
  parse(bytes: Uint8Array, arg: Arg): Answer;
  pack(bytes: Uint8Array, arg: Arg): Packed;
  /** The buffers a postMessage of `p` hands over instead of copying. */
  transferables(p: Packed): ArrayBuffer[];
  unpack(p: Packed): Promise<Answer>;
}

/** Marks in `ends` for a value that is not a string. */
const UNDEFINED = -1;
const NULL = -2;

/** Every text value of one answer, in the order written. */
export interface PackedTexts {
  text: string;
  /** End offset of each value in `text`; UNDEFINED / NULL for those. */
  ends: Int32Array;
}

export class TextWriter {
  private readonly parts: string[] = [];
  private readonly ends: number[] = [];
  private length = 0;

  add(v: string | null | undefined): void {
    if (v === undefined) this.ends.push(UNDEFINED);
    else if (v === null) this.ends.push(NULL);
    else {
      this.parts.push(v);
      this.length += v.length;
      this.ends.push(this.length);
    }
  }

  done(): PackedTexts {
    return { text: this.parts.join(''), ends: Int32Array.from(this.ends) };
  }
}

export class TextReader {
  private at = 0;
  private i = 0;

  constructor(private readonly p: PackedTexts) {}

  next(): string | null | undefined {
    const end = this.p.ends[this.i++];
    if (end === undefined) throw new RangeError('packed answer: fewer texts than read');
    if (end === UNDEFINED) return undefined;
    if (end === NULL) return null;
    const s = this.p.text.slice(this.at, end);
    this.at = end;
    return s;
  }

  /** The next value, which was written as a string. */
  string(): string {
    const s = this.next();
    if (typeof s !== 'string') throw new RangeError('packed answer: a string expected');
    return s;
  }
}

export interface SliceOptions {
  /** Work between two yields, ms (default 8). */
  sliceMs?: number;
  /** Default: setImmediate. */
  yieldToLoop?: () => Promise<void>;
  /** Monotonic ms (default performance.now). */
  now?: () => number;
}

/** Steps between two looks at the time. */
const CHECK_EVERY = 256;

/**
 * Cuts a long loop into slices: `step()` after each piece of work resolves at once, except every `sliceMs`, when it
 * yields to the event loop first (timers, sockets and scrapes run in between).
 */
export class Slicer {
  private readonly sliceMs: number;
  private readonly yieldToLoop: () => Promise<void>;
  private readonly now: () => number;
  private until: number;
  private steps = 0;
  /** Yields so far. */
  yields = 0;

  constructor(opts: SliceOptions = {}) {
    this.sliceMs = opts.sliceMs ?? 8;
    this.yieldToLoop = opts.yieldToLoop ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
    this.now = opts.now ?? (() => performance.now());
    this.until = this.now() + this.sliceMs;
  }

  /** True when the caller should await yieldNow() before going on. */
  due(weight = 1): boolean {
    this.steps += weight;
    if (this.steps < CHECK_EVERY) return false;
    this.steps = 0;
    return this.now() >= this.until;
  }

  async yieldNow(): Promise<void> {
    this.yields++;
    await this.yieldToLoop();
    this.until = this.now() + this.sliceMs;
  }
}

/** What every tolerant parser reports beside its records: unknown keys and field issues. */
export interface ParseReportLists {
  unknownKeys: string[];
  issues: FieldIssue[];
}

/** Writes an answer's unknown keys, then its issues (path, problem); the counts go in the packed answer. */
export function writeReport(w: TextWriter, r: ParseReportLists): { unknownKeys: number; issues: number } {
  for (const k of r.unknownKeys) w.add(k);
  for (const i of r.issues) {
    w.add(i.path);
    w.add(i.problem);
  }
  return { unknownKeys: r.unknownKeys.length, issues: r.issues.length };
}

/** Reads back what writeReport wrote, yielding to the event loop when the slicer says so. */
export async function readReport(
  t: TextReader,
  counts: { unknownKeys: number; issues: number },
  slicer: Slicer,
): Promise<ParseReportLists> {
  const unknownKeys: string[] = [];
  for (let i = 0; i < counts.unknownKeys; i++) unknownKeys.push(t.string());
  const issues: FieldIssue[] = [];
  for (let i = 0; i < counts.issues; i++) {
    issues.push({ path: t.string(), problem: t.string() });
    if (slicer.due()) await slicer.yieldNow();
  }
  return { unknownKeys, issues };
}
