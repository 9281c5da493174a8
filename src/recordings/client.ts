/**
 * Client of the recording-settings API (../shared/api/recorder-cloud.md). Bodies are sent with the API's
 * snake_case names; the typed inputs below use camelCase like the records.
 */
import { parseAnswer } from '../http/errors.js';
import type { HttpClient, QueryParam } from '../http/request.js';
import { parseCreateResponse, parseRecordingList, type RecordingListResponse } from './response.js';

const PREFIX = '/app/recorder-cloud/v1';

export type ExtraField = 'status';

export interface ListOptions {
  resourceId?: string;
  /** Sends `?all` (a parameter without value): every recording instance, finished ones included. */
  all?: boolean;
  /** `extra_fields=status`. */
  extraFields?: readonly ExtraField[];
  signal?: AbortSignal;
}

export type StreamType = 'short' | 'long';
export type LaunchType = 'stream_start' | 'button' | 'schedule';

/** The document does not show the fields of a schedule object; they are passed through as given. */
export type ScheduleEntry = Record<string, unknown>;

export interface CreateSettingBody {
  resourceId?: string;
  streamName: string;
  streamType: StreamType;
  /** SP URL. */
  source: string;
  launchType: LaunchType;
  schedule?: ScheduleEntry[];
  path?: string;
  stopTimeout?: number;
  /** Days; -1: never delete. */
  storageTime?: number;
  dvrEnabled?: boolean;
  dvrWindow?: number;
  smil?: boolean;
  qualities?: Record<string, string>;
}

export type PatchAction = 'change' | 'start' | 'stop' | 'restart' | 'deactivate';

/** `action` defaults to `change` on the API side; the changes apply to `change` only. */
export interface PatchBody {
  action?: PatchAction;
  streamType?: StreamType;
  launchType?: LaunchType;
  schedule?: ScheduleEntry[];
  path?: string;
  storageTime?: number;
  dvrEnabled?: boolean;
}

const SNAKE: Record<string, string> = {
  resourceId: 'resource_id',
  streamName: 'stream_name',
  streamType: 'stream_type',
  launchType: 'launch_type',
  stopTimeout: 'stop_timeout',
  storageTime: 'storage_time',
  dvrEnabled: 'dvr_enabled',
  dvrWindow: 'dvr_window',
};

function toWire(body: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (v !== undefined) out[SNAKE[k] ?? k] = v;
  return out;
}

function listQuery(opts: ListOptions): QueryParam[] {
  const q: QueryParam[] = [];
  if (opts.resourceId !== undefined) q.push(['resource_id', opts.resourceId]);
  if (opts.all) q.push(['all', null]);
  if (opts.extraFields && opts.extraFields.length > 0) q.push(['extra_fields', opts.extraFields.join(',')]);
  return q;
}

export class RecorderClient {
  constructor(private readonly http: HttpClient) {}

  async listSettings(account: string, opts: ListOptions = {}): Promise<RecordingListResponse> {
    return this.get(account, `${PREFIX}/${encodeURIComponent(account)}/record`, opts);
  }

  /** The API answers with an array (the sample shows one element). */
  async getSetting(account: string, id: string, opts: ListOptions = {}): Promise<RecordingListResponse> {
    return this.get(
      account,
      `${PREFIX}/${encodeURIComponent(account)}/record/${encodeURIComponent(id)}`,
      opts,
    );
  }

  /** 409 (active settings exist for the SP) is ApiError kind `invalid`, status 409. */
  async createSetting(
    account: string,
    body: CreateSettingBody,
    signal?: AbortSignal,
  ): Promise<{ id: string }> {
    const path = `${PREFIX}/${encodeURIComponent(account)}/record`;
    const res = await this.http.request({
      api: 'recorder-cloud',
      method: 'PUT',
      path,
      json: toWire(body),
      signal,
    });
    return parseAnswer(res.status, `PUT ${path}`, () => parseCreateResponse(res.body));
  }

  /** 400 (no settings with that id) and 422 are ApiError kind `invalid`. */
  async patchSetting(account: string, id: string, body: PatchBody = {}, signal?: AbortSignal): Promise<void> {
    const path = `${PREFIX}/${encodeURIComponent(account)}/record/${encodeURIComponent(id)}`;
    await this.http.request({ api: 'recorder-cloud', method: 'PATCH', path, json: toWire(body), signal });
  }

  private async get(account: string, path: string, opts: ListOptions): Promise<RecordingListResponse> {
    const res = await this.http.request({
      api: 'recorder-cloud',
      method: 'GET',
      path,
      query: listQuery(opts),
      signal: opts.signal,
    });
    return parseAnswer(res.status, `GET ${path}`, () => parseRecordingList(res.body, account));
  }
}
