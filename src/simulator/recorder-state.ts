/**
 * The recorder-cloud simulator's settings and their lifecycle, without HTTP. Time comes from the clock and is
 * applied lazily on every read or change (no timers).
 *
 * Assumptions where the recorder-cloud documentation is silent (docs/upstream-api.md):
 * - Status moves `wait -> progress` on `start` (or, for launch_type stream_start, by itself a few seeded seconds
 *   after the setting is created: the stream "publishes"), `progress -> finish` on `stop`, and to `error` only
 *   when forced (`setStatus`). A short stream (up to 12 hours) finishes by itself after 12 hours.
 * - `start` during a recording and `stop` without one are refused with 422 (`errors.action`); `restart` ("reset
 *   DVR") closes the current instance and opens a new one, and starts a recording when none runs.
 * - Each start appends a recording instance; `stop` is null while it runs; `init_path` is the setting's path with
 *   `{now}` replaced by the start time in Unix seconds.
 * - `deactivate` ends a running recording and makes the setting inactive: it is no longer listed or addressable
 *   (GET 404, PATCH 400) and its source is free for a new setting.
 * - `path` is the `/records/{now}.m3u8` template by default; it shows as null for launch_type schedule with no
 *   path given and no instance yet (the document saw null there).
 */
import { hash32, intBetween } from './random.js';
import type { ChangeInput, CreateInput, LaunchType, StreamType } from './recorder-validate.js';
import type { SimContext, SimRecordingSeed } from './types.js';

export type Status = 'wait' | 'progress' | 'finish' | 'error';

const SHORT_LIMIT_MS = 12 * 3600_000;
const DEFAULT_PATH = '/records/{now}.m3u8';

interface Instance {
  start: number;
  stop: number | null;
  initPath: string;
  status: Status;
}

export interface Setting {
  id: string;
  account: string;
  resourceId?: string;
  source: string;
  sourceDomain: string;
  sourcePath: string;
  streamName: string;
  streamType: StreamType;
  launchType: LaunchType;
  schedule?: Record<string, unknown>[];
  path: string;
  pathGiven: boolean;
  stopTimeout: number;
  storageTime: number;
  dvrEnabled: boolean;
  dvrWindow: number;
  smil: boolean;
  qualities: Record<string, string> | null;
  records: Instance[];
  status: Status;
  active: boolean;
  /** When a stream_start setting starts by itself, Unix ms. */
  autoStartAt?: number;
}

export interface ViewOptions {
  all: boolean;
  status: boolean;
}

export type ActionOutcome = { ok: true } | { ok: false; field: string; message: string };

export function formatDatetime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function sourceParts(source: string): { domain: string; path: string } {
  try {
    const u = new URL(source);
    return { domain: u.host, path: u.pathname };
  } catch {
    return { domain: '', path: source };
  }
}

export class RecorderState {
  /** Account name to its settings (active and deactivated), in creation order. */
  private readonly settings = new Map<string, Map<string, Setting>>();
  private created = 0;

  constructor(private readonly ctx: SimContext) {
    for (const account of ctx.accounts.values()) {
      const byId = new Map<string, Setting>();
      this.settings.set(account.name, byId);
      account.recordings.forEach((seed, i) => {
        const setting = this.fromSeed(account.name, seed, i);
        byId.set(setting.id, setting);
      });
    }
  }

  private now(): number {
    return this.ctx.clock.now();
  }

  /** Active settings of an account, brought up to now. */
  list(account: string): Setting[] {
    const now = this.now();
    const out: Setting[] = [];
    for (const s of this.settings.get(account)?.values() ?? []) {
      if (!s.active) continue;
      this.sync(s, now);
      out.push(s);
    }
    return out;
  }

  /** An active setting, brought up to now. */
  get(account: string, id: string): Setting | undefined {
    const s = this.settings.get(account)?.get(id);
    if (!s?.active) return undefined;
    this.sync(s, this.now());
    return s;
  }

  /** Creates a setting; undefined when an active setting for the same source exists (409). */
  create(account: string, input: CreateInput): Setting | undefined {
    const byId = this.settings.get(account);
    if (!byId) throw new Error(`unknown account ${account}`);
    if ([...byId.values()].some((s) => s.active && s.source === input.source)) return undefined;
    this.created += 1;
    const id = this.newId(account, `created:${this.created}`);
    const now = this.now();
    const setting: Setting = {
      id,
      account,
      resourceId: input.resourceId,
      source: input.source,
      sourceDomain: input.sourceDomain,
      sourcePath: input.sourcePath,
      streamName: input.streamName,
      streamType: input.streamType,
      launchType: input.launchType,
      schedule: input.schedule,
      path: input.path ?? DEFAULT_PATH,
      pathGiven: input.path !== undefined,
      stopTimeout: input.stopTimeout ?? 1800,
      storageTime: input.storageTime ?? -1,
      dvrEnabled: input.dvrEnabled ?? false,
      dvrWindow: input.dvrWindow ?? 43200,
      smil: input.smil ?? false,
      qualities: input.qualities ?? null,
      records: [],
      status: 'wait',
      active: true,
    };
    if (setting.launchType === 'stream_start') setting.autoStartAt = now + this.launchDelayMs(id);
    byId.set(id, setting);
    return setting;
  }

  change(s: Setting, input: ChangeInput): void {
    if (input.streamType !== undefined) s.streamType = input.streamType;
    if (input.launchType !== undefined) s.launchType = input.launchType;
    if (input.schedule !== undefined) s.schedule = input.schedule;
    if (input.path !== undefined) {
      s.path = input.path;
      s.pathGiven = true;
    }
    if (input.storageTime !== undefined) s.storageTime = input.storageTime;
    if (input.dvrEnabled !== undefined) s.dvrEnabled = input.dvrEnabled;
  }

