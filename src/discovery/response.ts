/**
 * The inventory API's answer (docs/upstream-api.md, "Inventory"): `GET /app/inventory/v1/accounts/` gives a JSON
 * array, one object per account of the token's user: `{status, utoken, uid, name}`.
 *
 * Read tolerantly: only `name` (a non-empty string) and `status` are used; `status` is compared as lower-case text
 * and anything but `active` (absent included) is not active. An element without a usable name is counted as an
 * issue and skipped. `utoken` is never read or kept: it is not explained publicly and must not be exposed.
 */
import { ApiError } from '../http/errors.js';
import { parseJsonBody } from '../http/parse.js';

export interface InventoryAccount {
  name: string;
  active: boolean;
}

export interface InventoryResponse {
  accounts: InventoryAccount[];
  /** Elements that were skipped (no usable name). */
  issues: number;
}

export function parseInventory(body: unknown): InventoryResponse {
  // Some APIs of the platform wrap lists in `{data: [...]}`; accept that too.
  const list = Array.isArray(body)
    ? body
    : body && typeof body === 'object' && Array.isArray((body as { data?: unknown }).data)
      ? (body as { data: unknown[] }).data
      : undefined;
  if (!list) {
    throw new ApiError({
      api: 'inventory',
      kind: 'malformed',
      detail: 'the account list is not a JSON array',
    });
  }
  const accounts: InventoryAccount[] = [];
  let issues = 0;
  for (const item of list) {
    const o = item && typeof item === 'object' ? (item as Record<string, unknown>) : undefined;
    const name = typeof o?.name === 'string' ? o.name.trim() : '';
    if (name === '') {
      issues++;
      continue;
    }
    const status = typeof o?.status === 'string' ? o.status.trim().toLowerCase() : '';
    accounts.push({ name, active: status === 'active' });
  }
  return { accounts, issues };
}

/** A 2xx inventory body as it came off the wire -> InventoryResponse (inline, or in the answer worker). */
export function parseInventoryBody(bytes: Uint8Array): InventoryResponse {
  return parseInventory(parseJsonBody('inventory', bytes));
}
