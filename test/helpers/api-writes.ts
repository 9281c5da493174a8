/**
 * The write calls of the DVR and recordings APIs (DELETE, PUT, PATCH). The exporter never writes to the CDN, so
 * these stay out of the product's import graph: the tests use them to change the simulator's state through its
 * HTTP API, as an operator would, and check what the exporter then shows.
 */
import { DvrClient, streamPath } from '../../src/dvr/client.js';
import { parseAnswer } from '../../src/http/errors.js';
import { RecorderClient } from '../../src/recordings/client.js';
import type { Action, LaunchType, StreamType } from '../../src/simulator/recorder-validate.js';
import { type DvrDeleteResponse, parseCreateResponse, parseDvrDeleteResponse } from './api-write-answers.js';

const RECORDER = '/app/recorder-cloud/v1';

/** A slice to delete: `from_ts` plus a duration or an end (Unix seconds; the API is accurate to a second). */
export type DeleteRange =
  | { host: string; fromTs: number; durationSec: number; toTs?: undefined }
  | { host: string; fromTs: number; toTs: number; durationSec?: undefined };

export class DvrTestClient extends DvrClient {
  /** Deletes a slice. A failure on some nodes is ApiError kind `server` (500) with `failedHosts`. */
  async deleteRange(
    account: string,
    stream: string,
    range: DeleteRange,
    signal?: AbortSignal,
  ): Promise<DvrDeleteResponse> {
    const json: Record<string, unknown> = { host: range.host, from_ts: range.fromTs };
    if (range.durationSec !== undefined) json.duration_sec = range.durationSec;
    if (range.toTs !== undefined) json.to_ts = range.toTs;
    return this.delete(account, stream, json, signal);
  }

  /** Deletes everything accumulated on `host` (or every node with `*`). */
  async deleteAll(
    account: string,
    stream: string,
    host: string,
    signal?: AbortSignal,
  ): Promise<DvrDeleteResponse> {
    return this.delete(account, stream, { all: true, host }, signal);
  }

  private async delete(
    account: string,
    stream: string,
    json: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<DvrDeleteResponse> {
    const path = streamPath(account, stream);
    const { status, body } = await this.upstream.request({
      api: 'dvr-net',
      method: 'DELETE',
      path,
      json,
      signal,
    });
    return parseAnswer(status, `DELETE ${path}`, () => parseDvrDeleteResponse(body));
  }
}

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

/** `action` defaults to `change` on the API side; the changes apply to `change` only. */
export interface PatchBody {
  action?: Action;
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

export class RecorderTestClient extends RecorderClient {
  /** 409 (active settings exist for the SP) is ApiError kind `invalid`, status 409. */
  async createSetting(
    account: string,
    body: CreateSettingBody,
    signal?: AbortSignal,
  ): Promise<{ id: string }> {
    const path = `${RECORDER}/${encodeURIComponent(account)}/record`;
    const res = await this.upstream.request({
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
    const path = `${RECORDER}/${encodeURIComponent(account)}/record/${encodeURIComponent(id)}`;
    await this.upstream.request({ api: 'recorder-cloud', method: 'PATCH', path, json: toWire(body), signal });
  }
}