  act(s: Setting, action: 'start' | 'stop' | 'restart' | 'deactivate'): ActionOutcome {
    const now = this.now();
    this.sync(s, now);
    switch (action) {
      case 'start':
        if (s.status === 'progress')
          return { ok: false, field: 'action', message: 'Recording is already in progress.' };
        this.begin(s, now);
        return { ok: true };
      case 'stop':
        if (s.status !== 'progress')
          return { ok: false, field: 'action', message: 'No recording is in progress.' };
        this.end(s, now, 'finish');
        return { ok: true };
      case 'restart':
        if (s.status === 'progress') this.end(s, now, 'finish');
        this.begin(s, now);
        return { ok: true };
      case 'deactivate':
        if (s.status === 'progress') this.end(s, now, 'finish');
        s.autoStartAt = undefined;
        s.active = false;
        return { ok: true };
    }
  }

  setStatus(account: string, id: string, status: Status): void {
    const s = this.settings.get(account)?.get(id);
    if (!s) throw new Error(`unknown recording setting ${account}/${id}`);
    const now = this.now();
    this.sync(s, now);
    s.autoStartAt = undefined;
    if (status === 'progress') {
      if (s.status !== 'progress') this.begin(s, now);
      return;
    }
    if (s.status === 'progress') this.end(s, now, status === 'error' ? 'error' : 'finish');
    s.status = status;
  }

  /** The API's settings object. */
  view(s: Setting, opts: ViewOptions): Record<string, unknown> {
    const records = opts.all ? s.records : s.records.slice(-1);
    const showNullPath = s.launchType === 'schedule' && !s.pathGiven && s.records.length === 0;
    return {
      id: s.id,
      ...(s.resourceId !== undefined ? { resource_id: s.resourceId } : {}),
      account_name: s.account,
      source_domain: s.sourceDomain,
      source_path: s.sourcePath,
      stream_type: s.streamType,
      launch_type: s.launchType,
      stop_timeout: s.stopTimeout,
      storage_time: s.storageTime,
      dvr_enabled: s.dvrEnabled,
      dvr_window: s.dvrWindow,
      smil: s.smil,
      qualities: s.qualities,
      records: records.map((r) => ({
        start: formatDatetime(r.start),
        stop: r.stop === null ? null : formatDatetime(r.stop),
        init_path: r.initPath,
        ...(opts.status ? { status: r.status } : {}),
      })),
      path: showNullPath ? null : s.path,
      ...(opts.status ? { status: s.status } : {}),
    };
  }

  /** Applies what time alone does: a pending stream_start launch, the 12-hour end of a short recording. */
  private sync(s: Setting, now: number): void {
    if (s.autoStartAt !== undefined && now >= s.autoStartAt && s.status === 'wait' && s.active) {
      this.begin(s, s.autoStartAt);
    }
    const open = s.records.at(-1);
    if (
      s.streamType === 'short' &&
      s.status === 'progress' &&
      open?.stop === null &&
      now - open.start >= SHORT_LIMIT_MS
    ) {
      this.end(s, open.start + SHORT_LIMIT_MS, 'finish');
    }
  }

  private begin(s: Setting, at: number): void {
    s.autoStartAt = undefined;
    s.records.push({
      start: at,
      stop: null,
      initPath: s.path.replaceAll('{now}', String(Math.floor(at / 1000))),
      status: 'progress',
    });
    s.status = 'progress';
  }

  private end(s: Setting, at: number, status: 'finish' | 'error'): void {
    const open = s.records.at(-1);
    if (open && open.stop === null) {
      open.stop = at;
      open.status = status;
    }
    s.status = status;
  }

  private launchDelayMs(id: string): number {
    return intBetween(this.ctx.seed, 5, 30, 'launch', id) * 1000;
  }

  /** A 24-hex-digit id, stable for the seed, account and key. */
  private newId(account: string, key: string): string {
    const byId = this.settings.get(account);
    for (let salt = 0; ; salt++) {
      const id = [0, 1, 2]
        .map((i) => hash32(this.ctx.seed, 'recording', account, key, salt, i).toString(16).padStart(8, '0'))
        .join('');
      if (!byId?.has(id)) return id;
    }
  }

  private fromSeed(account: string, seed: SimRecordingSeed, index: number): Setting {
    const id = this.newId(account, `seed:${index}`);
    const { domain, path } = sourceParts(seed.source);
    const now = this.now();
    const setting: Setting = {
      id,
      account,
      resourceId: seed.resourceId,
      source: seed.source,
      sourceDomain: domain,
      sourcePath: path,
      streamName: seed.streamName,
      streamType: seed.streamType,
      launchType: seed.launchType,
      path: DEFAULT_PATH,
      pathGiven: false,
      stopTimeout: 1800,
      storageTime: -1,
      dvrEnabled: false,
      dvrWindow: 43200,
      smil: false,
      qualities: null,
      records: [],
      status: 'wait',
      active: true,
    };
    const s = this.ctx.seed;
    const status = seed.status ?? 'wait';
    if (status === 'progress') {
      this.begin(setting, now - intBetween(s, 10, 120, 'running', id) * 60_000);
    } else if (status === 'finish' || status === 'error') {
      const start = now - intBetween(s, 2, 48, 'ago', id) * 3600_000;
      this.begin(setting, start);
      this.end(setting, start + intBetween(s, 10, 100, 'length', id) * 60_000, status);
    } else if (setting.launchType === 'stream_start') {
      setting.autoStartAt = now + this.launchDelayMs(id);
    }
    return setting;
  }
}
