/**
 * Building blocks of the tolerant parsers (src/traffic/parse.ts, src/{dvr,recordings}/response.ts). A bad field becomes a
 * FieldIssue and is dropped; the rest of the body is kept. Only a wrong top level throws (ApiError `malformed`).
 */
import { ApiError, type ApiName } from './errors.js';

export type Json = Record<string, unknown>;

/**
 * Ceilings of the values the parsers accept; a value beyond one is an issue of its field, like any bad value.
 * - A count (status codes, requests, bytes, seconds) is a safe integer, at most 2^53-1: above it JSON numbers are
 *   rounded (2^53+1 reads as 2^53), so the API's number is no longer the one we would count.
 * - Any other measure (a request time) is at most 2^53-1 too: far beyond anything real, and it keeps every sum
 *   and product finite (1.7e308 would make a counter +Inf for good).
 * - A bandwidth is at most 1e14 bit/s (100 Tbit/s): times a window of at most 600 s, over 8, it stays a safe
 *   integer of bytes. A single resource or account serving more is not plausible.
 * - A UTC timestamp in seconds is at most 253402300799 (9999-12-31T23:59:59Z).
 */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER;
export const MAX_MEASURE = Number.MAX_SAFE_INTEGER;
export const MAX_BANDWIDTH_BITS_PER_SECOND = 1e14;
export const MAX_TIMESTAMP_SECONDS = 253_402_300_799;

/** One problem found in a body; the rest of the body is kept. */
export interface FieldIssue {
  /** JSON path of the field, e.g. `data[3].edge_status_200`. */
  path: string;
  problem: string;
}

export function isRecord(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number') return String(v);
  return `a ${typeof v}`;
}

export function malformed(api: ApiName, detail: string): ApiError {
  return new ApiError({ api, kind: 'malformed', detail });
}

/**
 * `raw` as a top-level object with a `data` array (the traffic and DVR answers), else ApiError `malformed`. An
 * answer without data usually says why in `description`: the error quotes it.
 */
export function withDataArray(api: ApiName, raw: unknown): Json & { data: unknown[] } {
  if (!isRecord(raw)) throw malformed(api, `top level is ${describeValue(raw)}, not an object`);
  if (!Array.isArray(raw.data)) {
    const said = typeof raw.description === 'string' ? ` (description: ${raw.description})` : '';
    throw malformed(api, `no data array${said}`);
  }
  return raw as Json & { data: unknown[] };
}

const utf8 = new TextDecoder();

/**
 * A 2xx body as it came off the wire -> its JSON value, as the HTTP client reads one (./request.ts): UTF-8, an
 * empty or blank body is undefined, a body that is not JSON is `malformed` with the JSON error in its detail (the
 * HTTP client scrubs the token from it). For parsers that run inline or in a worker thread (src/offloop/).
 */
export function parseJsonBody(api: ApiName, bytes: Uint8Array): unknown {
  const text = utf8.decode(bytes);
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw malformed(api, `body is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** Collects issues and unknown keys of one body. Unknown keys are listed once per place (`data[].foo`). */
export class ParseReport {
  readonly issues: FieldIssue[] = [];
  private readonly unknown = new Set<string>();

  issue(path: string, problem: string): undefined {
    this.issues.push({ path, problem });
    return undefined;
  }

  unknownKey(place: string): void {
    this.unknown.add(place);
  }

  get unknownKeys(): string[] {
    return [...this.unknown];
  }

  /** A finite number, else an issue. */
  number(v: unknown, path: string): number | undefined {
    if (typeof v !== 'number') return this.issue(path, `expected a number, got ${describeValue(v)}`);
    if (!Number.isFinite(v)) return this.issue(path, `expected a finite number, got ${v}`);
    return v;
  }

  /** A finite number in 0..max (default MAX_MEASURE). */
  nonNegative(v: unknown, path: string, max: number = MAX_MEASURE): number | undefined {
    const n = this.number(v, path);
    if (n === undefined) return undefined;
    if (n < 0) return this.issue(path, `expected a non-negative number, got ${n}`);
    if (n > max) return this.issue(path, `expected at most ${max}, got ${n}`);
    return n;
  }

  /** A non-negative integer (a count, bytes, seconds) of at most `max` (default MAX_COUNT, 2^53-1). */
  count(v: unknown, path: string, max: number = MAX_COUNT): number | undefined {
    const n = this.nonNegative(v, path, Math.max(max, MAX_MEASURE));
    if (n === undefined) return undefined;
    if (!Number.isInteger(n)) return this.issue(path, `expected an integer, got ${n}`);
    if (n > max) return this.issue(path, `expected an integer of at most ${max}, got ${n}`);
    return n;
  }

  /** An integer, any sign, in -max..max (default 2^53-1). */
  integer(v: unknown, path: string, max: number = MAX_COUNT): number | undefined {
    const n = this.number(v, path);
    if (n === undefined) return undefined;
    if (!Number.isInteger(n)) return this.issue(path, `expected an integer, got ${n}`);
    if (Math.abs(n) > max)
      return this.issue(path, `expected an integer of at most ${max} either side of 0, got ${n}`);
    return n;
  }

  string(v: unknown, path: string): string | undefined {
    if (typeof v !== 'string') return this.issue(path, `expected a string, got ${describeValue(v)}`);
    return v;
  }

  boolean(v: unknown, path: string): boolean | undefined {
    if (typeof v !== 'boolean') return this.issue(path, `expected a boolean, got ${describeValue(v)}`);
    return v;
  }
}

/** `YYYY-MM-DDThh:mm[:ss[.fff]][Z]`, read as UTC; undefined when the text is not that or not a real date. */
export function parseUtc(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|\+00:?00)?$/.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac] = m;
  const ms = Date.UTC(
    Number(y),
    Number(mo) - 1,
    Number(d),
    Number(h),
    Number(mi),
    Number(s ?? 0),
    frac ? Math.round(Number(frac) * 1000) : 0,
  );
  const back = new Date(ms);
  // Date.UTC rolls 2026-02-31 over to March; a rolled-over date is not the one the API meant.
  if (back.getUTCMonth() !== Number(mo) - 1 || back.getUTCDate() !== Number(d) || Number(h) > 23) {
    return undefined;
  }
  if (Number(mi) > 59 || Number(s ?? 0) > 59) return undefined;
  return ms;
}
