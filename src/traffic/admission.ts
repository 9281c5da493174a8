/**
 * Series admission under limits (issue 15): which new resources of one traffic answer TrafficMapping (./mapping.ts)
 * gives series of their own, and which it does not so that no cap on series is passed. With breakdown `resource`
 * (issue 35) those are folded into `__other__` (./fold.ts): their traffic is counted all the same; only a resource
 * id over `max_label_length` is refused. With breakdown `account` (one entry per account) a cap refuses.
 */
import { overLength, type RefusalReason } from '../store/limits.js';
import type { TrafficRecord } from './response.js';

/**
 * Caps on what answers may create. The unit refused is a resource: all the series a new resource would create,
 * or none of them, so no resource is ever half-exported. Resources already exported always update (their
 * counters stay exact); a known resource may still gain a series for a status code it had not answered before,
 * so the caps may be passed by those few.
 */
export interface SeriesLimits {
  /** Series in the whole store (every family, every API). */
  maxSeries: number;
  /** Traffic series of one account. */
  maxSeriesPerAccount: number;
  /** UTF-8 bytes of a label value: a longer resource id is refused, a longer name or cname truncated. */
  maxLabelLength: number;
  /** Series the store holds now. */
  storeSize(): number;
  /** `limits.top_resources` (issue 35): resources with series of their own per account; 0 or absent: no limit. */
  topResources?: number;
  /** `limits.top_resources_period` (ms): the trailing period the ranking covers; absent: a day. */
  topResourcesPeriodMs?: number;
  /** Per configured account, its `top_resources` (its own, or limits'). */
  topResourcesByAccount?: Readonly<Record<string, number>>;
  /** Of a discovered account: `accounts_discovery.top_resources`, or limits'. */
  topResourcesDiscovered?: number;
}

/** The resources of an answer refused (not counted) or folded (counted under `__other__`). */
export interface Admission {
  /** Refused: not counted at all. */
  ids: Set<string>;
  /** What the refused would have created, by reason; empty: none refused. */
  refused: Partial<Record<RefusalReason, number>>;
  /** New resources a full cap sends to `__other__` (breakdown `resource` only). */
  folded: Set<string>;
}

/** What admission takes from the mapping's settings (fixed for its life). */
export interface AdmissionScope {
  /** No caps: every resource is admitted. */
  limits: SeriesLimits | undefined;
  /** Breakdown `resource`: one entry per resource id; otherwise one per account, id ''. */
  byResource: boolean;
  /** Resource ids to keep; undefined: all. */
  resourceAllow: ReadonlySet<string> | undefined;
  /** Each resource has an info series. */
  resourceInfo: boolean;
  /** Window gauges are exported beside the counters. */
  windowGauges: boolean;
}

/**
 * Which new resources of this answer are refused or folded, or undefined when none is. Deterministic for a given
 * answer and store: new resources are taken in the order of their ids (not of their place in the answer, nor
 * of arrival), each with as many series as its record would create, until a cap is reached; the rest are
 * folded (breakdown `resource`) or refused. Such a resource is looked at again in the next window, so freed room
 * is used. `known`: resources not to admit (they have series, or are folded anyway).
 */
export function admitResources(
  scope: AdmissionScope,
  known: (id: string) => boolean,
  ownSeries: () => number,
  list: readonly TrafficRecord[],
): Admission | undefined {
  const limits = scope.limits;
  if (!limits) return undefined;
  const ids = new Set<string>();
  const folded = new Set<string>();
  const refused: Partial<Record<RefusalReason, number>> = {};
  const fresh: { id: string; cost: number }[] = [];
  const seen = new Set<string>();
  let cost = 0;
  for (const record of list) {
    let id = '';
    if (scope.byResource) {
      const rid = record.resource;
      if (rid === undefined || rid === '' || (scope.resourceAllow && !scope.resourceAllow.has(rid))) continue;
      id = rid;
    }
    if (known(id) || seen.has(id)) continue;
    seen.add(id);
    const n = estimateSeries(scope, record);
    if (overLength(id, limits.maxLabelLength)) {
      ids.add(id);
      refused.label_too_long = (refused.label_too_long ?? 0) + n;
      continue;
    }
    fresh.push({ id, cost: n });
    cost += n;
  }
  if (fresh.length > 0) {
    const total = limits.maxSeries - limits.storeSize();
    const own = limits.maxSeriesPerAccount - ownSeries();
    const budget = Math.min(total, own);
    if (cost > budget) {
      const reason: RefusalReason = own < total ? 'max_series_per_account' : 'max_series';
      fresh.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      let used = 0;
      let full = false;
      for (const r of fresh) {
        if (!full && used + r.cost <= budget) {
          used += r.cost;
          continue;
        }
        full = true;
        if (scope.byResource) folded.add(r.id);
        else {
          ids.add(r.id);
          refused[reason] = (refused[reason] ?? 0) + r.cost;
        }
      }
    }
  }
  return ids.size > 0 || folded.size > 0 ? { ids, refused, folded } : undefined;
}

/** Series a record of a new resource creates at most (the allow-list is not looked at: an upper bound). */
function estimateSeries(scope: AdmissionScope, record: TrafficRecord): number {
  let n = scope.byResource && scope.resourceInfo ? 1 : 0;
  for (const r of [record.edge, record.origin]) {
    const counters =
      r.codes.size +
      r.classes.size +
      (r.requests !== undefined ? 1 : 0) +
      (r.bandwidthBitsPerSecond !== undefined ? 1 : 0) +
      (r.hitBytes !== undefined ? 1 : 0);
    n += counters + (r.bandwidthBitsPerSecond !== undefined ? 1 : 0) + r.requestTimeSeconds.size;
    n += r.hitRatio !== undefined ? 1 : 0;
    if (scope.windowGauges) n += counters;
  }
  return n;
}
