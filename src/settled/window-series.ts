/**
 * One settled window's answer as the series it feeds, with the family names and labels `/metrics` has
 * (docs/metrics.md, "Traffic"): the window's counts (what each counter adds) and its gauges (bandwidth, cache hit
 * ratio, medians). Pure: no I/O, no state. The same rules as the scraped side's mapping (src/traffic/mapping.ts):
 * `metrics.metrics` and `metrics.resources` allow-lists, `metrics.breakdown`, a record without a resource id
 * under breakdown `resource` dropped, a resource listed twice in one answer counted once, a resource id longer
 * than `limits.max_label_length` left out (the scraped side refuses its series: `label_too_long`), bytes
 * transferred as bandwidth x seconds / 8 rounded to whole bytes.
 *
 * Folding (issue 35, src/traffic/fold.ts): with a `fold` hook, the resources it names are written as one
 * `resource="__other__"` series per family, as on /metrics: counters the sum of theirs, bandwidth the sum, the hit
 * ratio from the byte sums, no median. The hook is asked with the answer's records, the very answer the scraped
 * side counted (a window start alone cannot tell a first read from the revisit of a span that starts there).
 */
import type { Breakdown, Side } from '../api/vocabulary.js';
import { overLength } from '../store/limits.js';
import { type FoldedSide, FoldSum, OTHER } from '../traffic/fold.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../traffic/response.js';

export interface WindowSeriesOptions {
  breakdown: Breakdown;
  /** `metrics.metrics`: API metric names; empty: all. */
  metrics: readonly string[];
  /** `metrics.resources`: resource ids; empty: all. */
  resources: readonly string[];
  /** `limits.max_label_length`. */
  maxLabelLength: number;
  /** Labels every series ends with (job, instance, external labels). */
  extraLabels?: readonly (readonly [string, string])[];
  /**
   * Whether `resource` of `account` is counted under `__other__` in the answer of `records` (the scraped side's
   * decision: TrafficMapping.foldOf); absent: nothing is folded. Breakdown `resource` only.
   */
  fold?: (account: string, resource: string, records: readonly TrafficRecord[]) => boolean;
}

export type PointKind = 'counter' | 'gauge';

/** One series' value in one window: for a counter what the window adds, for a gauge its value at the window end. */
export interface WindowPoint {
  /** The family name and label values, one string: the series' identity (its running total's key). */
  key: string;
  family: string;
  /**
   * Every label: `__name__`, the family's in its order (account, resource, then code/class/size_range), then the
   * extra labels.
   */
  labels: readonly (readonly [string, string])[];
  kind: PointKind;
  value: number;
}

/** Joins a key's parts: a byte no family name or label value the exporter writes contains. */
const SEP = '\u0000';

export class WindowSeries {
  private readonly metricAllow: ReadonlySet<string> | undefined;
  private readonly resourceAllow: ReadonlySet<string> | undefined;
  /** The folded records of a window taken in parts, by its `seen` set: written once its last part is taken. */
  private readonly folded = new WeakMap<Set<string>, FoldSum>();

  constructor(private readonly o: WindowSeriesOptions) {
    this.metricAllow = o.metrics.length ? new Set(o.metrics) : undefined;
    this.resourceAllow = o.resources.length ? new Set(o.resources) : undefined;
  }

  private allowed(name: string): boolean {
    return this.metricAllow === undefined || this.metricAllow.has(name);
  }

  /** The points of the window [startMs, endMs) of `account`, in the answer's order. */
  points(account: string, startMs: number, endMs: number, response: TrafficResponse): WindowPoint[] {
    const records = response.records;
    return this.pointsOf(account, (endMs - startMs) / 1000, records, 0, records.length, new Set());
  }

