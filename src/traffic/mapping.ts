/**
 * Maps traffic answers onto the traffic families: counters once per window, gauges from the newest window.
 * No I/O: time comes in as an argument.
 *
 * Stale series (docs/architecture.md): a resource missing from an answer loses its gauges at once; its counters
 * stay until it has been missing for `counterRetentionMs` (a day), so rate() sees no false reset when it returns.
 *
 * Folding (./fold.ts, issue 35): with `limits.top_resources` an account's resources outside its top N by edge
 * traffic (./ranking.ts), and with a full series cap its new resources, are counted together as one `__other__`
 * entry: its counters add exactly what they count. A first read folds by the top N of the ranking with this window
 * in it; a resource that drops out keeps its counters at their last value (gone a counter retention later) and loses
 * its gauges (./entries.ts). A revisit (late data) must put each late part where its first read counted the rest:
 * with `__other__` there, a counter goes to the resource's own series only when the revisited windows counted
 * something under it (FoldBook.counted), everything else to `__other__` (a resource folded then adds there).
 *
 * Speed: a poll of 10k resources touches ~700k series. Looking each one up by its label text every window costs
 * more than parsing the answer, so every (account, resource) keeps a small record of the slots it uses (one slot
 * per family, one map per keyed family). Only this class creates or deletes traffic series; every deletion goes
 * through that record, so a cached slot is never one the store has freed (and maybe handed to another series).
 */
import type { RefusalReason } from '../store/limits.js';
import type { Family } from '../store/types.js';
import { type AdmissionScope, admitResources } from './admission.js';
import { type AccountState, accountSeries } from './entries.js';
import { FoldSum, OTHER } from './fold.js';
import { type FoldOptions, MappingBase, type MappingOptions } from './mapping-base.js';
import type { TrafficFamilies } from './metrics.js';
import type { TrafficRecord, TrafficResponse } from './response.js';

export type { FoldBook } from './entries.js';
export type { FoldOptions, MappingOptions } from './mapping-base.js';

/** The fold decisions of one counted answer, for the settled side: the resources kept apart, or those folded. */
interface FoldMemo {
  own?: ReadonlySet<string>;
  folded?: ReadonlySet<string>;
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
  /** Resources counted under `__other__` in this window; absent: none. */
  folded?: number;
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

/** Reasons of cdn_metrics_skipped_seconds_total made outside skip() (./revisit-reads.ts makes `revisit` at start). */
const SKIP_REASONS = ['rejected', 'revisit', 'catch_up_limit'] as const;
/** The `direction` values of cdn_metrics_revisions_total (./revisit-reads.ts). */
const REVISION_DIRECTIONS = ['up', 'down', 'none'] as const;

export class TrafficMapping extends MappingBase {
  /** Per account, the reasons skip() was given (their series go with the account). */
  private readonly skipReasons = new Map<string, Set<string>>();
  private readonly admissionScope: AdmissionScope;
  private readonly fold: FoldOptions | undefined;
  /** The fold decisions of each answer counted (weak: they go with the answer), for foldOf. */
  private readonly memos = new WeakMap<readonly TrafficRecord[], FoldMemo>();

  constructor(f: TrafficFamilies, opts: MappingOptions) {
    super(f, opts);
    this.admissionScope = {
      limits: this.limits,
      byResource: this.byResource,
      resourceAllow: this.resourceAllow,
      resourceInfo: f.resourceInfo !== undefined,
      windowGauges: this.windowGauges,
    };
    this.fold = this.byResource ? opts.fold : undefined;
  }

  /** The account's top_resources (0: none). */
  private topOf(account: string): number {
    return this.fold?.ranking ? this.fold.topResources(account) : 0;
  }

  /** The account has `__other__` series. */
  folds(account: string): boolean {
    return this.accounts.get(account)?.entries.has(OTHER) === true;
  }

  /** See AccountState.epoch. */
  foldEpoch(account: string): number {
    return this.accounts.get(account)?.epoch ?? 0;
  }

