/**
 * The traffic metrics API's answers as the exporter uses them (docs/upstream-api.md): the record types the
 * collector builds on. The parser that produces them is ./parse.ts; the API's names are in src/api/vocabulary.ts.
 */
import type { FieldIssue } from '../http/parse.js';

/**
 * One side (edge or origin) of one data element. Every field is optional: the API returns only the metrics asked
 * for, and which it returns when none is asked for is not shown.
 */
export interface SideRecord {
  /** Exact status code (e.g. "200") to count of requests in the window. */
  codes: ReadonlyMap<string, number>;
  /** Status class ("2xx".."5xx") to count; a separate family, never summed with `codes`. */
  classes: ReadonlyMap<string, number>;
  requests?: number;
  /** Average bandwidth over the window, bits per second. */
  bandwidthBitsPerSecond?: number;
  /** Median request time in seconds per size range; a plain number is keyed "all". */
  requestTimeSeconds: ReadonlyMap<string, number>;
  /** Edge only. */
  hitBytes?: number;
  /** Edge only, 0..1. */
  hitRatio?: number;
}

export interface TrafficRecord {
  /** Absent on the aggregated endpoint (`/`). */
  resource?: string;
  resourceName?: string;
  cname?: string;
  edge: SideRecord;
  origin: SideRecord;
}

export interface TrafficResponse {
  account: string;
  /** Window bounds as epoch milliseconds, parsed from the echoed `start`/`end` when present. */
  start?: number;
  end?: number;
  metrics: string[];
  records: TrafficRecord[];
  /** Bad values (reported per field; the field is dropped, the rest kept). */
  issues: FieldIssue[];
  /** Keys the documents do not name: ignored, counted. */
  unknownKeys: string[];
}
