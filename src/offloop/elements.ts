/**
 * Reading a traffic answer's bytes element by element, for the parse worker (./worker.ts, through
 * parseTrafficBodyPacked in ./traffic.ts). JSON.parse of a 22 MB body (15k resources) builds the whole object
 * tree at once, and the worker's heap grows to hold it (about 150 MB); here a byte scan finds where each top-level member and each `data` element starts and ends, and only
 * one element at a time is decoded, parsed (JSON.parse of its bytes) and packed (./traffic.ts), so the live heap
 * is about one record.
 *
 * The result is the one parseTrafficBody (src/traffic/parse.ts) gives, issues and unknown keys included. The
 * scan takes only the plain shape: a top-level object with exactly one `data` member, an array; between the
 * pieces it hands to JSON.parse, only JSON's own whitespace, commas, colons and brackets. A body that is valid JSON of that shape
 * parses piece by piece to what it parses to whole (each piece is a JSON value, and so is the whole). Anything
 * else (not JSON, a byte order mark, `data` twice, an error of the top level) goes to parseTrafficBody, which says
 * what it says today: those bodies are rare, and exact wording matters more than their memory.
 */
import type { Json } from '../http/parse.js';
import { ElementReader, type ParseMetricsOptions, readHead } from '../traffic/parse.js';
import type { TrafficRecord, TrafficResponse } from '../traffic/response.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** JSON's whitespace (space, tab, line feed, carriage return), and nothing else. */
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && isSpace(b[i]!)) i++;
  return i;
}

/** `b[i]` is a quote: the index after the string's closing quote, or -1 when it does not close. */
function endOfString(b: Uint8Array, i: number): number {
  let at = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, at);
    if (q < 0) return -1;
    let slashes = 0;
    while (b[q - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q + 1;
    at = q + 1;
  }
}

/**
 * The index after the value starting at `b[i]`, or -1. Brackets are matched by depth alone and a number or word
 * runs to the next delimiter: whether the piece is valid JSON is JSON.parse's to say.
 */
function endOfValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return endOfString(b, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    let at = i;
    while (at < b.length) {
      const d = b[at]!;
      if (d === QUOTE) {
        at = endOfString(b, at);
        if (at < 0) return -1;
        continue;
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return at + 1;
      }
      at++;
    }
    return -1;
  }
  let at = i;
  while (at < b.length) {
    const d = b[at]!;
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
    at++;
  }
  return at === i ? -1 : at;
}

/** Where a body's pieces are: each top-level member's key and value, and each element of `data`. */
export interface BodyPieces {
  members: Array<{ key: string; from: number; to: number }>;
  /** Element e of `data` is bytes [elements[2e], elements[2e+1]). */
  elements: Int32Array;
  count: number;
}

const utf8 = new TextDecoder();

function parsePiece(b: Uint8Array, from: number, to: number): unknown {
  return JSON.parse(utf8.decode(b.subarray(from, to)));
}

/**
 * The pieces of a body of the plain shape (see above), or undefined. The pieces themselves are not checked
 * (but for member keys): their JSON.parse does that.
 */
export function scanBody(b: Uint8Array): BodyPieces | undefined {
  const members: BodyPieces['members'] = [];
  let data: { elements: Int32Array; count: number } | undefined;
  // Offsets are kept in an Int32Array (and V8 cannot make a string of the whole body that long anyway).
  if (b.length > 0x7fff_ffff) return undefined;
  let i = skipSpace(b, 0);
  if (b[i] !== OPEN_BRACE) return undefined;
  i = skipSpace(b, i + 1);
  if (b[i] === CLOSE_BRACE) return undefined; // no data: parseTrafficBody words it
  for (;;) {
    if (b[i] !== QUOTE) return undefined;
    const keyEnd = endOfString(b, i);
    if (keyEnd < 0) return undefined;
    let key: unknown;
    try {
      key = parsePiece(b, i, keyEnd);
    } catch {
      return undefined;
    }
    if (typeof key !== 'string') return undefined;
    i = skipSpace(b, keyEnd);
    if (b[i] !== COLON) return undefined;
    i = skipSpace(b, i + 1);
    let end: number;
    if (key === 'data') {
      // `data` twice: the first must be valid JSON too, and is not read here.
      if (data || b[i] !== OPEN_BRACKET) return undefined;
      const array = scanArray(b, i);
      if (!array) return undefined;
      data = array;
      end = array.end;
    } else end = endOfValue(b, i);
    if (end < 0) return undefined;
    members.push({ key, from: i, to: end });
    i = skipSpace(b, end);
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1);
      continue;
    }
    if (b[i] !== CLOSE_BRACE) return undefined;
    break;
  }
  if (skipSpace(b, i + 1) !== b.length || !data) return undefined;
  return { members, elements: data.elements, count: data.count };
}

/** `b[i]` is `[`: where its elements are, and the index after its `]`. */
function scanArray(
  b: Uint8Array,
  i: number,
): { elements: Int32Array; count: number; end: number } | undefined {
  let elements = new Int32Array(1024);
  let count = 0;
  let j = skipSpace(b, i + 1);
  if (b[j] === CLOSE_BRACKET) return { elements, count, end: j + 1 };
  for (;;) {
    const end = endOfValue(b, j);
    if (end < 0) return undefined;
    if (2 * count + 2 > elements.length) {
      const more = new Int32Array(elements.length * 2);
      more.set(elements);
      elements = more;
    }
    elements[2 * count] = j;
    elements[2 * count + 1] = end;
    count++;
    j = skipSpace(b, end);
    if (b[j] === COMMA) {
      j = skipSpace(b, j + 1);
      continue;
    }
    if (b[j] !== CLOSE_BRACKET) return undefined;
    return { elements, count, end: j + 1 };
  }
}

/** Takes the records of an answer, one at a time. */
export interface RecordSink {
  /** Called once before the first add: how many elements `data` has (records: at most that). */
  reserve(elements: number): void;
  add(record: TrafficRecord): void;
}

/**
 * Parses a body of the plain shape piece by piece, handing each record to `sink`: the response without its
 * records, or undefined when the body is not of that shape or a piece is not JSON (the sink may then have had
 * some records: drop them). Throws what parseMetricsResponse throws of the top level.
 */
export function parseTrafficElements(
  bytes: Uint8Array,
  opts: ParseMetricsOptions,
  sink: RecordSink,
): TrafficResponse | undefined {
  const pieces = scanBody(bytes);
  if (!pieces) return undefined;
  // The top level as JSON.parse would build it (key order, the last of a repeated key), `data` left empty.
  const raw: Json = {};
  for (const m of pieces.members) {
    let value: unknown;
    if (m.key === 'data') value = [];
    else {
      try {
        value = parsePiece(bytes, m.from, m.to);
      } catch {
        return undefined;
      }
    }
    // Not `raw[key] = value`: a member named __proto__ is a member, as JSON.parse makes it.
    Object.defineProperty(raw, m.key, { value, writable: true, enumerable: true, configurable: true });
  }
  const { out, report } = readHead(raw, opts);
  const reader = new ElementReader(report, opts.breakdown);
  sink.reserve(pieces.count);
  const at = pieces.elements;
  for (let i = 0; i < pieces.count; i++) {
    let element: unknown;
    try {
      element = parsePiece(bytes, at[2 * i]!, at[2 * i + 1]!);
    } catch {
      return undefined;
    }
    const record = reader.read(element, i);
    if (record) sink.add(record);
  }
  out.unknownKeys = report.unknownKeys;
  return out;
}
