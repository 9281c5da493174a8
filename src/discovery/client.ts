/** Client of the inventory API: the accounts a token's user may see (./response.ts). */
import { parseAnswer } from '../http/errors.js';
import type { Requester } from '../poll/upstream.js';
import { type InventoryResponse, parseInventory } from './response.js';

export const INVENTORY_PATH = '/app/inventory/v1/accounts/';

export class InventoryClient {
  /** `upstream`: a token's upstream (src/poll/upstream.ts), or an HttpClient alone. */
  constructor(private readonly upstream: Requester) {}

  async listAccounts(signal?: AbortSignal): Promise<InventoryResponse> {
    const res = await this.upstream.request({
      api: 'inventory',
      method: 'GET',
      path: INVENTORY_PATH,
      signal,
    });
    return parseAnswer(res.status, `GET ${INVENTORY_PATH}`, () => parseInventory(res.body));
  }
}
