/**
 * Folding (docs/metrics.md, "Bounded series: top resources and `__other__`"): the resources of an account that do
 * not keep series of their own (outside its `limits.top_resources`, or new while a series cap is full) are counted
 * together under `resource="__other__"`. This file holds what the scraped side (./mapping.ts) and the settled side
 * (src/settled/window-series.ts) share: the label value, and the sum of a window's folded records as one record.
 *
 * The sum is exact for what adds: counts, requests, hit bytes, and the bytes transferred, which are each record's
 * bytes rounded as its own series would round them (`transferredBytes`), so `__other__` adds to the byte what the
 * folded resources would have. Bandwidth is the sum of the bandwidths. The cache hit ratio is the hit bytes over
 * the bytes of the folded records, given only when every folded record with a hit ratio also has both byte
 * figures (a ratio cannot be averaged without them). No median: a median of medians is not the median of anything.
 */
import type { SideRecord, TrafficRecord } from './response.js';

/** The `resource` label of the folded series. A resource the API calls so is folded too (never its own series). */
export const OTHER = '__other__';

/** A side record of a folded sum: `transferredBytes` is the sum of each folded record's rounded bytes. */
export interface FoldedSide extends SideRecord {
  transferredBytes?: number;
}

/** The bytes one side record stands for over `seconds`, as its series count them (rounded to whole bytes). */
export function sideBytes(r: SideRecord, seconds: number): number | undefined {
  const bw = r.bandwidthBitsPerSecond;
  return bw === undefined ? undefined : Math.round((bw * seconds) / 8);
}

class SideSum {
  readonly codes = new Map<string, number>();
  readonly classes = new Map<string, number>();
  requests: number | undefined;
  bandwidth: number | undefined;
  bytes: number | undefined;
  hitBytes: number | undefined;
  /** Hit bytes and bytes of the records that have both (for the hit ratio). */
  ratioHit = 0;
  ratioBytes = 0;
  /** Records with a hit ratio; and whether each of them had both byte figures. */
  withRatio = 0;
  ratioComplete = true;

  add(r: SideRecord, seconds: number): void {
    for (const [k, n] of r.codes) this.codes.set(k, (this.codes.get(k) ?? 0) + n);
    for (const [k, n] of r.classes) this.classes.set(k, (this.classes.get(k) ?? 0) + n);
    if (r.requests !== undefined) this.requests = (this.requests ?? 0) + r.requests;
    const bytes = (r as FoldedSide).transferredBytes ?? sideBytes(r, seconds);
    if (r.bandwidthBitsPerSecond !== undefined) {
      this.bandwidth = (this.bandwidth ?? 0) + r.bandwidthBitsPerSecond;
      this.bytes = (this.bytes ?? 0) + (bytes ?? 0);
    }
    if (r.hitBytes !== undefined) this.hitBytes = (this.hitBytes ?? 0) + r.hitBytes;
    if (r.hitRatio !== undefined) {
      this.withRatio++;
      if (r.hitBytes === undefined || bytes === undefined) this.ratioComplete = false;
      else {
        this.ratioHit += r.hitBytes;
        this.ratioBytes += bytes;
      }
    }
  }

  record(): FoldedSide {
    const out: FoldedSide = { codes: this.codes, classes: this.classes, requestTimeSeconds: new Map() };
    if (this.requests !== undefined) out.requests = this.requests;
    if (this.bandwidth !== undefined) {
      out.bandwidthBitsPerSecond = this.bandwidth;
      out.transferredBytes = this.bytes ?? 0;
    }
    if (this.hitBytes !== undefined) out.hitBytes = this.hitBytes;
    if (this.withRatio > 0 && this.ratioComplete)
      out.hitRatio = this.ratioBytes > 0 ? this.ratioHit / this.ratioBytes : 0;
    return out;
  }
}

/** The folded records of one window, summed; `record()` is what `__other__` counts for it. */
export class FoldSum {
  private readonly edge = new SideSum();
  private readonly origin = new SideSum();
  /** Distinct resources folded. */
  resources = 0;

  constructor(private readonly seconds: number) {}

  add(record: TrafficRecord): void {
    this.resources++;
    this.edge.add(record.edge, this.seconds);
    this.origin.add(record.origin, this.seconds);
  }

  /** Adds only some counters of one side (a revisit: ./mapping.ts routes each series on its own). */
  addCounter(side: 'edge' | 'origin', part: SideRecord): void {
    (side === 'edge' ? this.edge : this.origin).add(part, this.seconds);
  }

  record(): TrafficRecord {
    return {
      resource: OTHER,
      resourceName: '',
      cname: '',
      edge: this.edge.record(),
      origin: this.origin.record(),
    };
  }
}
