/**
 * The landing page's traffic history: per account, the figures of the last HISTORY_WINDOWS windows this process
 * counted (first reads only; re-reads of late data are not shown), and the top resources of the newest window.
 * Kept in memory only, in a fixed ring per account: it starts empty after every restart, and its size does not
 * grow with time or with resources (about 8 KB per account, see HISTORY_BYTES_PER_ACCOUNT).
 *
 * Figures of a window, from the API's answer as the counters take it (docs/upstream-api.md): requests per second
 * (`*_requests_total`, or the sum of the status classes, or of the exact codes, when the API gave no total) over the window's length; the
 * 5xx ratio (`*_status_5xx`, or the exact 5xx codes summed, over requests); the edge cache hit ratio (hit bytes over
 * transferred bytes, or the byte-weighted mean of `edge_hit_ratio` when no hit bytes came); bandwidth in bit/s
 * (the sum of the resources' averages). A figure the answer did not have is NaN, shown as "-".
 */
import type { SideRecord, TrafficRecord, TrafficResponse } from '../traffic/response.js';

/** Windows kept per account: 96 is 8 hours of 5-minute windows. */
export const HISTORY_WINDOWS = 96;
/** Resources kept per list (by traffic, by 5xx) of the newest window. */
export const TOP_RESOURCES = 10;

export const FIGURES = [
  'edgeRequestsPerSecond',
  'edge5xxRatio',
  'cacheHitRatio',
  'bandwidthBitsPerSecond',
  'originRequestsPerSecond',
  'origin5xxRatio',
] as const;
export type Figure = (typeof FIGURES)[number];

/** Bytes one account's history holds at most: the ring of figures and two lists of resources (names up to 64 B). */
export const HISTORY_BYTES_PER_ACCOUNT = HISTORY_WINDOWS * 8 * (FIGURES.length + 2) + 2 * TOP_RESOURCES * 200;

export interface TopResource {
  resource: string;
  name: string;
  bandwidthBitsPerSecond: number;
  requests: number;
  errors5xx: number;
}

/** One account's history, oldest first. */
export interface AccountHistory {
  /** Window starts and ends, ms. */
  starts: number[];
  ends: number[];
  figures: Record<Figure, number[]>;
  /** The newest window's busiest resources, by bandwidth and by 5xx count (empty with breakdown `account`). */
  topByTraffic: TopResource[];
  topBy5xx: TopResource[];
  /** Resources in the newest window. */
  resources: number;
}

interface Ring {
  starts: Float64Array;
  ends: Float64Array;
  figures: Record<Figure, Float64Array>;
  /** Next slot to write. */
  next: number;
  size: number;
  topByTraffic: TopResource[];
  topBy5xx: TopResource[];
  resources: number;
}

function requestsOf(s: SideRecord): number | undefined {
  if (s.requests !== undefined) return s.requests;
  const counts = s.classes.size > 0 ? s.classes : s.codes;
  if (counts.size === 0) return undefined;
  let n = 0;
  for (const v of counts.values()) n += v;
  return n;
}

function errorsOf(s: SideRecord): number | undefined {
  const cls = s.classes.get('5xx');
  if (cls !== undefined) return cls;
  let n = 0;
  let any = false;
  for (const [code, v] of s.codes) {
    if (code.startsWith('5')) {
      n += v;
      any = true;
    }
  }
  return any || s.codes.size > 0 ? n : undefined;
}

/** Sums one side over the records: requests, 5xx (NaN when no record had the figure). */
function sideTotals(records: readonly TrafficRecord[], side: 'edge' | 'origin'): [number, number] {
  let requests = Number.NaN;
  let errors = Number.NaN;
  for (const r of records) {
    const q = requestsOf(r[side]);
    if (q !== undefined) requests = (Number.isNaN(requests) ? 0 : requests) + q;
    const e = errorsOf(r[side]);
    if (e !== undefined) errors = (Number.isNaN(errors) ? 0 : errors) + e;
  }
  return [requests, errors];
}

/** The `n` largest by `key` (ties by resource id), without sorting the whole list. */
function top(list: readonly TopResource[], key: (r: TopResource) => number, n: number): TopResource[] {
  const out: TopResource[] = [];
  for (const r of list) {
    const k = key(r);
    if (!(k > 0)) continue;
    if (out.length === n && k <= key(out[n - 1]!)) continue;
    let i = out.length === n ? n - 1 : out.length;
    while (i > 0 && key(out[i - 1]!) < k) i--;
    out.splice(i, 0, r);
    if (out.length > n) out.pop();
  }
  return out;
}

