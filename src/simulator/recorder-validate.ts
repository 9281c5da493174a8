/**
 * Validation of the recorder-cloud API's create (PUT) and change (PATCH) bodies, as its document lists them.
 * The document does not show the shape of the 422 "errors data": we answer `{errors: {field: [messages]}}`,
 * the common shape of such APIs.
 */
import { isRecord } from '../http/parse.js';

export const STREAM_TYPES = ['short', 'long'] as const;
export const LAUNCH_TYPES = ['stream_start', 'button', 'schedule'] as const;
export const ACTIONS = ['change', 'start', 'stop', 'restart', 'deactivate'] as const;

export type StreamType = (typeof STREAM_TYPES)[number];
export type LaunchType = (typeof LAUNCH_TYPES)[number];
export type Action = (typeof ACTIONS)[number];
export type FieldErrors = Record<string, string[]>;

export interface CreateInput {
  resourceId?: string;
  streamName: string;
  streamType: StreamType;
  source: string;
  sourceDomain: string;
  sourcePath: string;
  launchType: LaunchType;
  schedule?: Record<string, unknown>[];
  path?: string;
  stopTimeout?: number;
  storageTime?: number;
  dvrEnabled?: boolean;
  dvrWindow?: number;
  smil?: boolean;
  qualities?: Record<string, string> | null;
}

/** The fields `change` may touch (the document's list); other keys in a change body are ignored. */
export interface ChangeInput {
  streamType?: StreamType;
  launchType?: LaunchType;
  schedule?: Record<string, unknown>[];
  path?: string;
  storageTime?: number;
  dvrEnabled?: boolean;
}

export const CHANGEABLE_KEYS = [
  'stream_type',
  'launch_type',
  'schedule',
  'path',
  'storage_time',
  'dvr_enabled',
] as const;

export type Result<T> = { ok: true; value: T } | { ok: false; errors: FieldErrors };

const REQUIRED = 'This field is required.';

class Checker {
  readonly errors: FieldErrors = {};
  constructor(private readonly body: Record<string, unknown>) {}

  add(field: string, message: string): void {
    const list = this.errors[field] ?? [];
    list.push(message);
    this.errors[field] = list;
  }

  has(field: string): boolean {
    return this.body[field] !== undefined;
  }

  string(field: string, required: boolean): string | undefined {
    const v = this.body[field];
    if (v === undefined) {
      if (required) this.add(field, REQUIRED);
      return undefined;
    }
    if (typeof v !== 'string' || v.trim() === '') {
      this.add(field, 'Must be a non-empty string.');
      return undefined;
    }
    return v;
  }

  oneOf<T extends string>(field: string, values: readonly T[], required: boolean): T | undefined {
    const v = this.body[field];
    if (v === undefined) {
      if (required) this.add(field, REQUIRED);
      return undefined;
    }
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      this.add(field, `Must be one of: ${values.join(', ')}.`);
      return undefined;
    }
    return v as T;
  }

  integer(field: string, ok: (n: number) => boolean, rule: string): number | undefined {
    const v = this.body[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || !ok(v)) {
      this.add(field, `Must be an integer ${rule}.`);
      return undefined;
    }
    return v;
  }

  boolean(field: string): boolean | undefined {
    const v = this.body[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') {
      this.add(field, 'Must be a boolean.');
      return undefined;
    }
    return v;
  }

  schedule(): Record<string, unknown>[] | undefined {
    const v = this.body.schedule;
    if (v === undefined) return undefined;
    // The document does not show the fields of a schedule object: any object is accepted.
    if (!Array.isArray(v) || !v.every(isRecord)) {
      this.add('schedule', 'Must be a list of schedule objects.');
      return undefined;
    }
    return v as Record<string, unknown>[];
  }

  storageTime(): number | undefined {
    return this.integer('storage_time', (n) => n === -1 || n >= 1, '(days), -1 or at least 1');
  }
}

function scheduleRule(c: Checker, streamType: string | undefined, launchType: string | undefined): void {
  if (launchType === 'schedule' && streamType !== undefined && streamType !== 'short') {
    c.add('launch_type', 'Launch type schedule is only allowed with stream_type short.');
  }
}

