/**
 * Building blocks of the tolerant parsers (src/traffic/parse.ts, src/{dvr,recordings}/response.ts). A bad field becomes a
 * FieldIssue and is dropped; the rest of the body is kept. Only a wrong top level throws (ApiError `malformed`).
 */
import { ApiError, type ApiName } from './errors.js';

export type Json = Record<string, unknown>;

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

  /** A finite number >= 0. */
  nonNegative(v: unknown, path: string): number | undefined {
    const n = this.number(v, path);
    if (n === undefined) return undefined;
    if (n < 0) return this.issue(path, `expected a non-negative number, got ${n}`);
    return n;
  }

  /** A non-negative integer (a count, bytes, seconds). */
  count(v: unknown, path: string): number | undefined {
    const n = this.nonNegative(v, path);
    if (n === undefined) return undefined;
    if (!Number.isInteger(n)) return this.issue(path, `expected an integer, got ${n}`);
    return n;
  }

  /** An integer, any sign. */
  integer(v: unknown, path: string): number | undefined {
    const n = this.number(v, path);
    if (n === undefined) return undefined;
    if (!Number.isInteger(n)) return this.issue(path, `expected an integer, got ${n}`);
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
