/**
 * The tolerant parser of the traffic metrics API's answers (docs/upstream-api.md): raw JSON in, the records of
 * ./response.ts out. parseMetricsResponse reads parsed JSON; parseTrafficBody reads the bytes off the wire.
 */
import { SIZE_RANGES, type Side, type SizeRange } from '../api/vocabulary.js';
import {
  describeValue,
  isRecord,
  MAX_BANDWIDTH_BITS_PER_SECOND,
  MAX_MEASURE,
  ParseReport,
  parseJsonBody,
  parseUtc,
  withDataArray,
} from '../http/parse.js';
import { checkEcho } from './echo.js';
import { KeyedBuilder, NO_KEYS } from './keyed.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from './response.js';

/** Keys of a `/resources` data element that are not metrics. */
const RESOURCE_KEYS = { resource: 'resource', resource_name: 'resourceName', cname: 'cname' } as const;
const TOP_KEYS = new Set(['start', 'end', 'account', 'metrics', 'data']);
const RANGE_BY_LOWER = new Map<string, SizeRange>(SIZE_RANGES.map((r) => [r.toLowerCase(), r]));
const RANGE_EXACT = new Map<string, SizeRange>(SIZE_RANGES.map((r) => [r, r]));

function emptySide(): SideRecord {
  return { codes: NO_KEYS, classes: NO_KEYS, requestTimeSeconds: NO_KEYS };
}

export interface ParseMetricsOptions {
  /** The account asked for: used when the body does not echo it; an answer echoing another is refused. */
  account?: string;
  /** The window asked for (epoch ms): an answer echoing another start or end is refused (./echo.ts). */
  start?: number;
  end?: number;
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
  const { out, report } = readHead(raw, opts);
  const data = (raw as { data: unknown[] }).data;
  const elements = new ElementReader(report, opts.breakdown);
  for (let i = 0; i < data.length; i++) {
    const record = elements.read(data[i], i);
    if (record) out.records.push(record);
  }
  out.unknownKeys = report.unknownKeys;
  return out;
}

/**
 * What parseMetricsResponse does before it reads `data`: the top level's checks, fields and unknown keys. `raw`'s
 * `data` must be an array; its elements are not looked at. The response's records are left empty, and its
 * unknownKeys are the report's once the elements are read.
 */
export function readHead(
  body: unknown,
  opts: ParseMetricsOptions,
): { out: TrafficResponse; report: ParseReport } {
  const raw = withDataArray('metrics', body);
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
  checkEcho(opts, { account: raw.account, start: out.start, end: out.end });
  if (raw.metrics !== undefined) {
    if (!Array.isArray(raw.metrics))
      report.issue('metrics', `expected an array, got ${describeValue(raw.metrics)}`);
    else
      raw.metrics.forEach((m, i) => {
        const name = report.string(m, `metrics[${i}]`);
        if (name !== undefined) out.metrics.push(name);
      });
  }
  return { out, report };
}

/** Reads the elements of one answer's `data`, in order: each call gets the next element and its index. */
export class ElementReader {
  private readonly layout: Layout = { keys: [], meanings: [], edge: sideBuilders(), origin: sideBuilders() };

  constructor(
    private readonly report: ParseReport,
    private readonly breakdown: ParseMetricsOptions['breakdown'],
  ) {}

  read(element: unknown, index: number): TrafficRecord | undefined {
    return parseElement(element, index, this.report, this.breakdown, this.layout);
  }
}

/**
 * A 2xx body as it came off the wire -> TrafficResponse: UTF-8, JSON, then parseMetricsResponse. Not JSON is an
 * ApiError `malformed` (its detail quotes the JSON error, which may hold a piece of the body: the HTTP client
 * scrubs the token from it). Runs inline or in the parse worker (src/offloop/).
 */
export function parseTrafficBody(bytes: Uint8Array, opts: ParseMetricsOptions): TrafficResponse {
  return parseMetricsResponse(parseJsonBody('metrics', bytes), opts);
}

