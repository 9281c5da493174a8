/**
 * Network-DVR API (docs/upstream-api.md): typed records and the tolerant parser of its answers.
 * The document does not show the units of `dvr.window`, `dvr.duration` and `ranges[].duration`: seconds is
 * assumed (the DELETE form speaks in seconds, and timestamps have second precision).
 */
import {
  describeValue,
  type FieldIssue,
  isRecord,
  MAX_TIMESTAMP_SECONDS,
  malformed,
  ParseReport,
  parseJsonBody,
  withDataArray,
} from '../http/parse.js';

export interface DvrRange {
  /** Start, Unix seconds. */
  from: number;
  /** Length, seconds. */
  duration: number;
}

export interface DvrHostEntry {
  streamName: string;
  host: string;
  alive: boolean;
  dvr: {
    enabled: boolean;
    /** DVR depth, seconds (assumed). */
    window?: number;
    /** Recorded total excluding breaks, seconds (assumed). */
    duration?: number;
    /** First recording, Unix seconds. */
    from?: number;
    ranges: DvrRange[];
  };
}

export interface DvrStreamResponse {
  streamName: string;
  entries: DvrHostEntry[];
  issues: FieldIssue[];
  unknownKeys: string[];
}

const TOP_KEYS = new Set(['status', 'stream_name', 'data']);
const ENTRY_KEYS = new Set(['stream_name', 'host', 'is_alive', 'dvr']);
const DVR_KEYS = new Set(['enabled', 'window', 'duration', 'from', 'ranges']);
const RANGE_KEYS = new Set(['from', 'duration']);

/**
 * Parses a GET stream answer. Throws ApiError `malformed` when the top level is not an object with a `data`
 * array. An entry without a usable `host`, `is_alive`, `dvr` object or `dvr.enabled` is dropped with an issue
 * (it could not be labelled or its state would be a guess); any other bad field is an issue and is dropped.
 * A range with a negative duration or a bad `from` is dropped. `fallbackStream` (the stream asked for) names
 * entries that lack `stream_name`; when given, an answer echoing another `stream_name` is `malformed`, and an
 * entry of another stream is an issue and dropped. A host listed twice: the second entry is an issue, dropped.
 */
export function parseDvrStreamResponse(body: unknown, fallbackStream = ''): DvrStreamResponse {
  const raw = withDataArray('dvr-net', body);
  const report = new ParseReport();
  for (const key of Object.keys(raw)) if (!TOP_KEYS.has(key)) report.unknownKey(key);
  let streamName = fallbackStream;
  if (raw.stream_name !== undefined) streamName = report.string(raw.stream_name, 'stream_name') ?? streamName;
  // An answer about another stream than the one asked for must not be shown as this one.
  if (fallbackStream !== '' && streamName !== fallbackStream) {
    throw malformed(
      'dvr-net',
      `the answer echoes stream_name ${JSON.stringify(streamName)}, asked for ${JSON.stringify(fallbackStream)}`,
    );
  }
  const entries: DvrHostEntry[] = [];
  const hosts = new Set<string>();
  raw.data.forEach((e, i) => {
    const entry = parseEntry(e, `data[${i}]`, streamName, report);
    if (!entry) return;
    // One entry per host is documented; a second one would contradict the first.
    if (hosts.has(entry.host)) {
      report.issue(
        `data[${i}].host`,
        `host ${JSON.stringify(entry.host)} listed twice; the second entry dropped`,
      );
      return;
    }
    if (fallbackStream !== '' && entry.streamName !== fallbackStream) {
      report.issue(
        `data[${i}].stream_name`,
        `entry of stream ${JSON.stringify(entry.streamName)}, asked for ${JSON.stringify(fallbackStream)}; dropped`,
      );
      return;
    }
    hosts.add(entry.host);
    entries.push(entry);
  });
  return { streamName, entries, issues: report.issues, unknownKeys: report.unknownKeys };
}

/** A 2xx body as it came off the wire -> parseDvrStreamResponse. Runs inline or in a worker (src/offloop/). */
export function parseDvrBody(bytes: Uint8Array, fallbackStream = ''): DvrStreamResponse {
  return parseDvrStreamResponse(parseJsonBody('dvr-net', bytes), fallbackStream);
}

function parseEntry(
  e: unknown,
  path: string,
  streamName: string,
  report: ParseReport,
): DvrHostEntry | undefined {
  if (!isRecord(e)) return report.issue(path, `expected an object, got ${describeValue(e)}`);
  for (const key of Object.keys(e)) if (!ENTRY_KEYS.has(key)) report.unknownKey(`data[].${key}`);
  const host = report.string(e.host, `${path}.host`);
  const alive = report.boolean(e.is_alive, `${path}.is_alive`);
  if (!isRecord(e.dvr)) {
    return report.issue(`${path}.dvr`, `expected an object, got ${describeValue(e.dvr)}; entry dropped`);
  }
  const dvr = e.dvr;
  const enabled = report.boolean(dvr.enabled, `${path}.dvr.enabled`);
  if (host === undefined || alive === undefined || enabled === undefined) {
    return report.issue(path, 'entry dropped: host, is_alive and dvr.enabled are required');
  }
  for (const key of Object.keys(dvr)) if (!DVR_KEYS.has(key)) report.unknownKey(`data[].dvr.${key}`);
  let name = streamName;
  if (e.stream_name === undefined) report.issue(`${path}.stream_name`, 'missing');
  else name = report.string(e.stream_name, `${path}.stream_name`) ?? streamName;

  const entry: DvrHostEntry = { streamName: name, host, alive, dvr: { enabled, ranges: [] } };
  const optional = (key: 'window' | 'duration' | 'from') => {
    if (dvr[key] === undefined) return;
    const n = report.count(
      dvr[key],
      `${path}.dvr.${key}`,
      key === 'from' ? MAX_TIMESTAMP_SECONDS : undefined,
    );
    if (n !== undefined) entry.dvr[key] = n;
  };
  optional('window');
  optional('duration');
  optional('from');
  if (dvr.ranges !== undefined) {
    if (!Array.isArray(dvr.ranges)) {
      report.issue(`${path}.dvr.ranges`, `expected an array, got ${describeValue(dvr.ranges)}`);
    } else {
      dvr.ranges.forEach((r, j) => {
        const at = `${path}.dvr.ranges[${j}]`;
        if (!isRecord(r)) {
          report.issue(at, `expected an object, got ${describeValue(r)}`);
          return;
        }
        for (const key of Object.keys(r))
          if (!RANGE_KEYS.has(key)) report.unknownKey(`data[].dvr.ranges[].${key}`);
        const from = report.count(r.from, `${at}.from`, MAX_TIMESTAMP_SECONDS);
        const duration = report.count(r.duration, `${at}.duration`);
        if (from !== undefined && duration !== undefined) entry.dvr.ranges.push({ from, duration });
      });
    }
  }
  return entry;
}
