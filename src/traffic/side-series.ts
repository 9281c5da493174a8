/**
 * One resource's series on one side (edge or origin), for ./mapping.ts: the cache of their store slots, counting
 * a side of one record into them, and deleting them. No I/O.
 *
 * The cache: every (account, resource) remembers the store slots of its series, so a window's values land by
 * index instead of by label lookup. A keyed family (status codes, classes, size ranges) is an array of slots
 * indexed by a KeyIndex shared by all resources. `addOne`/`setOne` are called by Map.forEach with a reused
 * KeyedCall as `this`, so walking a record's map allocates nothing per entry.
 *
 * Contract: only the owner of the slots (TrafficMapping, through SideSeries) creates or deletes their series, and
 * always through them, so a cached slot is never one the store has freed.
 */
import type { Side } from '../api/vocabulary.js';
import type { Family, Slot } from '../store/types.js';
import type { FoldedSide } from './fold.js';
import { KeyIndex } from './key-index.js';
import type { SideFamilies } from './metrics.js';
import type { SideRecord } from './response.js';

/** Not created yet. */
const NONE = -1;
/** Never created: the metric is not in the allow-list. */
const OFF = -2;

/** One resource's series of one keyed family: slot by key index (NONE or missing: no series; OFF: not allowed). */
interface Keyed {
  slots: Slot[];
  /** Series that exist (slots >= 0). */
  live: number;
}

function keyed(): Keyed {
  return { slots: [], live: 0 };
}

