/**
 * Traffic metrics API (../shared/api/metrics.md): typed records and the tolerant parser of its answers.
 * The parser (parseMetricsResponse) is added by the API-client work; the record types below are the contract
 * the collector builds on.
 */

/** The eight response-size ranges of the *_request_time metrics, as the API names them. */
export const SIZE_RANGES = ['0_250k', '250k_500k', '500k_750k', '750k_1m', '1m_2m', '2m_3m', '3m_4m', '4M+'] as const;
export type SizeRange = (typeof SIZE_RANGES)[number];

/** Status suffixes of `edge_status_<suffix>` / `origin_status_<suffix>`, as documented. */
export const STATUS_CODES = [
  '200', '204', '206', '301', '302', '304', '400', '401', '403', '404', '416', '429',
  '500', '501', '502', '503', '504', '505',
] as const;
export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;

export type Side = 'edge' | 'origin';

/**
 * One side (edge or origin) of one data element. Every field is optional: the API returns only the metrics asked
 * for, and which it returns when none is asked for is not shown.
 */
export interface SideRecord {
  /** Exact status code (e.g. "200") to count of requests in the window. */
  codes: Map<string, number>;
  /** Status class ("2xx".."5xx") to count; a separate family, never summed with `codes`. */
  classes: Map<string, number>;
  requests?: number;
  /** Average bandwidth over the window, bits per second. */
  bandwidthBitsPerSecond?: number;
  /** Median request time in seconds per size range; a plain number is keyed "all". */
  requestTimeSeconds: Map<string, number>;
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

/** One problem found in a body; the rest of the body is kept. */
export interface FieldIssue {
  /** JSON path of the field, e.g. `data[3].edge_status_200`. */
  path: string;
  problem: string;
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