  /**
   * The points of `records[from, to)` of a window `seconds` long; `seen` holds the resources met so far in the
   * window (pass the same set for every part of one answer), so a window can be taken a part at a time.
   */
  pointsOf(
    account: string,
    seconds: number,
    records: readonly TrafficRecord[],
    from: number,
    to: number,
    seen: Set<string>,
  ): WindowPoint[] {
    const out: WindowPoint[] = [];
    const byResource = this.o.breakdown === 'resource';
    const fold = byResource ? this.o.fold : undefined;
    const end = Math.min(to, records.length);
    for (let i = from; i < end; i++) {
      const record = records[i]!;
      let base: (readonly [string, string])[];
      if (byResource) {
        const id = record.resource;
        if (id === undefined || id === '') continue;
        if (this.resourceAllow && !this.resourceAllow.has(id)) continue;
        if (overLength(id, this.o.maxLabelLength) || seen.has(id)) continue;
        seen.add(id);
        if (fold && (id === OTHER || fold(account, id, records))) {
          let sum = this.folded.get(seen);
          if (!sum) {
            sum = new FoldSum(seconds);
            this.folded.set(seen, sum);
          }
          sum.add(record);
          continue;
        }
        base = [
          ['account', account],
          ['resource', id],
        ];
      } else {
        if (seen.has('')) continue;
        seen.add('');
        base = [['account', account]];
      }
      this.side(out, 'edge', base, record.edge, seconds);
      this.side(out, 'origin', base, record.origin, seconds);
    }
    const sum = end >= records.length ? this.folded.get(seen) : undefined;
    if (sum) {
      this.folded.delete(seen);
      const other = sum.record();
      const base: [string, string][] = [
        ['account', account],
        ['resource', OTHER],
      ];
      this.side(out, 'edge', base, other.edge, seconds);
      this.side(out, 'origin', base, other.origin, seconds);
    }
    return out;
  }

  private side(
    out: WindowPoint[],
    side: Side,
    base: readonly (readonly [string, string])[],
    r: SideRecord,
    seconds: number,
  ): void {
    const tail = this.o.extraLabels ?? [];
    const prefix = base.map(([, v]) => v).join(SEP);
    const push = (family: string, kind: PointKind, value: number, extra?: readonly [string, string]) => {
      const labels: (readonly [string, string])[] = [['__name__', family], ...base];
      if (extra) labels.push(extra);
      // One flat string (a `+=` chain would keep a rope of pieces per key, several times the memory).
      const key = extra ? `${family}${SEP}${prefix}${SEP}${extra[1]}` : `${family}${SEP}${prefix}`;
      for (const l of tail) labels.push(l);
      out.push({ key, family, labels, kind, value });
    };
    for (const [code, n] of r.codes)
      if (this.allowed(`${side}_status_${code}`))
        push(`cdn_${side}_responses_total`, 'counter', n, ['code', code]);
    for (const [cls, n] of r.classes)
      if (this.allowed(`${side}_status_${cls}`))
        push(`cdn_${side}_responses_by_class_total`, 'counter', n, ['class', cls]);
    if (r.requests !== undefined && this.allowed(`${side}_requests_total`))
      push(`cdn_${side}_requests_total`, 'counter', r.requests);
    if (r.bandwidthBitsPerSecond !== undefined && this.allowed(`${side}_bandwidth`)) {
      push(
        `cdn_${side}_transferred_bytes_total`,
        'counter',
        (r as FoldedSide).transferredBytes ?? Math.round((r.bandwidthBitsPerSecond * seconds) / 8),
      );
      push(`cdn_${side}_bandwidth_bytes_per_second`, 'gauge', r.bandwidthBitsPerSecond / 8);
    }
    if (this.allowed(`${side}_request_time`))
      for (const [range, v] of r.requestTimeSeconds)
        push(`cdn_${side}_request_duration_median_seconds`, 'gauge', v, ['size_range', range]);
    if (side === 'edge') {
      if (r.hitBytes !== undefined && this.allowed('edge_hit_bytes'))
        push('cdn_edge_cache_hit_bytes_total', 'counter', r.hitBytes);
      if (r.hitRatio !== undefined && this.allowed('edge_hit_ratio'))
        push('cdn_edge_cache_hit_ratio', 'gauge', r.hitRatio);
    }
  }
}
