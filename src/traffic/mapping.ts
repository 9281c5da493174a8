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
import { type RefusalReason, truncateLabel } from '../store/limits.js';
import type { Family } from '../store/types.js';
import { type AdmissionScope, admitResources, type SeriesLimits } from './admission.js';
import type { TrafficFamilies } from './metrics.js';
import type { TrafficRecord, TrafficResponse } from './response.js';
import { emptySide, isSideCounter, SideSeries, type SideSlots, sideSeries } from './side-series.js';

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

export class TrafficMapping {
  private readonly metricAllow: Set<string> | undefined;
  private readonly resourceAllow: Set<string> | undefined;
  private readonly retentionMs: number;
  private readonly keepSeenSince: ((account: string) => number) | undefined;
  private readonly byResource: boolean;
  private readonly windowGauges: boolean;
  private readonly accounts = new Map<string, AccountState>();
  /** Per account, the reasons skip() was given (their series go with the account). */
  private readonly skipReasons = new Map<string, Set<string>>();
  /** Every resource's sides: their series and the key indexes they share. */
  private readonly sides: SideSeries;
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
    this.sides = new SideSeries((name) => this.allowed(name), f.edge.responses);
    this.admissionScope = {
      limits: this.limits,
      byResource: this.byResource,
      resourceAllow: this.resourceAllow,
      resourceInfo: f.resourceInfo !== undefined,
      windowGauges: this.windowGauges,
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
        this.sides.windowStart = startMs;
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
          this.sides.apply('edge', this.f.edge, entry.edge, entry.base, record.edge, seconds, gauges);
          this.sides.apply('origin', this.f.origin, entry.origin, entry.base, record.origin, seconds, gauges);
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
   * A counter series saved in the state file, at its saved value and start: a restart continues it. A resource's
   * counter joins that resource's record as if seen at `nowMs`, so a resource that never comes back loses it after
   * `counterRetentionMs`, as one that vanished does, and a removal keeps or deletes it with the rest. False: left
   * out, its metric, status code or resource no longer allowed.
   */
  restoreCounter(
    account: string,
    family: Family,
    labels: readonly string[],
    value: number,
    startMs: number,
    nowMs: number,
  ): boolean {
    const side = isSideCounter(this.f.edge, family)
      ? 'edge'
      : isSideCounter(this.f.origin, family)
        ? 'origin'
        : undefined;
    if (side === undefined) {
      family.add(family.slot(labels, startMs), value);
      return true;
    }
    const id = this.byResource ? (labels[1] ?? '') : '';
    if (this.byResource && this.resourceAllow && !this.resourceAllow.has(id)) return false;
    const state = this.stateOf(account);
    const had = state.entries.get(id);
    const entry = had ?? this.newEntry(account, id);
    const slot = this.sides.restore(side, this.f[side], entry[side], family, labels, startMs);
    if (slot < 0) return false;
    if (!had) {
      // Seen now: its retention counts from the restart. Only with a series: an empty record would pass the caps.
      entry.lastSeen = nowMs;
      state.entries.set(id, entry);
    }
    family.add(slot, value);
    return true;
  }

  /**
   * Every counter series the account has, as the label values of each (O(its series), by what it holds, not a
   * scan): what a removal keeps so the counters continue if the account comes back.
   */
  eachCounter(account: string, fn: (family: Family, labelValues: readonly string[]) => void): void {
    const f = this.f;
    for (const entry of this.accounts.get(account)?.entries.values() ?? []) {
      for (const side of ['edge', 'origin'] as const)
        this.sides.eachCounter(f[side], entry[side], entry.base, fn);
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

  private deleteGauges(entry: Entry): void {
    for (const side of ['edge', 'origin'] as const)
      this.sides.deleteGauges(this.f[side], entry[side], entry.base);
    if (entry.info !== undefined) this.f.resourceInfo?.delete(entry.info);
    entry.info = undefined;
    entry.hasGauges = false;
  }

  private deleteCounters(entry: Entry): void {
    for (const side of ['edge', 'origin'] as const)
      this.sides.deleteCounters(this.f[side], entry[side], entry.base);
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

/** Traffic series of an account's resources (its per-account series, a handful, are not counted). */
function accountSeries(state: AccountState): number {
  let n = 0;
  for (const e of state.entries.values()) n += sideSeries(e.edge) + sideSeries(e.origin) + (e.info ? 1 : 0);
  return n;
}