/**
 * What a data element's key means. Elements repeat the same few dozen keys, so each distinct key is classified
 * once (a bounded cache: a body full of made-up keys only costs the classification again).
 */
type KeyMeaning =
  | { kind: 'label'; field: 'resource' | 'resourceName' | 'cname' }
  | { kind: 'code' | 'class'; side: Side; suffix: string }
  | { kind: 'requests' | 'bandwidth' | 'requestTime' | 'hitBytes' | 'hitRatio'; side: Side }
  | { kind: 'flatTime'; side: Side; range: SizeRange }
  | { kind: 'unknown' };

const MEANING_CACHE_MAX = 4096;
const meanings = new Map<string, KeyMeaning>();

function meaningOf(key: string): KeyMeaning {
  let m = meanings.get(key);
  if (m === undefined) {
    m = classifyKey(key);
    if (meanings.size < MEANING_CACHE_MAX) meanings.set(key, m);
  }
  return m;
}

function classifyKey(key: string): KeyMeaning {
  if (Object.hasOwn(RESOURCE_KEYS, key)) {
    return { kind: 'label', field: RESOURCE_KEYS[key as keyof typeof RESOURCE_KEYS] };
  }
  const side: Side | undefined = key.startsWith('edge_')
    ? 'edge'
    : key.startsWith('origin_')
      ? 'origin'
      : undefined;
  if (!side) return { kind: 'unknown' };
  const name = key.slice(side.length + 1);
  const status = /^status_(.+)$/.exec(name);
  if (status) {
    const suffix = status[1]!.toLowerCase();
    if (/^[1-5]\d\d$/.test(suffix)) return { kind: 'code', side, suffix };
    if (/^[1-5]xx$/.test(suffix)) return { kind: 'class', side, suffix };
    return { kind: 'unknown' };
  }
  switch (name) {
    case 'requests_total':
      return { kind: 'requests', side };
    case 'bandwidth':
      return { kind: 'bandwidth', side };
    case 'request_time':
      return { kind: 'requestTime', side };
  }
  if (side === 'edge' && name === 'hit_bytes') return { kind: 'hitBytes', side };
  if (side === 'edge' && name === 'hit_ratio') return { kind: 'hitRatio', side };
  const flat = /^request_time_(.+)$/.exec(name);
  if (flat) {
    const range = rangeOf(flat[1]!);
    if (range) return { kind: 'flatTime', side, range };
  }
  return { kind: 'unknown' };
}

/** The keyed fields of one side, built record after record (see ./keyed.ts). */
interface SideBuilders {
  codes: KeyedBuilder;
  classes: KeyedBuilder;
  times: KeyedBuilder;
}

function sideBuilders(): SideBuilders {
  return { codes: new KeyedBuilder(), classes: new KeyedBuilder(), times: new KeyedBuilder() };
}

/** What the previous elements of the answer being parsed looked like: key order, and keyed fields. */
interface Layout {
  keys: string[];
  meanings: KeyMeaning[];
  edge: SideBuilders;
  origin: SideBuilders;
}

function rangeOf(key: string): SizeRange | undefined {
  return RANGE_EXACT.get(key) ?? RANGE_BY_LOWER.get(key.toLowerCase());
}

// Fast checks for the common case; anything else goes to ParseReport, which words the issue. The ceilings are
// ParseReport's (src/http/parse.ts): a count is a safe integer, a measure at most MAX_MEASURE.
function isCount(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && Number.isSafeInteger(v);
}

function isNonNegative(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && v <= MAX_MEASURE;
}

function isBandwidth(v: unknown): v is number {
  return typeof v === 'number' && v >= 0 && v <= MAX_BANDWIDTH_BITS_PER_SECOND;
}

