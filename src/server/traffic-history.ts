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

/** The `n` records with the largest keys (over 0; ties: the first seen), kept sorted as they are offered. */
class TopList {
  private readonly keys: number[] = [];
  private readonly items: TrafficRecord[] = [];

  constructor(private readonly n: number) {}

  offer(key: number, record: TrafficRecord): void {
    const { keys, items, n } = this;
    if (!(key > 0) || (keys.length === n && key <= keys[n - 1]!)) return;
    let i = keys.length;
    while (i > 0 && keys[i - 1]! < key) i--;
    keys.splice(i, 0, key);
    items.splice(i, 0, record);
    if (keys.length > n) {
      keys.pop();
      items.pop();
    }
  }

  get records(): readonly TrafficRecord[] {
    return this.items;
  }
}

/** NaN + x is x: a sum of the records that had the figure, NaN when none had it. */
const add = (sum: number, v: number | undefined): number =>
  v === undefined ? sum : (Number.isNaN(sum) ? 0 : sum) + v;

function topResource(r: TrafficRecord): TopResource {
  return {
    resource: r.resource ?? '',
    name: r.resourceName ?? '',
    bandwidthBitsPerSecond: r.edge.bandwidthBitsPerSecond ?? 0,
    requests: requestsOf(r.edge) ?? 0,
    errors5xx: errorsOf(r.edge) ?? 0,
  };
}

export class TrafficHistory {
  private readonly rings = new Map<string, Ring>();

  constructor(private readonly capacity = HISTORY_WINDOWS) {}

  /** Records a counted window of `account` (first read). */
  record(account: string, startMs: number, endMs: number, response: TrafficResponse): void {
    const seconds = (endMs - startMs) / 1000;
    if (!(seconds > 0)) return;
    const records = response.records;
    let edgeRequests = Number.NaN;
    let edgeErrors = Number.NaN;
    let originRequests = Number.NaN;
    let originErrors = Number.NaN;
    let bandwidth = Number.NaN;
    let hitBytes = 0;
    let hitKnown = false;
    let weightedRatio = 0;
    let ratioBytes = 0;
    const byTraffic = new TopList(TOP_RESOURCES);
    const by5xx = new TopList(TOP_RESOURCES);
    // One pass; objects only for the resources that make a top list.
    for (const r of records) {
      const requests = requestsOf(r.edge);
      const errors = errorsOf(r.edge);
      edgeRequests = add(edgeRequests, requests);
      edgeErrors = add(edgeErrors, errors);
      originRequests = add(originRequests, requestsOf(r.origin));
      originErrors = add(originErrors, errorsOf(r.origin));
      const bits = r.edge.bandwidthBitsPerSecond;
      bandwidth = add(bandwidth, bits);
      if (r.edge.hitBytes !== undefined) {
        hitBytes += r.edge.hitBytes;
        hitKnown = true;
      }
      if (r.edge.hitRatio !== undefined && bits !== undefined) {
        weightedRatio += r.edge.hitRatio * bits;
        ratioBytes += bits;
      }
      if (r.resource !== undefined && r.resource !== '') {
        if (bits !== undefined) byTraffic.offer(bits, r);
        if (errors !== undefined) by5xx.offer(errors, r);
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
    ring.topByTraffic = byTraffic.records.map(topResource);
    ring.topBy5xx = by5xx.records.map(topResource);
    ring.resources = records.length;
  }

  /** A window's final answer (its re-read, or its first read when it is not read again). */
  settle(_account: string, _startMs: number, _endMs: number, _response: TrafficResponse): void {}

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
