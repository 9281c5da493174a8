/**
 * Client of the network-DVR API (../shared/api/dvr-net.md). Stream names may contain slashes (`live/main`): each
 * segment is URL-encoded and the slashes stay path separators. Host `*` means every node.
 */
import { parseAnswer } from '../http/errors.js';
import type { HttpClient } from '../http/request.js';
import {
  type DvrDeleteResponse,
  type DvrStreamResponse,
  parseDvrDeleteResponse,
  parseDvrStreamResponse,
} from './response.js';

const PREFIX = '/app/dvr-net/v1';

/** A slice to delete: `from_ts` plus a duration or an end (Unix seconds; the API is accurate to a second). */
export type DeleteRange =
  | { host: string; fromTs: number; durationSec: number; toTs?: undefined }
  | { host: string; fromTs: number; toTs: number; durationSec?: undefined };

export function streamPath(account: string, stream: string): string {
  const segments = stream.split('/').map(encodeURIComponent).join('/');
  return `${PREFIX}/${encodeURIComponent(account)}/streams/${segments}`;
}

export class DvrClient {
  constructor(private readonly http: HttpClient) {}

  async getStream(account: string, stream: string, signal?: AbortSignal): Promise<DvrStreamResponse> {
    const path = streamPath(account, stream);
    const { status, body } = await this.http.request({ api: 'dvr-net', method: 'GET', path, signal });
    return parseAnswer(status, `GET ${path}`, () => parseDvrStreamResponse(body, stream));
  }

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
    const { status, body } = await this.http.request({
      api: 'dvr-net',
      method: 'DELETE',
      path,
      json,
      signal,
    });
    return parseAnswer(status, `DELETE ${path}`, () => parseDvrDeleteResponse(body));
  }
}