function parseElement(
  element: unknown,
  index: number,
  report: ParseReport,
  breakdown: ParseMetricsOptions['breakdown'],
  layout: Layout,
): TrafficRecord | undefined {
  if (!isRecord(element)) {
    return report.issue(`data[${index}]`, `expected an object, got ${describeValue(element)}`);
  }
  const record: TrafficRecord = { edge: emptySide(), origin: emptySide() };
  const at = (key: string) => `data[${index}].${key}`;
  const { edge, origin } = layout;
  for (const b of [edge, origin]) {
    b.codes.start();
    b.classes.start();
    b.times.start();
  }
  let j = 0;
  for (const key in element) {
    const value = element[key];
    // Elements of one answer list their keys in the same order: the previous element's meanings, position by
    // position, are a pointer comparison away (JSON.parse interns keys).
    let m: KeyMeaning;
    if (layout.keys[j] === key) m = layout.meanings[j]!;
    else {
      m = meaningOf(key);
      layout.keys[j] = key;
      layout.meanings[j] = m;
    }
    j++;
    switch (m.kind) {
      case 'label': {
        const text = typeof value === 'string' ? value : report.string(value, at(key));
        if (text !== undefined) record[m.field] = text;
        break;
      }
      case 'code': {
        const n = isCount(value) ? value : report.count(value, at(key));
        if (n !== undefined) (m.side === 'edge' ? edge : origin).codes.add(m.suffix, n);
        break;
      }
      case 'class': {
        const n = isCount(value) ? value : report.count(value, at(key));
        if (n !== undefined) (m.side === 'edge' ? edge : origin).classes.add(m.suffix, n);
        break;
      }
      case 'requests': {
        const side = record[m.side];
        side.requests = (isCount(value) ? value : report.count(value, at(key))) ?? side.requests;
        break;
      }
      case 'bandwidth': {
        const side = record[m.side];
        side.bandwidthBitsPerSecond =
          (isBandwidth(value) ? value : report.nonNegative(value, at(key), MAX_BANDWIDTH_BITS_PER_SECOND)) ??
          side.bandwidthBitsPerSecond;
        break;
      }
      case 'requestTime':
        parseRequestTime(m.side === 'edge' ? edge.times : origin.times, value, index, key, report);
        break;
      case 'hitBytes': {
        const side = record.edge;
        side.hitBytes = (isCount(value) ? value : report.count(value, at(key))) ?? side.hitBytes;
        break;
      }
      case 'hitRatio': {
        const n = isNonNegative(value) ? value : report.nonNegative(value, at(key));
        if (n !== undefined && n > 1) report.issue(at(key), `expected a ratio 0..1, got ${n}`);
        else if (n !== undefined) record.edge.hitRatio = n;
        break;
      }
      case 'flatTime': {
        const n = isNonNegative(value) ? value : report.nonNegative(value, at(key));
        if (n !== undefined) (m.side === 'edge' ? edge : origin).times.add(m.range, n);
        break;
      }
      default:
        report.unknownKey(`data[].${key}`);
    }
  }
  if (breakdown === 'resource' && (record.resource === undefined || record.resource === '')) {
    return report.issue(`data[${index}].resource`, 'missing resource id; element dropped');
  }
  for (const [side, b] of [
    [record.edge, edge],
    [record.origin, origin],
  ] as const) {
    side.codes = b.codes.finish();
    side.classes = b.classes.finish();
    side.requestTimeSeconds = b.times.finish();
  }
  return record;
}

function parseRequestTime(
  times: KeyedBuilder,
  value: unknown,
  index: number,
  key: string,
  report: ParseReport,
): void {
  if (typeof value === 'number') {
    const n = isNonNegative(value) ? value : report.nonNegative(value, `data[${index}].${key}`);
    if (n !== undefined) times.add('all', n);
    return;
  }
  if (!isRecord(value)) {
    report.issue(
      `data[${index}].${key}`,
      `expected a number or an object keyed by size range, got ${describeValue(value)}`,
    );
    return;
  }
  for (const k in value) {
    const range = rangeOf(k);
    if (!range) {
      report.issue(`data[${index}].${key}.${k}`, `unknown size range ${JSON.stringify(k)}`);
      continue;
    }
    const v = value[k];
    const n = isNonNegative(v) ? v : report.nonNegative(v, `data[${index}].${key}.${k}`);
    if (n !== undefined) times.add(range, n);
  }
}
