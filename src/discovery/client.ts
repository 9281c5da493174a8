/** Client of the inventory API: the accounts a token's user may see (./response.ts). */
import type { Requester } from '../poll/upstream.js';
import { type InventoryResponse, parseInventoryBody } from './response.js';

export const INVENTORY_PATH = '/app/inventory/v1/accounts/';

/**
 * Reads a 2xx inventory body (parseInventoryBody's contract): inline by default, or off the event loop when big
 * (src/offloop/: 100,000 accounts are a body of about 8 MB).
 */
export type InventoryBodyParser = (bytes: Uint8Array) => Promise<InventoryResponse>;

const parseInline: InventoryBodyParser = async (bytes) => parseInventoryBody(bytes);

export class InventoryClient {
  /** `upstream`: a token's upstream (src/poll/upstream.ts), or an HttpClient alone. */
  constructor(
    private readonly upstream: Requester,
    private readonly parse: InventoryBodyParser = parseInline,
  ) {}

  /** A body that is not JSON or not a list is ApiError `malformed`, with status and endpoint. */
  async listAccounts(signal?: AbortSignal): Promise<InventoryResponse> {
    const { body } = await this.upstream.request({
      api: 'inventory',
      method: 'GET',
      path: INVENTORY_PATH,
      signal,
      decode: (bytes) => this.parse(bytes),
    });
    return body as InventoryResponse;
  }
}
