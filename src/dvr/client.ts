/**
 * Client of the network-DVR API (docs/upstream-api.md). Stream names may contain slashes (`live/main`): each
 * segment is URL-encoded and the slashes stay path separators. Host `*` means every node.
 */
import type { HttpClient } from '../http/request.js';
import { type DvrStreamResponse, parseDvrBody } from './response.js';

/**
 * Reads a 2xx GET stream body (parseDvrBody's contract): inline by default, or off the event loop
 * (src/offloop/pool.ts).
 */
export type DvrBodyParser = (bytes: Uint8Array, stream: string) => Promise<DvrStreamResponse>;

const parseInline: DvrBodyParser = async (bytes, stream) => parseDvrBody(bytes, stream);

/** The exporter only reads (GET); the writes the simulator's tests need are in test/helpers/api-writes.ts. */
const PREFIX = '/app/dvr-net/v1';

export function streamPath(account: string, stream: string): string {
  const segments = stream.split('/').map(encodeURIComponent).join('/');
  return `${PREFIX}/${encodeURIComponent(account)}/streams/${segments}`;
}

export class DvrClient {
  constructor(
    protected readonly http: HttpClient,
    private readonly parse: DvrBodyParser = parseInline,
  ) {}

  /** A body that is not JSON or not of the documented shape is ApiError `malformed`, with status and endpoint. */
  async getStream(account: string, stream: string, signal?: AbortSignal): Promise<DvrStreamResponse> {
    const path = streamPath(account, stream);
    const { body } = await this.http.request({
      api: 'dvr-net',
      method: 'GET',
      path,
      signal,
      decode: (bytes) => this.parse(bytes, stream),
    });
    return body as DvrStreamResponse;
  }
}
