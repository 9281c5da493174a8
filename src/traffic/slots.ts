/**
 * The slot cache behind ./process.ts: every (account, resource) remembers the store slots of its series, so a
 * window's values land by index instead of by label lookup. A keyed family (status codes, classes, size ranges)
 * is an array of slots indexed by a KeyIndex shared by all resources. `addOne`/`setOne` are called by
 * Map.forEach with a reused KeyedCall as `this`, so walking a record's map allocates nothing per entry.
 *
 * Contract: only the owner of a Keyed (TrafficProcess) creates or deletes its series, and always through it, so a
 * cached slot is never one the store has freed.
 */
import type { Side } from '../api/vocabulary.js';
import type { Family, Slot } from '../store/types.js';

/** Not created yet. */
export const NONE = -1;
/** Never created: the metric is not in the allow-list. */
export const OFF = -2;

/**
 * Small integers for the keys of keyed families (status codes, classes, size ranges): a few dozen in all, shared
 * by every resource, so a resource's slots of a keyed family are an array indexed by them.
 */
export class KeyIndex {
  private readonly map = new Map<string, number>();
  readonly keys: string[] = [];
  /**
   * The keys of the last map walked, in its order, and their indexes: records of one answer list their keys in
   * the same order, so `at` is mostly a pointer comparison instead of a hash lookup.
   */
  private readonly order: string[] = [];
  private readonly orderIndex: number[] = [];

  /** The index of the j-th key of a map being walked. */
  at(j: number, key: string): number {
    if (this.order[j] === key) return this.orderIndex[j]!;
    const i = this.of(key);
    if (j <= this.order.length) {
      this.order[j] = key;
      this.orderIndex[j] = i;
    }
    return i;
  }

  of(key: string): number {
    let i = this.map.get(key);
    if (i === undefined) {
      i = this.keys.length;
      this.keys.push(key);
      this.map.set(key, i);
    }
    return i;
  }
}

/** One resource's series of one keyed family: slot by key index (NONE or missing: no series; OFF: not allowed). */
export interface Keyed {
  slots: Slot[];
  /** Series that exist (slots >= 0). */
  live: number;
}

export function keyed(): Keyed {
  return { slots: [], live: 0 };
}

export interface KeyedCall {
  allowed(name: string): boolean;
  side: Side;
  family: Family;
  base: readonly string[];
  k: Keyed;
  index: KeyIndex;
  gate: Keyed | undefined;
  /** Keys set by this call of setKeyed. */
  set: number;
  /** Position in the map being walked. */
  j: number;
  /** The start of the window being counted: where a counter it creates starts (Family.slot). */
  startMs: number;
}

export function addOne(this: KeyedCall, n: number, key: string): void {
  const slots = this.k.slots;
  const i = this.index.at(this.j++, key);
  let slot = slots[i];
  if (slot === undefined || slot === NONE) {
    if (this.allowed(`${this.side}_status_${key}`)) {
      slot = this.family.slot([...this.base, key], this.startMs);
      this.k.live++;
    } else slot = OFF;
    fill(slots, i);
    slots[i] = slot;
  }
  if (slot !== OFF) this.family.add(slot, n);
}

export function setOne(this: KeyedCall, v: number, key: string): void {
  const slots = this.k.slots;
  const i = this.index.at(this.j++, key);
  if (this.gate !== undefined && this.gate.slots[i] === OFF) return;
  let slot = slots[i];
  if (slot === undefined || slot === NONE) {
    slot = this.family.slot([...this.base, key]);
    fill(slots, i);
    slots[i] = slot;
    this.k.live++;
  }
  this.family.set(slot, v);
  this.set++;
}

/** Deletes every series of a keyed family this base has. */
export function deleteKeyed(family: Family, base: readonly string[], k: Keyed, index: KeyIndex): void {
  const slots = k.slots;
  for (let i = 0; i < slots.length; i++) if (slots[i]! >= 0) family.delete([...base, index.keys[i]!]);
  k.slots = [];
  k.live = 0;
}

/** Pads with NONE up to index i (exclusive), so the array has no holes. */
export function fill(slots: Slot[], i: number): void {
  while (slots.length < i) slots.push(NONE);
}
