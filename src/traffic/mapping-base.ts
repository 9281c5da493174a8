/**
 * The part of TrafficMapping (./mapping.ts) that keeps each account's entries and their series: making and
 * deleting them, their info and gauges, the sweep of what vanished, and the counters a restart continues. The
 * counting of windows, folding included, is ./mapping.ts's.
 */
import { truncateLabel } from '../store/limits.js';
import type { Family } from '../store/types.js';
import type { SeriesLimits } from './admission.js';
import type { AccountState, Entry, FoldBook } from './entries.js';
import { OTHER } from './fold.js';
import type { TrafficFamilies } from './metrics.js';
import type { ResourceRanking } from './ranking.js';
import type { TrafficRecord } from './response.js';
import { emptySide, isSideCounter, SideSeries } from './side-series.js';

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
   * revisit (./revisit.ts) may hold what was counted for them. Default: none kept.
   */
  keepSeenSince?: (account: string) => number;
  /** Folding beyond the caps' (issue 35); absent: only a full cap folds. */
  fold?: FoldOptions;
}

export interface FoldOptions {
  /** The account's `top_resources`: resources with series of their own; 0: no limit. */
  topResources(account: string): number;
  /** The ranking; needed when an account has a limit. */
  ranking?: ResourceRanking;
  /** With `metrics.revisit`: the records of windows awaiting a revisit (./pipeline.ts). */
  book?: FoldBook;
}

const DAY_MS = 86_400_000;

export abstract class MappingBase {
  protected readonly metricAllow: Set<string> | undefined;
  protected readonly resourceAllow: Set<string> | undefined;
  protected readonly retentionMs: number;
  protected readonly keepSeenSince: ((account: string) => number) | undefined;
  protected readonly byResource: boolean;
  protected readonly windowGauges: boolean;
  protected readonly accounts = new Map<string, AccountState>();
  /** Every resource's sides: their series and the key indexes they share. */
  protected readonly sides: SideSeries;
  protected readonly limits: SeriesLimits | undefined;
  /** Label values truncated in the window being counted. */
  protected truncated = 0;

  constructor(
    protected readonly f: TrafficFamilies,
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
    if (this.byResource && this.resourceAllow && !this.resourceAllow.has(id) && id !== OTHER) return false;
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

  /** A descriptive label value (resource name, cname) within max_label_length: cut, with a marker, when longer. */
  protected fit(value: string): string {
    const max = this.limits?.maxLabelLength;
    const cut = max === undefined ? undefined : truncateLabel(value, max);
    if (cut === undefined) return value;
    this.truncated++;
    return cut;
  }

  protected stateOf(account: string): AccountState {
    let state = this.accounts.get(account);
    if (!state) {
      state = { entries: new Map(), windows: 0, epoch: 0 };
      this.accounts.set(account, state);
    }
    return state;
  }

  protected newEntry(account: string, id: string): Entry {
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

  protected setInfo(entry: Entry, record: TrafficRecord): void {
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

  protected deleteGauges(entry: Entry): void {
    for (const side of ['edge', 'origin'] as const)
      this.sides.deleteGauges(this.f[side], entry[side], entry.base);
    if (entry.info !== undefined) this.f.resourceInfo?.delete(entry.info);
    entry.info = undefined;
    entry.hasGauges = false;
  }

  protected deleteCounters(entry: Entry): void {
    for (const side of ['edge', 'origin'] as const)
      this.sides.deleteCounters(this.f[side], entry[side], entry.base);
  }

  /** Resources that were in an earlier answer but not in this one lose their gauges. */
  protected dropVanishedGauges(state: AccountState, stamp: number): void {
    for (const entry of state.entries.values()) {
      if (entry.hasGauges && entry.window !== stamp) this.deleteGauges(entry);
    }
  }

  protected sweepCounters(account: string, state: AccountState, nowMs: number): void {
    const keep = this.keepSeenSince?.(account) ?? Number.POSITIVE_INFINITY;
    for (const [id, entry] of state.entries) {
      if (nowMs - entry.lastSeen < this.retentionMs || entry.lastSeen >= keep) continue;
      this.deleteGauges(entry);
      this.deleteCounters(entry);
      state.entries.delete(id);
    }
  }
  /** The account's `__other__` entry, made when missing. */
  protected otherOf(account: string, state: AccountState): Entry {
    let other = state.entries.get(OTHER);
    if (!other) {
      other = this.newEntry(account, OTHER);
      state.entries.set(OTHER, other);
    }
    return other;
  }

  protected allowed(name: string): boolean {
    return this.metricAllow === undefined || this.metricAllow.has(name);
  }
}
