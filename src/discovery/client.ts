/** Client of the inventory API: the accounts a token's user may see (./response.ts). */
import { parseAnswer } from '../http/errors.js';
import type { HttpClient } from '../http/request.js';
import { type InventoryResponse, parseInventory } from './response.js';

export const INVENTORY_PATH = '/app/inventory/v1/accounts/';

export class InventoryClient {
  constructor(private readonly http: HttpClient) {}

  async listAccounts(signal?: AbortSignal): Promise<InventoryResponse> {
    const res = await this.http.request({ api: 'inventory', method: 'GET', path: INVENTORY_PATH, signal });
    return parseAnswer(res.status, `GET ${INVENTORY_PATH}`, () => parseInventory(res.body));
  }
}