export function validateCreate(body: unknown): Result<CreateInput> {
  if (!isRecord(body)) return { ok: false, errors: { body: ['Must be a JSON object.'] } };
  const c = new Checker(body);
  const streamName = c.string('stream_name', true);
  const streamType = c.oneOf('stream_type', STREAM_TYPES, true);
  const launchType = c.oneOf('launch_type', LAUNCH_TYPES, true);
  const sourceText = c.string('source', true);
  let source: URL | undefined;
  if (sourceText !== undefined) {
    try {
      source = new URL(sourceText);
      if (source.protocol !== 'http:' && source.protocol !== 'https:') throw new Error('scheme');
    } catch {
      source = undefined;
      c.add('source', 'Must be a valid http or https URL.');
    }
  }
  const resourceId = c.string('resource_id', false);
  const schedule = c.schedule();
  const path = c.string('path', false);
  const stopTimeout = c.integer('stop_timeout', (n) => n > 0, '(seconds) greater than 0');
  const storageTime = c.storageTime();
  const dvrEnabled = c.boolean('dvr_enabled');
  const dvrWindow = c.integer('dvr_window', (n) => n > 0, '(seconds) greater than 0');
  const smil = c.boolean('smil');
  let qualities: Record<string, string> | null | undefined;
  if (body.qualities !== undefined && body.qualities !== null) {
    const q = body.qualities;
    if (!isRecord(q) || !Object.values(q).every((v) => typeof v === 'string')) {
      c.add('qualities', 'Must be an object mapping quality URLs to names.');
    } else {
      qualities = q as Record<string, string>;
    }
  } else if (body.qualities === null) {
    qualities = null;
  }
  scheduleRule(c, streamType, launchType);
  if (
    Object.keys(c.errors).length > 0 ||
    !streamName ||
    !streamType ||
    !launchType ||
    !source ||
    !sourceText
  ) {
    return { ok: false, errors: c.errors };
  }
  return {
    ok: true,
    value: {
      resourceId,
      streamName,
      streamType,
      source: sourceText,
      sourceDomain: source.host,
      sourcePath: source.pathname,
      launchType,
      schedule,
      path,
      stopTimeout,
      storageTime,
      dvrEnabled,
      dvrWindow,
      smil,
      qualities,
    },
  };
}

/**
 * Validates a `change`. `current` gives the setting's types, so the schedule-only-with-short rule holds for the
 * result; `recording` refuses every key but dvr_enabled (the document's rule for an active recording).
 */
export function validateChange(
  body: Record<string, unknown>,
  current: { streamType: StreamType; launchType: LaunchType },
  recording: boolean,
): Result<ChangeInput> {
  const c = new Checker(body);
  if (recording) {
    for (const key of CHANGEABLE_KEYS) {
      if (key !== 'dvr_enabled' && c.has(key)) c.add(key, 'Cannot be changed during an active recording.');
    }
  }
  const value: ChangeInput = {
    streamType: c.oneOf('stream_type', STREAM_TYPES, false),
    launchType: c.oneOf('launch_type', LAUNCH_TYPES, false),
    schedule: c.schedule(),
    path: c.string('path', false),
    storageTime: c.storageTime(),
    dvrEnabled: c.boolean('dvr_enabled'),
  };
  scheduleRule(c, value.streamType ?? current.streamType, value.launchType ?? current.launchType);
  if (Object.keys(c.errors).length > 0) return { ok: false, errors: c.errors };
  return { ok: true, value };
}

export function parseAction(body: Record<string, unknown>): Result<Action> {
  const action = body.action ?? 'change';
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) {
    return { ok: false, errors: { action: [`Must be one of: ${ACTIONS.join(', ')}.`] } };
  }
  return { ok: true, value: action as Action };
}

/**
 * Whether a request path under the API's prefix is well formed (otherwise the document's common 400
 * `Invalid path`): every segment decodes, and none is empty or decodes to text holding a `/` (an encoded slash)
 * or a control character. A single trailing slash and the bare prefix are tolerated. A well-formed path that
 * names no endpoint is a wrong URL (404), not an invalid path.
 */
export function isValidPath(path: string): boolean {
  if (path === '/' || path === '') return true;
  const segments = path.split('/').slice(1);
  if (segments.length > 1 && segments.at(-1) === '') segments.pop();
  return segments.every((raw) => {
    if (raw === '') return false;
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return false;
    }
    for (const ch of decoded) {
      const code = ch.codePointAt(0)!;
      if (ch === '/' || code < 0x20 || code === 0x7f) return false;
    }
    return true;
  });
}
