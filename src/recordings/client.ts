/**
 * Client of the recording-settings API (docs/upstream-api.md). The exporter only reads (GET); the writes (PUT,
 * PATCH) the simulator's tests need are in test/helpers/api-writes.ts.
 */
import type { HttpClient, QueryParam } from '../http/request.js';
import { parseRecordingsBody, type RecordingListResponse } from './response.js';

/**
 * Reads a 2xx listing body (parseRecordingsBody's contract): inline by default, or off the event loop
 * (src/offloop/pool.ts).
 */
export type RecordingsBodyParser = (
  bytes: Uint8Array,
  account: string | undefined,
) => Promise<RecordingListResponse>;

const parseInline: RecordingsBodyParser = async (bytes, account) => parseRecordingsBody(bytes, account);

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
  constructor(
    protected readonly http: HttpClient,
    private readonly parse: RecordingsBodyParser = parseInline,
  ) {}

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
    // A body that is not JSON or not of the documented shape is ApiError `malformed`, with status and endpoint.
    const { body } = await this.http.request({
      api: 'recorder-cloud',
      method: 'GET',
      path,
      query: listQuery(opts),
      signal: opts.signal,
      decode: (bytes) => this.parse(bytes, account),
    });
    return body as RecordingListResponse;
  }
}
