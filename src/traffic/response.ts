/**
 * Traffic metrics API (../shared/api/metrics.md): typed records and the tolerant parser of its answers.
 * The record types below are the contract the collector builds on; parseMetricsResponse turns raw JSON into them.
 */
import { describeValue, isRecord, malformed, ParseReport, parseUtc } from '../http/parse.js';

/** The eight response-size ranges of the *_request_time metrics, as the API names them. */
export const SIZE_RANGES = [
  '0_250k',
  '250k_500k',
  '500k_750k',
  '750k_1m',
  '1m_2m',
  '2m_3m',
  '3m_4m',
  '4M+',
] as const;
export type SizeRange = (typeof SIZE_RANGES)[number];

/** Status suffixes of `edge_status_<suffix>` / `origin_status_<suffix>`, as documented. */
export const STATUS_CODES = [
  '200',
  '204',
  '206',
  '301',
  '302',
  '304',
  '400',
  '401',
  '403',
  '404',
  '416',
  '429',
  '500',
  '501',
  '502',
  '503',
  '504',
  '505',
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

/** Keys of a `/resources` data element that are not metrics. */
const RESOURCE_KEYS = { resource: 'resource', resource_name: 'resourceName', cname: 'cname' } as const;
const TOP_KEYS = new Set(['start', 'end', 'account', 'metrics', 'data']);
const RANGE_BY_LOWER = new Map<string, SizeRange>(SIZE_RANGES.map((r) => [r.toLowerCase(), r]));

function emptySide(): SideRecord {
  return { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() };
}

export interface ParseMetricsOptions {
  /** The account asked for: used when the body does not echo it. */
  account?: string;
  /** With `resource`, a data element without a usable `resource` id is dropped (it could not be labelled). */
  breakdown?: 'resource' | 'account';
}

/**
 * Parses a metrics API answer (raw JSON). Throws ApiError `malformed` only when the top level is not an object
 * with a `data` array; every other problem is a FieldIssue and drops only that field (or that element).
 *
 * `*_request_time` is accepted in the three forms the document leaves open: a plain number (keyed `all`), an
 * object keyed by size range, and flattened keys (`edge_request_time_0_250k`). `*_status_<code>` goes to `codes`
 * for any three-digit code (documented or not) and to `classes` for `1xx`..`5xx`.
 */
export function parseMetricsResponse(raw: unknown, opts: ParseMetricsOptions = {}): TrafficResponse {
  if (!isRecord(raw)) throw malformed('metrics', `top level is ${describeValue(raw)}, not an object`);
  if (!Array.isArray(raw.data)) {
    const said = typeof raw.description === 'string' ? ` (description: ${raw.description})` : '';
    throw malformed('metrics', `no data array${said}`);
  }
  const report = new ParseReport();
  for (const key of Object.keys(raw)) if (!TOP_KEYS.has(key)) report.unknownKey(key);

  let account = opts.account ?? '';
  if (raw.account !== undefined) account = report.string(raw.account, 'account') ?? account;
  const out: TrafficResponse = {
    account,
    metrics: [],
    records: [],
    issues: report.issues,
    unknownKeys: [],
  };
  for (const key of ['start', 'end'] as const) {
    const v = raw[key];
    if (v === undefined) continue;
    const text = report.string(v, key);
    if (text === undefined) continue;
    const ms = parseUtc(text);
    if (ms === undefined) report.issue(key, `expected YYYY-MM-DDThh:mm:00, got ${describeValue(text)}`);
    else out[key] = ms;
  }
  if (raw.metrics !== undefined) {
    if (!Array.isArray(raw.metrics))
      report.issue('metrics', `expected an array, got ${describeValue(raw.metrics)}`);
    else
      raw.metrics.forEach((m, i) => {
        const name = report.string(m, `metrics[${i}]`);
        if (name !== undefined) out.metrics.push(name);
      });
  }
  raw.data.forEach((element, i) => {
    const record = parseElement(element, `data[${i}]`, report, opts.breakdown);
    if (record) out.records.push(record);
  });
  out.unknownKeys = report.unknownKeys;
  return out;
}

function parseElement(
  element: unknown,
  path: string,
  report: ParseReport,
  breakdown: ParseMetricsOptions['breakdown'],
): TrafficRecord | undefined {
  if (!isRecord(element)) return report.issue(path, `expected an object, got ${describeValue(element)}`);
  const record: TrafficRecord = { edge: emptySide(), origin: emptySide() };
  for (const [key, value] of Object.entries(element)) {
    const at = `${path}.${key}`;
    if (key in RESOURCE_KEYS) {
      const text = report.string(value, at);
      if (text !== undefined) record[RESOURCE_KEYS[key as keyof typeof RESOURCE_KEYS]] = text;
      continue;
    }
    const side: Side | undefined = key.startsWith('edge_')
      ? 'edge'
      : key.startsWith('origin_')
        ? 'origin'
        : undefined;
    if (!side || !parseMetric(record[side], side, key.slice(side.length + 1), value, at, report)) {
      report.unknownKey(`data[].${key}`);
    }
  }
  if (breakdown === 'resource' && (record.resource === undefined || record.resource === '')) {
    return report.issue(`${path}.resource`, 'missing resource id; element dropped');
  }
  return record;
}

/** Applies one metric to its side; false when the name is not a metric the document knows. */
function parseMetric(
  side: SideRecord,
  which: Side,
  name: string,
  value: unknown,
  at: string,
  report: ParseReport,
): boolean {
  const status = /^status_(.+)$/.exec(name);
  if (status) {
    const suffix = status[1]!.toLowerCase();
    const target = /^[1-5]\d\d$/.test(suffix)
      ? side.codes
      : /^[1-5]xx$/.test(suffix)
        ? side.classes
        : undefined;
    if (!target) return false;
    const n = report.count(value, at);
    if (n !== undefined) target.set(suffix, n);
    return true;
  }
  switch (name) {
    case 'requests_total':
      side.requests = report.count(value, at) ?? side.requests;
      return true;
    case 'bandwidth':
      side.bandwidthBitsPerSecond = report.nonNegative(value, at) ?? side.bandwidthBitsPerSecond;
      return true;
    case 'request_time':
      parseRequestTime(side, value, at, report);
      return true;
  }
  if (which === 'edge' && name === 'hit_bytes') {
    side.hitBytes = report.count(value, at) ?? side.hitBytes;
    return true;
  }
  if (which === 'edge' && name === 'hit_ratio') {
    const n = report.nonNegative(value, at);
    if (n !== undefined && n > 1) report.issue(at, `expected a ratio 0..1, got ${n}`);
    else if (n !== undefined) side.hitRatio = n;
    return true;
  }
  const flat = /^request_time_(.+)$/.exec(name);
  if (flat) {
    const range = RANGE_BY_LOWER.get(flat[1]!.toLowerCase());
    if (!range) return false;
    const n = report.nonNegative(value, at);
    if (n !== undefined) side.requestTimeSeconds.set(range, n);
    return true;
  }
  return false;
}

function parseRequestTime(side: SideRecord, value: unknown, at: string, report: ParseReport): void {
  if (typeof value === 'number') {
    const n = report.nonNegative(value, at);
    if (n !== undefined) side.requestTimeSeconds.set('all', n);
    return;
  }
  if (!isRecord(value)) {
    report.issue(at, `expected a number or an object keyed by size range, got ${describeValue(value)}`);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const range = RANGE_BY_LOWER.get(key.toLowerCase());
    if (!range) {
      report.issue(`${at}.${key}`, `unknown size range ${JSON.stringify(key)}`);
      continue;
    }
    const n = report.nonNegative(v, `${at}.${key}`);
    if (n !== undefined) side.requestTimeSeconds.set(range, n);
  }
}