  /**
   * Whether `resource` of `account` was counted under `__other__` in the answer whose records are `records` (the
   * settled side folds the same way: src/settled/window-series.ts). For an answer not counted here (the settled
   * writer's own reads), as the account stands now: folded unless it has series of its own, when it folds at all.
   * A resource outside `metrics.resources` is not folded: /metrics counts it nowhere, so it is not among the
   * resources `cdn_folded_resources` counts (the pages list it apart, as they do without top_resources).
   */
  foldOf(account: string, resource: string, records: readonly TrafficRecord[]): boolean {
    if (resource === OTHER) return true;
    if (this.resourceAllow && !this.resourceAllow.has(resource)) return false;
    const memo = this.memos.get(records);
    if (memo?.own) return !memo.own.has(resource);
    if (memo?.folded) return memo.folded.has(resource);
    const state = this.accounts.get(account);
    if (!state || (this.topOf(account) === 0 && !state.entries.has(OTHER))) return false;
    return !state.entries.has(resource);
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
   * The same as `apply`, in pieces (see WindowApply). `gauges` false (a revisit of late data, ./revisit.ts): only
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
    const n = this.topOf(account);
    const ranking = this.fold?.ranking;
    // The top N with this window in it (a first read); a revisit does not rank.
    if (n > 0 && gauges) ranking?.observe(account, startMs, endMs, list, (r) => this.rankedId(r));
    const top = n > 0 ? ranking?.top(account, n) : undefined;
    const hasOther = state.entries.has(OTHER);
    // A resource folded before any cap is asked: out of the top N; in a revisit, one without series while
    // `__other__` is there (it was folded when first read, or its series went since).
    const foldFirst = (id: string): boolean =>
      this.byResource &&
      (id === OTHER ||
        (gauges
          ? top !== undefined && !top.has(id)
          : !state.entries.has(id) && (hasOther || (top !== undefined && !top.has(id)))));
    const admission = admitResources(
      this.admissionScope,
      (id) => state.entries.has(id) || foldFirst(id),
      () => accountSeries(state),
      list,
    );
    const refusedIds = admission?.ids;
    const capFolded = admission?.folded;
    const book = this.fold?.book;
    // A revisit with `__other__` there: each counter goes where its first read counted (see the file's comment).
    const routed = !gauges && hasOther && book !== undefined;
    const own = (family: Family, slot: number) => book!.counted(family, slot) > 0;
    const sum = new FoldSum(seconds);
    const folded = new Set<string>();
    const kept = n > 0 ? new Set<string>() : undefined;
    let leftOver = false;
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
          if (foldFirst(id) || capFolded?.has(id)) {
            // The same resource twice in one answer is not documented; counting it twice would double its traffic.
            if (folded.has(id)) dropped++;
            else {
              folded.add(id);
              sum.add(record);
              counted++;
              // Out of the top N: its counters stay at their last value, its gauges go at the finish.
              const out = state.entries.get(id);
              if (out && gauges) out.folded = true;
            }
            continue;
          }
          let entry = state.entries.get(id);
          if (entry === undefined) {
            entry = this.newEntry(account, id);
            state.entries.set(id, entry);
            // It may have been folded in the windows before (a full cap, or out of the top N).
            if (state.entries.has(OTHER)) state.epoch++;
          } else if (entry.window === stamp) {
            dropped++;
            continue;
          } else if (entry.folded && gauges) {
            // Back in the top N: counted on its own again, after windows counted under `__other__`.
            entry.folded = false;
            state.epoch++;
          }
          entry.window = stamp;
          // A revisit does not keep the counters of a resource out of the top N alive (see ./entries.ts).
          if (gauges || !entry.folded) entry.lastSeen = nowMs;
          counted++;
          kept?.add(id);
          if (gauges) {
            if (this.byResource) this.setInfo(entry, record);
            entry.hasGauges = true;
          }
          if (routed) {
            for (const side of ['edge', 'origin'] as const) {
              const rest = this.sides.applyRouted(
                side,
                this.f[side],
                entry[side],
                record[side],
                seconds,
                own,
              );
              if (rest) {
                sum.addCounter(side, rest);
                leftOver = true;
              }
            }
            continue;
          }
          this.sides.apply('edge', this.f.edge, entry.edge, entry.base, record.edge, seconds, gauges);
          this.sides.apply('origin', this.f.origin, entry.origin, entry.base, record.origin, seconds, gauges);
        }
      },
      finish: () => {
        if (finished) throw new Error('traffic window already finished');
        finished = true;
        if (folded.size > 0 || leftOver)
          this.countOther(account, state, sum.record(), stamp, nowMs, seconds, gauges);
        if (this.byResource && (n > 0 || state.entries.has(OTHER)))
          this.memos.set(list, kept ? { own: kept } : { folded });
        const result: ApplyResult = { dropped, resources: counted };
        if (folded.size > 0) result.folded = folded.size;
        if (!gauges) return result;
        const foldedGauge = this.f.foldedResources;
        if (foldedGauge && (n > 0 || state.entries.has(OTHER)))
          foldedGauge.set(foldedGauge.slot([account]), folded.size);
        this.dropVanishedGauges(state, stamp);
        this.sweepCounters(account, state, nowMs);
        this.f.windows.add(this.f.windows.slot([account]), 1);
        this.f.windowEnd.set(this.f.windowEnd.slot([account]), endMs / 1000);
        if (admission && Object.keys(admission.refused).length > 0) result.refused = admission.refused;
        if (this.truncated > 0) result.truncated = this.truncated;
        return result;
      },
    };
  }

  /** The id a record is ranked under, or undefined when it is not counted as a resource of its own kind. */
  private rankedId(r: TrafficRecord): string | undefined {
    const id = r.resource;
    if (id === undefined || id === '' || (this.resourceAllow && !this.resourceAllow.has(id)))
      return undefined;
    const max = this.limits?.maxLabelLength;
    return max !== undefined && Buffer.byteLength(id) > max ? undefined : id;
  }

  /** `__other__` counts the window's folded sum: counters always, gauges and info with a first read. */
  private countOther(
    account: string,
    state: AccountState,
    record: TrafficRecord,
    stamp: number,
    nowMs: number,
    seconds: number,
    gauges: boolean,
  ): void {
    const other = this.otherOf(account, state);
    other.window = stamp;
    other.lastSeen = nowMs;
    if (gauges) {
      this.setInfo(other, record);
      other.hasGauges = true;
    }
    this.sides.apply('edge', this.f.edge, other.edge, other.base, record.edge, seconds, gauges);
    this.sides.apply('origin', this.f.origin, other.origin, other.base, record.origin, seconds, gauges);
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
    for (const family of [
      this.f.windowEnd,
      this.f.windows,
      this.f.windowSize,
      this.f.revisitEdgeRequests,
      this.f.foldedResources,
    ])
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
}
