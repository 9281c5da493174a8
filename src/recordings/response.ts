/**
 * Recording settings API (docs/upstream-api.md): typed records and the tolerant parser of its answers.
 * The document does not show which object carries `status`: it is accepted on the setting and on its records;
 * the setting's own wins, else the newest record's (by start time).
 */
import {
  describeValue,
  type FieldIssue,
  isRecord,
  malformed,
  ParseReport,
  parseJsonBody,
  parseUtc,
} from '../http/parse.js';

/** The largest storage_time (days) whose seconds (x 86400) are still a safe integer. */
export const MAX_STORAGE_DAYS = Math.floor(Number.MAX_SAFE_INTEGER / 86_400);

export const RECORDING_STATUSES = ['wait', 'progress', 'finish', 'error'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];

export interface RecordingInstance {
  /** Unix milliseconds. */
  start?: number;
  stop?: number;
  initPath?: string;
  status?: RecordingStatus;
}

export interface RecordingSetting {
  id: string;
  resourceId?: string;
  accountName?: string;
  sourceDomain?: string;
  sourcePath?: string;
  streamType?: string;
  launchType?: string;
  stopTimeout?: number;
  /** Days; -1 means kept forever. */
  storageTime?: number;
  dvrEnabled?: boolean;
  /** Seconds. */
  dvrWindow?: number;
  smil?: boolean;
  qualities: Record<string, string> | null;
  records: RecordingInstance[];
  path: string | null;
  /** The setting's own status when it carries one. */
  status?: RecordingStatus;
  /** Whether the setting is active; the API does not show a field for it: absent means active. */
  active?: boolean;
}

/** The status to expose: the setting's, else the newest record's, else undefined. */
export type EffectiveStatus = RecordingStatus | undefined;

export interface RecordingListResponse {
  settings: RecordingSetting[];
  issues: FieldIssue[];
  unknownKeys: string[];
}

const SETTING_KEYS = new Set([
  'id',
  'resource_id',
  'account_name',
  'source_domain',
  'source_path',
  'stream_type',
  'launch_type',
  'stop_timeout',
  'storage_time',
  'dvr_enabled',
  'dvr_window',
  'smil',
  'qualities',
  'records',
  'path',
  'status',
  'active',
  // Creation parameters the GET sample does not show but an upstream may echo.
  'schedule',
  'stream_name',
  'source',
]);
const RECORD_KEYS = new Set(['start', 'stop', 'init_path', 'status']);

function isStatus(v: unknown): v is RecordingStatus {
  return typeof v === 'string' && (RECORDING_STATUSES as readonly string[]).includes(v);
}

/** The status to expose: the setting's own, else the newest record's (by start), else undefined. */
export function effectiveStatus(setting: RecordingSetting): EffectiveStatus {
  if (setting.status) return setting.status;
  let newest: { start: number; status: RecordingStatus } | undefined;
  for (const r of setting.records) {
    if (!r.status) continue;
    const start = r.start ?? Number.NEGATIVE_INFINITY;
    if (!newest || start >= newest.start) newest = { start, status: r.status };
  }
  return newest?.status;
}

/**
 * Parses the answer of GET `/record` or `/record/<id>`: a JSON array of settings. Throws ApiError `malformed`
 * when the top level is not an array. A setting without a string `id` is dropped with an issue; any other bad
 * field is an issue and is dropped. `qualities` and `path` may be null; a record's `stop` may be null or absent
 * (a recording still running; the document does not say which); dates are `YYYY-MM-DDThh:mm:ssZ`. An id listed
 * twice, or (with `account`, the one asked for) a setting whose `account_name` is another: an issue, dropped.
 */
export function parseRecordingList(raw: unknown, account?: string): RecordingListResponse {
  if (!Array.isArray(raw))
    throw malformed('recorder-cloud', `top level is ${describeValue(raw)}, not an array`);
  const report = new ParseReport();
  const settings: RecordingSetting[] = [];
  const ids = new Set<string>();
  raw.forEach((s, i) => {
    const setting = parseSetting(s, `[${i}]`, report);
    if (!setting) return;
    if (ids.has(setting.id)) {
      report.issue(`[${i}].id`, `id ${JSON.stringify(setting.id)} listed twice; the second setting dropped`);
      return;
    }
    // A setting of another account must not be shown under the one asked for.
    if (account !== undefined && setting.accountName !== undefined && setting.accountName !== account) {
      report.issue(
        `[${i}].account_name`,
        `setting of account ${JSON.stringify(setting.accountName)}, asked for ${JSON.stringify(account)}; dropped`,
      );
      return;
    }
    ids.add(setting.id);
    settings.push(setting);
  });
  return { settings, issues: report.issues, unknownKeys: report.unknownKeys };
}

