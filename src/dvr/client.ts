/**
 * Client of the network-DVR API (docs/upstream-api.md). Stream names may contain slashes (`live/main`): each
 * segment is URL-encoded and the slashes stay path separators. Host `*` means every node.
 */
import { parseAnswer } from '../http/errors.js';
import type { HttpClient } from '../http/request.js';
import { type DvrStreamResponse, parseDvrStreamResponse } from './response.js';

/** The exporter only reads (GET); the writes the simulator's tests need are in test/helpers/api-writes.ts. */
const PREFIX = '/app/dvr-net/v1';

export function streamPath(account: string, stream: string): string {
  const segments = stream.split('/').map(encodeURIComponent).join('/');
  return `${PREFIX}/${encodeURIComponent(account)}/streams/${segments}`;
}

export class DvrClient {
  constructor(protected readonly http: HttpClient) {}

  async getStream(account: string, stream: string, signal?: AbortSignal): Promise<DvrStreamResponse> {
    const path = streamPath(account, stream);
    const { status, body } = await this.http.request({ api: 'dvr-net', method: 'GET', path, signal });
    return parseAnswer(status, `GET ${path}`, () => parseDvrStreamResponse(body, stream));
  }
}