export class TrafficHistory {
  private readonly rings = new Map<string, Ring>();

  constructor(private readonly capacity = HISTORY_WINDOWS) {}

  /** Records a counted window of `account` (first read). */
  record(account: string, startMs: number, endMs: number, response: TrafficResponse): void {
    const seconds = (endMs - startMs) / 1000;
    if (!(seconds > 0)) return;
    const records = response.records;
    const [edgeRequests, edgeErrors] = sideTotals(records, 'edge');
    const [originRequests, originErrors] = sideTotals(records, 'origin');
    let bandwidth = Number.NaN;
    let hitBytes = 0;
    let hitKnown = false;
    let weightedRatio = 0;
    let ratioBytes = 0;
    const resources: TopResource[] = [];
    for (const r of records) {
      const bits = r.edge.bandwidthBitsPerSecond;
      if (bits !== undefined) bandwidth = (Number.isNaN(bandwidth) ? 0 : bandwidth) + bits;
      if (r.edge.hitBytes !== undefined) {
        hitBytes += r.edge.hitBytes;
        hitKnown = true;
      }
      if (r.edge.hitRatio !== undefined && bits !== undefined) {
        weightedRatio += r.edge.hitRatio * bits;
        ratioBytes += bits;
      }
      if (r.resource !== undefined && r.resource !== '') {
        resources.push({
          resource: r.resource,
          name: r.resourceName ?? '',
          bandwidthBitsPerSecond: bits ?? 0,
          requests: requestsOf(r.edge) ?? 0,
          errors5xx: errorsOf(r.edge) ?? 0,
        });
      }
    }
    const bytes = (bandwidth * seconds) / 8;
    const hitRatio =
      hitKnown && bytes > 0
        ? Math.min(1, hitBytes / bytes)
        : ratioBytes > 0
          ? weightedRatio / ratioBytes
          : Number.NaN;
    const ring = this.ringOf(account);
    const i = ring.next;
    ring.starts[i] = startMs;
    ring.ends[i] = endMs;
    const f = ring.figures;
    f.edgeRequestsPerSecond[i] = edgeRequests / seconds;
    f.edge5xxRatio[i] = edgeRequests > 0 ? edgeErrors / edgeRequests : Number.NaN;
    f.cacheHitRatio[i] = hitRatio;
    f.bandwidthBitsPerSecond[i] = bandwidth;
    f.originRequestsPerSecond[i] = originRequests / seconds;
    f.origin5xxRatio[i] = originRequests > 0 ? originErrors / originRequests : Number.NaN;
    ring.next = (i + 1) % this.capacity;
    ring.size = Math.min(this.capacity, ring.size + 1);
    ring.topByTraffic = top(resources, (r) => r.bandwidthBitsPerSecond, TOP_RESOURCES);
    ring.topBy5xx = top(resources, (r) => r.errors5xx, TOP_RESOURCES);
    ring.resources = records.length;
  }

  /** The account's history, oldest first; undefined when no window of it was counted since the start. */
  get(account: string): AccountHistory | undefined {
    const ring = this.rings.get(account);
    if (!ring || ring.size === 0) return undefined;
    const order: number[] = [];
    const first = (ring.next - ring.size + this.capacity) % this.capacity;
    for (let k = 0; k < ring.size; k++) order.push((first + k) % this.capacity);
    const figures = {} as Record<Figure, number[]>;
    for (const name of FIGURES) figures[name] = order.map((i) => ring.figures[name][i]!);
    return {
      starts: order.map((i) => ring.starts[i]!),
      ends: order.map((i) => ring.ends[i]!),
      figures,
      topByTraffic: ring.topByTraffic,
      topBy5xx: ring.topBy5xx,
      resources: ring.resources,
    };
  }

  /** The account is no longer polled. */
  remove(account: string): void {
    this.rings.delete(account);
  }

  private ringOf(account: string): Ring {
    let ring = this.rings.get(account);
    if (!ring) {
      const figures = {} as Record<Figure, Float64Array>;
      for (const name of FIGURES) figures[name] = new Float64Array(this.capacity);
      ring = {
        starts: new Float64Array(this.capacity),
        ends: new Float64Array(this.capacity),
        figures,
        next: 0,
        size: 0,
        topByTraffic: [],
        topBy5xx: [],
        resources: 0,
      };
      this.rings.set(account, ring);
    }
    return ring;
  }
}
