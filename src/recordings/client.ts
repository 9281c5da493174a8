/**
 * Client of the recording-settings API (docs/upstream-api.md). The exporter only reads (GET); the writes (PUT,
 * PATCH) the simulator's tests need are in test/helpers/api-writes.ts.
 */
import { parseAnswer } from '../http/errors.js';
import type { HttpClient, QueryParam } from '../http/request.js';
import { parseRecordingList, type RecordingListResponse } from './response.js';

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

function listQuery(opts: ListOptions): QueryParam[] {
  const q: QueryParam[] = [];
  if (opts.resourceId !== undefined) q.push(['resource_id', opts.resourceId]);
  if (opts.all) q.push(['all', null]);
  if (opts.extraFields && opts.extraFields.length > 0) q.push(['extra_fields', opts.extraFields.join(',')]);
  return q;
}

export class RecorderClient {
  constructor(protected readonly http: HttpClient) {}

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