interface KeyedCall {
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

function addOne(this: KeyedCall, n: number, key: string): void {
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

function setOne(this: KeyedCall, v: number, key: string): void {
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
function deleteKeyed(family: Family, base: readonly string[], k: Keyed, index: KeyIndex): void {
  const slots = k.slots;
  for (let i = 0; i < slots.length; i++) if (slots[i]! >= 0) family.delete([...base, index.keys[i]!]);
  k.slots = [];
  k.live = 0;
}

/** Pads with NONE up to index i (exclusive), so the array has no holes. */
function fill(slots: Slot[], i: number): void {
  while (slots.length < i) slots.push(NONE);
}

interface WindowSlots {
  /** A code not allowed is OFF in the counter's Keyed and skipped here. */
  codes: Keyed;
  classes: Keyed;
  requests: Slot;
  transferred: Slot;
  hitBytes: Slot;
}

/** The slots of one resource's series on one side. */
export interface SideSlots {
  /** Counters. */
  codes: Keyed;
  classes: Keyed;
  requests: Slot;
  transferred: Slot;
  hitBytes: Slot;
  /** Gauges. */
  bandwidth: Slot;
  hitRatio: Slot;
  medians: Keyed;
  window: WindowSlots | undefined;
}

/** Per side, which of the scalar API metrics are allowed (status codes are decided per code). */
interface SideAllow {
  requests: boolean;
  bandwidth: boolean;
  requestTime: boolean;
  hitBytes: boolean;
  hitRatio: boolean;
}

function emptyWindow(): WindowSlots {
  return { codes: keyed(), classes: keyed(), requests: NONE, transferred: NONE, hitBytes: NONE };
}

export function emptySide(windowGauges: boolean): SideSlots {
  return {
    codes: keyed(),
    classes: keyed(),
    requests: NONE,
    transferred: NONE,
    hitBytes: NONE,
    bandwidth: NONE,
    hitRatio: NONE,
    medians: keyed(),
    window: windowGauges ? emptyWindow() : undefined,
  };
}

/** The series one side of one resource has. */
export function sideSeries(s: SideSlots): number {
  let n = s.codes.live + s.classes.live + s.medians.live;
  if (s.requests >= 0) n++;
  if (s.transferred >= 0) n++;
  if (s.hitBytes >= 0) n++;
  if (s.bandwidth >= 0) n++;
  if (s.hitRatio >= 0) n++;
  const w = s.window;
  if (w) {
    n += w.codes.live + w.classes.live;
    if (w.requests >= 0) n++;
    if (w.transferred >= 0) n++;
    if (w.hitBytes >= 0) n++;
  }
  return n;
}

/** Whether `family` is one of the side's counter families (what a restored counter may be). */
export function isSideCounter(f: SideFamilies, family: Family): boolean {
  return (
    family === f.responses ||
    family === f.responsesByClass ||
    family === f.requests ||
    family === f.transferredBytes ||
    family === f.cacheHitBytes
  );
}

/** Counts sides of records into their series and deletes them; the key indexes are shared by every resource. */
export class SideSeries {
  private readonly allow: Record<Side, SideAllow>;
  private readonly codeIndex = new KeyIndex();
  private readonly classIndex = new KeyIndex();
  private readonly rangeIndex = new KeyIndex();
  /** The arguments of addOne/setOne: Map.forEach with a reused `this` allocates nothing per entry. */
  private readonly keyedCall: KeyedCall;

  /** `allowed`: whether an API metric name is in the allow-list. */
  constructor(allowed: (name: string) => boolean, anyFamily: Family) {
    const sideAllow = (p: Side): SideAllow => ({
      requests: allowed(`${p}_requests_total`),
      bandwidth: allowed(`${p}_bandwidth`),
      requestTime: allowed(`${p}_request_time`),
      hitBytes: p === 'edge' && allowed('edge_hit_bytes'),
      hitRatio: p === 'edge' && allowed('edge_hit_ratio'),
    });
    this.allow = { edge: sideAllow('edge'), origin: sideAllow('origin') };
    this.keyedCall = {
      allowed,
      side: 'edge',
      family: anyFamily,
      base: [],
      k: keyed(),
      index: this.codeIndex,
      gate: undefined,
      set: 0,
      j: 0,
      startMs: 0,
    };
  }

  /** The start of the window being counted: where the counters it creates start (their created timestamp). */
  set windowStart(ms: number) {
    this.keyedCall.startMs = ms;
  }

  /** Counts one side of one record; `gauges` false (a revisit): counters only. */
  apply(
    side: Side,
    f: SideFamilies,
    s: SideSlots,
    base: readonly string[],
    r: SideRecord,
    seconds: number,
    gauges: boolean,
  ): void {
    const allow = this.allow[side];
    const w = gauges ? f.window : undefined;
    const ws = s.window;
    if (r.codes.size > 0) this.addKeyed(side, f.responses, base, s.codes, this.codeIndex, r.codes);
    if (w && ws && (r.codes.size > 0 || ws.codes.live > 0)) {
      this.setKeyed(w.responses, base, ws.codes, this.codeIndex, r.codes, s.codes);
    }
    if (r.classes.size > 0)
      this.addKeyed(side, f.responsesByClass, base, s.classes, this.classIndex, r.classes);
    if (w && ws && (r.classes.size > 0 || ws.classes.live > 0)) {
      this.setKeyed(w.responsesByClass, base, ws.classes, this.classIndex, r.classes, s.classes);
    }
    if (r.requests !== undefined && allow.requests) {
      if (s.requests === NONE) s.requests = f.requests.slot(base, this.keyedCall.startMs);
      f.requests.add(s.requests, r.requests);
      if (w && ws) {
        if (ws.requests === NONE) ws.requests = w.requests.slot(base);
        w.requests.set(ws.requests, r.requests);
      }
    }
    if (r.bandwidthBitsPerSecond !== undefined && allow.bandwidth) {
      // Bandwidth is an average over the window; bytes are whole, so the product is rounded (a folded sum carries
      // the sum of its records' rounded bytes: ./fold.ts).
      const bytes =
        (r as FoldedSide).transferredBytes ?? Math.round((r.bandwidthBitsPerSecond * seconds) / 8);
      if (s.transferred === NONE) s.transferred = f.transferredBytes.slot(base, this.keyedCall.startMs);
      f.transferredBytes.add(s.transferred, bytes);
      if (gauges) {
        if (s.bandwidth === NONE) s.bandwidth = f.bandwidth.slot(base);
        f.bandwidth.set(s.bandwidth, r.bandwidthBitsPerSecond / 8);
      }
      if (w && ws) {
        if (ws.transferred === NONE) ws.transferred = w.transferredBytes.slot(base);
        w.transferredBytes.set(ws.transferred, bytes);
      }
    }
    if (allow.requestTime && gauges) {
      // Ranges missing from this window lose their gauge: a median of an older window is not this window's.
      this.setKeyed(
        f.requestDurationMedian,
        base,
        s.medians,
        this.rangeIndex,
        r.requestTimeSeconds,
        undefined,
      );
    }
    if (f.cacheHitBytes && r.hitBytes !== undefined && allow.hitBytes) {
      if (s.hitBytes === NONE) s.hitBytes = f.cacheHitBytes.slot(base, this.keyedCall.startMs);
      f.cacheHitBytes.add(s.hitBytes, r.hitBytes);
      if (w?.cacheHitBytes && ws) {
        if (ws.hitBytes === NONE) ws.hitBytes = w.cacheHitBytes.slot(base);
        w.cacheHitBytes.set(ws.hitBytes, r.hitBytes);
      }
    }
    if (gauges && f.cacheHitRatio && r.hitRatio !== undefined && allow.hitRatio) {
      if (s.hitRatio === NONE) s.hitRatio = f.cacheHitRatio.slot(base);
      f.cacheHitRatio.set(s.hitRatio, r.hitRatio);
    }
  }

  /**
   * Counts one side of a revisit counter by counter (folding on: ./mapping.ts). A counter goes to this resource's
   * own series only when `own(family, slot)` says the revisited windows counted something there; every other
   * counter (no series, nothing counted under it: it was folded then) is returned, to go to `__other__`. Returns
   * undefined when nothing is left over.
   */
  applyRouted(
    side: Side,
    f: SideFamilies,
    s: SideSlots,
    r: SideRecord,
    seconds: number,
    own: (family: Family, slot: Slot) => boolean,
  ): FoldedSide | undefined {
    const allow = this.allow[side];
    let rest: FoldedSide | undefined;
    const left = (): FoldedSide => {
      rest ??= { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() };
      return rest;
    };
    const keyed = (family: Family, k: Keyed, index: KeyIndex, values: ReadonlyMap<string, number>) => {
      values.forEach((n, key) => {
        const slot = k.slots[index.of(key)];
        if (slot === OFF) return;
        if (slot !== undefined && slot >= 0 && own(family, slot)) family.add(slot, n);
        else (left()[family === f.responses ? 'codes' : 'classes'] as Map<string, number>).set(key, n);
      });
    };
    keyed(f.responses, s.codes, this.codeIndex, r.codes);
    keyed(f.responsesByClass, s.classes, this.classIndex, r.classes);
    if (r.requests !== undefined && allow.requests) {
      if (s.requests >= 0 && own(f.requests, s.requests)) f.requests.add(s.requests, r.requests);
      else left().requests = r.requests;
    }
    if (r.bandwidthBitsPerSecond !== undefined && allow.bandwidth) {
      const bytes =
        (r as FoldedSide).transferredBytes ?? Math.round((r.bandwidthBitsPerSecond * seconds) / 8);
      if (s.transferred >= 0 && own(f.transferredBytes, s.transferred))
        f.transferredBytes.add(s.transferred, bytes);
      else {
        left().bandwidthBitsPerSecond = r.bandwidthBitsPerSecond;
        left().transferredBytes = bytes;
      }
    }
    if (f.cacheHitBytes && r.hitBytes !== undefined && allow.hitBytes) {
      if (s.hitBytes >= 0 && own(f.cacheHitBytes, s.hitBytes)) f.cacheHitBytes.add(s.hitBytes, r.hitBytes);
      else left().hitBytes = r.hitBytes;
    }
    return rest;
  }

  /** The reused arguments of addOne/setOne, set for one keyed family of one base. */
  private call(family: Family, base: readonly string[], k: Keyed, index: KeyIndex): KeyedCall {
    const c = this.keyedCall;
    c.family = family;
    c.base = base;
    c.k = k;
    c.index = index;
    c.j = 0;
    return c;
  }

  /** Adds to one counter per key (`<side>_status_<key>` must be allowed). */
  private addKeyed(
    side: Side,
    family: Family,
    base: readonly string[],
    k: Keyed,
    index: KeyIndex,
    values: ReadonlyMap<string, number>,
  ): void {
    const c = this.call(family, base, k, index);
    c.side = side;
    values.forEach(addOne, c);
  }

  /**
   * Sets one gauge per key for this base and deletes the keys it had before but not now. `gate`, when given,
   * is the counter's Keyed of the same keys: a key that is OFF there is not allowed here either.
   */
  private setKeyed(
    family: Family,
    base: readonly string[],
    k: Keyed,
    index: KeyIndex,
    values: ReadonlyMap<string, number>,
    gate: Keyed | undefined,
  ): void {
    const c = this.call(family, base, k, index);
    c.gate = gate;
    c.set = 0;
    values.forEach(setOne, c);
    if (k.live === c.set) return;
    const slots = k.slots;
    for (let i = 0; i < slots.length; i++) {
      if (slots[i]! < 0) continue;
      const key = index.keys[i]!;
      if (values.has(key)) continue;
      family.delete([...base, key]);
      slots[i] = NONE;
      k.live--;
    }
  }

  /** Deletes the side's gauges (and its window gauges). */
  deleteGauges(sf: SideFamilies, s: SideSlots, base: readonly string[]): void {
    if (s.bandwidth !== NONE) sf.bandwidth.delete(base);
    if (s.hitRatio !== NONE) sf.cacheHitRatio?.delete(base);
    s.bandwidth = NONE;
    s.hitRatio = NONE;
    deleteKeyed(sf.requestDurationMedian, base, s.medians, this.rangeIndex);
    const ws = s.window;
    const w = sf.window;
    if (ws && w) {
      deleteKeyed(w.responses, base, ws.codes, this.codeIndex);
      deleteKeyed(w.responsesByClass, base, ws.classes, this.classIndex);
      if (ws.requests !== NONE) w.requests.delete(base);
      if (ws.transferred !== NONE) w.transferredBytes.delete(base);
      if (ws.hitBytes !== NONE) w.cacheHitBytes?.delete(base);
      s.window = emptyWindow();
    }
  }

  /**
   * Makes the counter series `labels` of `family` (one of the side's counter families: isSideCounter), starting
   * at `startMs`, and caches its slot as if a window had made it, so it is deleted and kept like one. Returns its
   * slot; OFF when the allow-list no longer has its metric or status code (no series is made).
   */
  restore(
    side: Side,
    f: SideFamilies,
    s: SideSlots,
    family: Family,
    labels: readonly string[],
    startMs: number,
  ): Slot {
    const allow = this.allow[side];
    const keyedSlot = (k: Keyed, index: KeyIndex): Slot => {
      const key = labels[labels.length - 1]!;
      if (!this.keyedCall.allowed(`${side}_status_${key}`)) return OFF;
      const i = index.of(key);
      const had = k.slots[i];
      if (had !== undefined && had >= 0) return had;
      fill(k.slots, i);
      k.slots[i] = family.slot(labels, startMs);
      k.live++;
      return k.slots[i]!;
    };
    if (family === f.responses) return keyedSlot(s.codes, this.codeIndex);
    if (family === f.responsesByClass) return keyedSlot(s.classes, this.classIndex);
    if (family === f.requests) {
      if (!allow.requests) return OFF;
      if (s.requests === NONE) s.requests = family.slot(labels, startMs);
      return s.requests;
    }
    if (family === f.transferredBytes) {
      if (!allow.bandwidth) return OFF;
      if (s.transferred === NONE) s.transferred = family.slot(labels, startMs);
      return s.transferred;
    }
    if (!allow.hitBytes) return OFF;
    if (s.hitBytes === NONE) s.hitBytes = family.slot(labels, startMs);
    return s.hitBytes;
  }

  /** Calls `fn` with every counter series the side has (what deleteCounters would delete). */
  eachCounter(
    sf: SideFamilies,
    s: SideSlots,
    base: readonly string[],
    fn: (family: Family, labelValues: readonly string[]) => void,
  ): void {
    const each = (family: Family, k: Keyed, index: KeyIndex) => {
      k.slots.forEach((slot, i) => {
        if (slot >= 0) fn(family, [...base, index.keys[i]!]);
      });
    };
    each(sf.responses, s.codes, this.codeIndex);
    each(sf.responsesByClass, s.classes, this.classIndex);
    if (s.requests !== NONE) fn(sf.requests, base);
    if (s.transferred !== NONE) fn(sf.transferredBytes, base);
    if (s.hitBytes !== NONE && sf.cacheHitBytes) fn(sf.cacheHitBytes, base);
  }

  /** Deletes the side's counters. */
  deleteCounters(sf: SideFamilies, s: SideSlots, base: readonly string[]): void {
    deleteKeyed(sf.responses, base, s.codes, this.codeIndex);
    deleteKeyed(sf.responsesByClass, base, s.classes, this.classIndex);
    if (s.requests !== NONE) sf.requests.delete(base);
    if (s.transferred !== NONE) sf.transferredBytes.delete(base);
    if (s.hitBytes !== NONE) sf.cacheHitBytes?.delete(base);
    s.requests = NONE;
    s.transferred = NONE;
    s.hitBytes = NONE;
  }
}
