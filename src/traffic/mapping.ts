/**
 * Maps traffic answers onto the traffic families: counters once per window, gauges from the newest window.
 * No I/O: time comes in as an argument.
 *
 * Stale series (docs/architecture.md): a resource missing from an answer loses its gauges at once; its counters
 * stay until it has been missing for `counterRetentionMs` (a day), so rate() sees no false reset when it returns.
 *
 * Speed: a poll of 10k resources touches ~700k series. Looking each one up by its label text every window costs
 * more than parsing the answer, so every (account, resource) keeps a small record of the slots it uses (one slot
 * per family, one map per keyed family). Only this class creates or deletes traffic series; every deletion goes
 * through that record, so a cached slot is never one the store has freed (and maybe handed to another series).
 */
import type { Side } from '../api/vocabulary.js';
import { type RefusalReason, truncateLabel } from '../store/limits.js';
import type { Family, Slot } from '../store/types.js';
import { type AdmissionScope, admitResources, type SeriesLimits } from './admission.js';
import type { SideFamilies, TrafficFamilies } from './metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from './response.js';
import {
  addOne,
  deleteKeyed,
  type Keyed,
  type KeyedCall,
  KeyIndex,
  keyed,
  NONE,
  setOne,
} from './series-cache.js';

export interface MappingOptions {
  /** API metric names to keep; empty: all. Applied before a series exists. */
  metrics: readonly string[];
  /** Resource ids to keep; empty: all. */
  resources: readonly string[];
  counterRetentionMs?: number;
  /** Caps on new series (issue 15); none when absent. */
  limits?: SeriesLimits;
  /**
   * Counters of a resource seen at or after this time (ms) are kept past their retention: a window awaiting its
   * re-read (./revisit.ts) may hold what was counted for them. Default: none kept.
   */
  keepSeenSince?: (account: string) => number;
}

export { REFUSAL_REASONS, type RefusalReason, TRUNCATED_MARKER } from '../store/limits.js';

export interface ApplyResult {
  /** Records dropped because they could not be attributed (no resource id with breakdown resource). */
  dropped: number;
  /** Resources counted in this window. */
  resources: number;
  /** Series (as many as the resource would have created) refused by a cap in this window, by reason; absent: none. */
  refused?: Partial<Record<RefusalReason, number>>;
  /** Label values (resource name, cname) cut to max_label_length in this window; absent: none. */
  truncated?: number;
}

/**
 * One window being counted in pieces (see ./applier.ts): `records` over consecutive ranges of
 * `response.records`, then `finish` once. Between two calls the event loop may run, but no other window of any
 * account may be applied until `finish`.
 */
export interface WindowApply {
  readonly total: number;
  /** Counts records [from, to) of the answer. */
  records(from: number, to: number): void;
  /** Drops what vanished, counts the window; returns what `apply` returns. */
  finish(): ApplyResult;
}

const DAY_MS = 86_400_000;
/** Reasons of cdn_metrics_skipped_seconds_total made outside skip() (./poller.ts makes `revisit` at start). */
const SKIP_REASONS = ['rejected', 'revisit', 'catch_up_limit'] as const;
/** The `direction` values of cdn_metrics_revisions_total (./poller.ts). */
const REVISION_DIRECTIONS = ['up', 'down', 'none'] as const;
interface WindowSlots {
  /** A code not allowed is OFF in the counter's Keyed and skipped here. */
  codes: Keyed;
  classes: Keyed;
  requests: Slot;
  transferred: Slot;
  hitBytes: Slot;
}

