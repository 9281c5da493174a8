/**
 * The inventory answer's trip back from the parse worker (src/offloop/pool.ts): the account names as one string with their
 * lengths, and the active flags, so 100,000 accounts cost the event loop one pass of string slices instead of a
 * structured clone of 100,000 objects.
 */
import type { AnswerCodec } from '../offloop/packing.js';
import type { BodyParsers } from '../poll/api-module.js';
import type { InventoryBodyParser } from './client.js';
import { type InventoryResponse, parseInventoryBody } from './response.js';

export interface PackedInventory {
  names: string;
  lengths: Int32Array;
  active: Uint8Array;
  issues: number;
}

export function packInventory(r: InventoryResponse): PackedInventory {
  const lengths = new Int32Array(r.accounts.length);
  const active = new Uint8Array(r.accounts.length);
  r.accounts.forEach((a, i) => {
    lengths[i] = a.name.length;
    active[i] = a.active ? 1 : 0;
  });
  return { names: r.accounts.map((a) => a.name).join(''), lengths, active, issues: r.issues };
}

export function unpackInventory(p: PackedInventory): InventoryResponse {
  const accounts: InventoryResponse['accounts'] = new Array(p.lengths.length);
  let at = 0;
  for (let i = 0; i < p.lengths.length; i++) {
    const end = at + p.lengths[i]!;
    accounts[i] = { name: p.names.slice(at, end), active: p.active[i] === 1 };
    at = end;
  }
  return { accounts, issues: p.issues };
}

export const inventoryCodec: AnswerCodec<undefined, InventoryResponse, PackedInventory> = {
  api: 'inventory',
  module: 'discovery/codec.js',
  parse: (bytes) => parseInventoryBody(bytes),
  pack: (bytes) => packInventory(parseInventoryBody(bytes)),
  transferables: (p) => [p.lengths.buffer as ArrayBuffer, p.active.buffer as ArrayBuffer],
  unpack: async (p) => unpackInventory(p),
};

/** The inventory client's body parser from a pool (src/offloop/pool.ts): big listings off the event loop. */
export function inventoryParser(parsers: BodyParsers): InventoryBodyParser {
  const parse = parsers.parser(inventoryCodec);
  return (bytes) => parse(bytes, undefined);
}