/** A 2xx body as it came off the wire -> parseRecordingList. Runs inline or in a worker (src/offloop/). */
export function parseRecordingsBody(bytes: Uint8Array, account?: string): RecordingListResponse {
  return parseRecordingList(parseJsonBody('recorder-cloud', bytes), account);
}

function parseSetting(s: unknown, path: string, report: ParseReport): RecordingSetting | undefined {
  if (!isRecord(s)) return report.issue(path, `expected an object, got ${describeValue(s)}`);
  for (const key of Object.keys(s)) if (!SETTING_KEYS.has(key)) report.unknownKey(`[].${key}`);
  const id = typeof s.id === 'number' && Number.isInteger(s.id) ? String(s.id) : s.id;
  if (typeof id !== 'string' || id === '') {
    return report.issue(`${path}.id`, `expected a string id, got ${describeValue(s.id)}; setting dropped`);
  }
  const out: RecordingSetting = { id, qualities: null, records: [], path: null };
  const at = (key: string) => `${path}.${key}`;
  const strings = [
    ['resource_id', 'resourceId'],
    ['account_name', 'accountName'],
    ['source_domain', 'sourceDomain'],
    ['source_path', 'sourcePath'],
    ['stream_type', 'streamType'],
    ['launch_type', 'launchType'],
  ] as const;
  for (const [key, field] of strings) {
    if (s[key] !== undefined && s[key] !== null) out[field] = report.string(s[key], at(key));
  }
  if (s.stop_timeout !== undefined) out.stopTimeout = report.count(s.stop_timeout, at('stop_timeout'));
  if (s.dvr_window !== undefined) out.dvrWindow = report.count(s.dvr_window, at('dvr_window'));
  if (s.storage_time !== undefined) {
    // Exposed as seconds (days x 86400): a day count beyond MAX_STORAGE_DAYS would not stay exact, or finite.
    const n = report.integer(s.storage_time, at('storage_time'), MAX_STORAGE_DAYS);
    if (n !== undefined && n < -1) report.issue(at('storage_time'), `expected -1 or more days, got ${n}`);
    else out.storageTime = n;
  }
  if (s.dvr_enabled !== undefined) out.dvrEnabled = report.boolean(s.dvr_enabled, at('dvr_enabled'));
  if (s.smil !== undefined) out.smil = report.boolean(s.smil, at('smil'));
  if (s.active !== undefined) out.active = report.boolean(s.active, at('active'));
  if (s.path !== undefined && s.path !== null) out.path = report.string(s.path, at('path')) ?? null;
  if (s.status !== undefined) out.status = parseStatus(s.status, at('status'), report);
  if (s.qualities !== undefined && s.qualities !== null) {
    if (!isRecord(s.qualities)) {
      report.issue(at('qualities'), `expected an object or null, got ${describeValue(s.qualities)}`);
    } else {
      const q: Record<string, string> = {};
      for (const [url, name] of Object.entries(s.qualities)) {
        const text = report.string(name, `${at('qualities')}[${JSON.stringify(url)}]`);
        if (text !== undefined) q[url] = text;
      }
      out.qualities = q;
    }
  }
  if (s.records !== undefined && s.records !== null) {
    if (!Array.isArray(s.records)) {
      report.issue(at('records'), `expected an array, got ${describeValue(s.records)}`);
    } else {
      s.records.forEach((r, j) => {
        const record = parseRecord(r, `${at('records')}[${j}]`, report);
        if (record) out.records.push(record);
      });
    }
  }
  return out;
}

function parseRecord(r: unknown, path: string, report: ParseReport): RecordingInstance | undefined {
  if (!isRecord(r)) return report.issue(path, `expected an object, got ${describeValue(r)}`);
  for (const key of Object.keys(r)) if (!RECORD_KEYS.has(key)) report.unknownKey(`[].records[].${key}`);
  const out: RecordingInstance = {};
  for (const key of ['start', 'stop'] as const) {
    const v = r[key];
    if (v === undefined || (v === null && key === 'stop')) continue;
    const text = report.string(v, `${path}.${key}`);
    if (text === undefined) continue;
    const ms = parseUtc(text);
    if (ms === undefined)
      report.issue(`${path}.${key}`, `expected YYYY-MM-DDThh:mm:ssZ, got ${describeValue(text)}`);
    else out[key] = ms;
  }
  if (r.init_path !== undefined && r.init_path !== null)
    out.initPath = report.string(r.init_path, `${path}.init_path`);
  if (r.status !== undefined) out.status = parseStatus(r.status, `${path}.status`, report);
  return out;
}

function parseStatus(v: unknown, path: string, report: ParseReport): RecordingStatus | undefined {
  if (isStatus(v)) return v;
  return report.issue(path, `expected one of ${RECORDING_STATUSES.join(', ')}, got ${describeValue(v)}`);
}