interface SideSlots {
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

/** What one (account, resource) has in the store. With breakdown `account` the resource id is ''. */
interface Entry {
  /** Label values every series of it starts with: [account, resource] or [account]. */
  base: string[];
  lastSeen: number;
  /** Windows of the account counted when it was last in an answer (to find the ones that vanished). */
  window: number;
  /** The label values of its cdn_resource_info series, when it has one. */
  info: string[] | undefined;
  hasGauges: boolean;
  edge: SideSlots;
  origin: SideSlots;
}

interface AccountState {
  entries: Map<string, Entry>;
  /** Windows begun so far: the stamp of the newest. */
  windows: number;
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

function emptySide(windowGauges: boolean): SideSlots {
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

export class TrafficMapping {
  private readonly metricAllow: Set<string> | undefined;
  private readonly resourceAllow: Set<string> | undefined;
  private readonly retentionMs: number;
  private readonly keepSeenSince: ((account: string) => number) | undefined;
  private readonly byResource: boolean;
  private readonly windowGauges: boolean;
  private readonly allow: Record<Side, SideAllow>;
  private readonly accounts = new Map<string, AccountState>();
  /** Per account, the reasons skip() was given (their series go with the account). */
  private readonly skipReasons = new Map<string, Set<string>>();
  private readonly codeIndex = new KeyIndex();
  private readonly classIndex = new KeyIndex();
  private readonly rangeIndex = new KeyIndex();
  /** The arguments of addOne/setOne: Map.forEach with a reused `this` allocates nothing per entry. */
  private readonly keyedCall: KeyedCall;
  private readonly limits: SeriesLimits | undefined;
  private readonly admissionScope: AdmissionScope;
  /** Label values truncated in the window being counted. */
  private truncated = 0;

  constructor(
    private readonly f: TrafficFamilies,
    opts: MappingOptions,
  ) {
    this.metricAllow = opts.metrics.length ? new Set(opts.metrics) : undefined;
    this.resourceAllow = opts.resources.length ? new Set(opts.resources) : undefined;
    this.retentionMs = opts.counterRetentionMs ?? DAY_MS;
    this.limits = opts.limits;
    this.keepSeenSince = opts.keepSeenSince;
    this.byResource = f.breakdown === 'resource';
    this.windowGauges = f.edge.window !== undefined;
    const sideAllow = (p: Side): SideAllow => ({
      requests: this.allowed(`${p}_requests_total`),
      bandwidth: this.allowed(`${p}_bandwidth`),
      requestTime: this.allowed(`${p}_request_time`),
      hitBytes: p === 'edge' && this.allowed('edge_hit_bytes'),
      hitRatio: p === 'edge' && this.allowed('edge_hit_ratio'),
    });
    this.allow = { edge: sideAllow('edge'), origin: sideAllow('origin') };
    this.admissionScope = {
      limits: this.limits,
      byResource: this.byResource,
      resourceAllow: this.resourceAllow,
      resourceInfo: f.resourceInfo !== undefined,
      windowGauges: this.windowGauges,
    };
    this.keyedCall = {
      allowed: (name) => this.allowed(name),
      side: 'edge',
      family: f.edge.responses,
      base: [],
      k: keyed(),
      index: this.codeIndex,
      gate: undefined,
      set: 0,
      j: 0,
      startMs: 0,
    };
  }

  private allowed(name: string): boolean {
    return this.metricAllow === undefined || this.metricAllow.has(name);
  }

  /** Counts one window [startMs, endMs) of one account. Call once per window, in window order. */
  apply(
    account: string,
    startMs: number,
    endMs: number,
    response: TrafficResponse,
    nowMs: number,
  ): ApplyResult {
    const w = this.begin(account, startMs, endMs, response, nowMs);
    w.records(0, w.total);
    return w.finish();
  }

  /**
   * The same as `apply`, in pieces (see WindowApply). `gauges` false (a re-read of late data, ./revisit.ts): only
   * counters are touched; gauges, info series, the window count and the window end stay as the newest first read
   * left them, and nothing is dropped or swept.
   */
  begin(
    account: string,
    startMs: number,
    endMs: number,
    response: TrafficResponse,
    nowMs: number,
    gauges = true,
  ): WindowApply {
    const seconds = (endMs - startMs) / 1000;
    const state = this.stateOf(account);
    // Taken now, not at finish: a window that failed half-way must not make the next one see repeats.
    const stamp = ++state.windows;
    const list = response.records;
    const admission = admitResources(
      this.admissionScope,
      (id) => state.entries.has(id),
      () => accountSeries(state),
      list,
    );
    const refusedIds = admission?.ids;
    let dropped = 0;
    let counted = 0;
    let finished = false;
    this.truncated = 0;
    return {
      total: list.length,
      records: (from, to) => {
        if (finished) throw new Error('traffic window already finished');
        // Counters this window creates start where it starts (their created timestamp), not now.
        this.keyedCall.startMs = startMs;
        const end = Math.min(to, list.length);
        for (let i = from; i < end; i++) {
          const record = list[i]!;
          let id = '';
          if (this.byResource) {
            const rid = record.resource;
            if (rid === undefined || rid === '') {
              dropped++;
              continue;
            }
            if (this.resourceAllow && !this.resourceAllow.has(rid)) continue;
            id = rid;
          }
          if (refusedIds?.has(id)) continue;
          let entry = state.entries.get(id);
          if (entry === undefined) {
            entry = this.newEntry(account, id);
            state.entries.set(id, entry);
          } else if (entry.window === stamp) {
            // The same resource twice in one answer is not documented; counting it twice would double its traffic.
            dropped++;
            continue;
          }
          entry.window = stamp;
          entry.lastSeen = nowMs;
          counted++;
          if (gauges) {
            if (this.byResource) this.setInfo(entry, record);
            entry.hasGauges = true;
          }
          this.applySide('edge', this.f.edge, entry.edge, entry.base, record.edge, seconds, gauges);
          this.applySide('origin', this.f.origin, entry.origin, entry.base, record.origin, seconds, gauges);
        }
      },
      finish: () => {
        if (finished) throw new Error('traffic window already finished');
        finished = true;
        if (!gauges) return { dropped, resources: counted };
        this.dropVanishedGauges(state, stamp);
        this.sweepCounters(account, state, nowMs);
        this.f.windows.add(this.f.windows.slot([account]), 1);
        this.f.windowEnd.set(this.f.windowEnd.slot([account]), endMs / 1000);
        const result: ApplyResult = { dropped, resources: counted };
        if (admission) result.refused = admission.refused;
        if (this.truncated > 0) result.truncated = this.truncated;
        return result;
      },
    };
  }

  /** Minutes that will never be counted (for example a window the API rejected with 422). */
  skip(account: string, minutes: number, reason: string): void {
    const reasons = this.skipReasons.get(account) ?? new Set<string>();
    reasons.add(reason);
    this.skipReasons.set(account, reasons);
    this.f.skippedSeconds.add(this.f.skippedSeconds.slot([account, reason]), minutes * 60);
  }

  /** Makes the skipped-minutes and windows series exist at 0, so increase() works from the first skip. */
  initAccount(account: string, windowMinutes: number): void {
    this.f.windows.slot([account]);
    this.f.skippedSeconds.slot([account, 'rejected']);
    this.setWindowSize(account, windowMinutes);
  }

  setWindowSize(account: string, minutes: number): void {
    this.f.windowSize.set(this.f.windowSize.slot([account]), minutes * 60);
  }

  /** Removes every series of an account (discovery stopped polling it: gone from the inventory, or inactive). */
  removeAccount(account: string): void {
    const state = this.accounts.get(account);
    for (const entry of state?.entries.values() ?? []) {
      this.deleteGauges(entry);
      this.deleteCounters(entry);
    }
    // By exact labels, not a scan: stopping N discovered accounts must cost O(N), not O(N) per account.
    for (const family of [this.f.windowEnd, this.f.windows, this.f.windowSize, this.f.revisitEdgeRequests])
      family?.delete([account]);
    for (const reason of new Set([...SKIP_REASONS, ...(this.skipReasons.get(account) ?? [])]))
      this.f.skippedSeconds.delete([account, reason]);
    for (const direction of REVISION_DIRECTIONS) this.f.revisions?.delete([account, direction]);
    this.skipReasons.delete(account);
    this.accounts.delete(account);
  }

  /**
   * Every counter series the account has, as the label values of each (O(its series), by what it holds, not a
   * scan): what a removal keeps so the counters continue if the account comes back.
   */
  eachCounter(account: string, fn: (family: Family, labelValues: readonly string[]) => void): void {
    const f = this.f;
    const each = (family: Family, base: readonly string[], k: Keyed, index: KeyIndex) => {
      k.slots.forEach((slot, i) => {
        if (slot >= 0) fn(family, [...base, index.keys[i]!]);
      });
    };
    for (const entry of this.accounts.get(account)?.entries.values() ?? []) {
      for (const side of ['edge', 'origin'] as const) {
        const s = entry[side];
        const sf = f[side];
        each(sf.responses, entry.base, s.codes, this.codeIndex);
        each(sf.responsesByClass, entry.base, s.classes, this.classIndex);
        if (s.requests !== NONE) fn(sf.requests, entry.base);
        if (s.transferred !== NONE) fn(sf.transferredBytes, entry.base);
        if (s.hitBytes !== NONE && sf.cacheHitBytes) fn(sf.cacheHitBytes, entry.base);
      }
    }
    fn(f.windows, [account]);
    if (f.revisitEdgeRequests) fn(f.revisitEdgeRequests, [account]);
    for (const reason of new Set([...SKIP_REASONS, ...(this.skipReasons.get(account) ?? [])]))
      fn(f.skippedSeconds, [account, reason]);
    for (const direction of REVISION_DIRECTIONS) if (f.revisions) fn(f.revisions, [account, direction]);
  }

  /** A descriptive label value (resource name, cname) within max_label_length: cut, with a marker, when longer. */
  private fit(value: string): string {
    const max = this.limits?.maxLabelLength;
    const cut = max === undefined ? undefined : truncateLabel(value, max);
    if (cut === undefined) return value;
    this.truncated++;
    return cut;
  }

  private stateOf(account: string): AccountState {
    let state = this.accounts.get(account);
    if (!state) {
      state = { entries: new Map(), windows: 0 };
      this.accounts.set(account, state);
    }
    return state;
  }

  private newEntry(account: string, id: string): Entry {
    return {
      base: this.byResource ? [account, id] : [account],
      lastSeen: 0,
      window: 0,
      info: undefined,
      hasGauges: false,
      edge: emptySide(this.windowGauges),
      origin: emptySide(this.windowGauges),
    };
  }

  private setInfo(entry: Entry, record: TrafficRecord): void {
    const info = this.f.resourceInfo;
    if (!info) return;
    const name = this.fit(record.resourceName ?? '');
    const cname = this.fit(record.cname ?? '');
    const old = entry.info;
    if (old !== undefined && old[2] === name && old[3] === cname) return;
    // A renamed resource or a changed cname replaces its info series.
    if (old !== undefined) info.delete(old);
    const labels = [entry.base[0]!, entry.base[1]!, name, cname];
    info.set(info.slot(labels), 1);
    entry.info = labels;
  }

  private applySide(
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
      // Bandwidth is an average over the window; bytes are whole, so the product is rounded.
      const bytes = Math.round((r.bandwidthBitsPerSecond * seconds) / 8);
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

  /** Adds to one counter per key (`<side>_status_<key>` must be allowed). */
  private addKeyed(
    side: Side,
    family: Family,
    base: readonly string[],
    k: Keyed,
    index: KeyIndex,
    values: ReadonlyMap<string, number>,
  ): void {
    const c = this.keyedCall;
    c.side = side;
    c.family = family;
    c.base = base;
    c.k = k;
    c.index = index;
    c.j = 0;
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
    const c = this.keyedCall;
    c.family = family;
    c.base = base;
    c.k = k;
    c.index = index;
    c.gate = gate;
    c.set = 0;
    c.j = 0;
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

  private deleteGauges(entry: Entry): void {
    const f = this.f;
    const base = entry.base;
    for (const side of ['edge', 'origin'] as const) {
      const s = entry[side];
      const sf = f[side];
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
    if (entry.info !== undefined) f.resourceInfo?.delete(entry.info);
    entry.info = undefined;
    entry.hasGauges = false;
  }

  private deleteCounters(entry: Entry): void {
    const base = entry.base;
    for (const side of ['edge', 'origin'] as const) {
      const s = entry[side];
      const sf = this.f[side];
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

  /** Resources that were in an earlier answer but not in this one lose their gauges. */
  private dropVanishedGauges(state: AccountState, stamp: number): void {
    for (const entry of state.entries.values()) {
      if (entry.hasGauges && entry.window !== stamp) this.deleteGauges(entry);
    }
  }

  private sweepCounters(account: string, state: AccountState, nowMs: number): void {
    const keep = this.keepSeenSince?.(account) ?? Number.POSITIVE_INFINITY;
    for (const [id, entry] of state.entries) {
      if (nowMs - entry.lastSeen < this.retentionMs || entry.lastSeen >= keep) continue;
      this.deleteGauges(entry);
      this.deleteCounters(entry);
      state.entries.delete(id);
    }
  }
}

function sideSeries(s: SideSlots): number {
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

/** Traffic series of an account's resources (its per-account series, a handful, are not counted). */
function accountSeries(state: AccountState): number {
  let n = 0;
  for (const e of state.entries.values()) n += sideSeries(e.edge) + sideSeries(e.origin) + (e.info ? 1 : 0);
  return n;
}
