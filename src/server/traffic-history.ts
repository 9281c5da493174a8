/**
 * The landing page's traffic history: per account, the figures of the last HISTORY_WINDOWS windows this process
 * counted, each provisional or final, and the top resources of the newest window. Kept in memory only, in a fixed
 * ring per account: it starts empty after every restart, and its size does not grow with time or with resources
 * (about 8 KB per account, see HISTORY_BYTES_PER_ACCOUNT).
 *
 * Provisional and final (`metrics.revisit`, src/traffic/pipeline.ts `windowCounted` and `windowSettled`):
 * - `record` takes a window's first read: its entry is provisional, still open to late data.
 * - `settle` takes a window's final answer: the revisit of one or more recorded windows (a revisit merges
 *   neighbours: its [start, end) may span several recorded windows), or, right after `record` with the same
 *   bounds and answer, a first read that will not be revisited (revisit off, or read once final).
 *   The recorded entries inside [start, end) are replaced by ONE final entry over [start, end), with the figures
 *   of the final answer: every entry's figures are those of its own [start, end), never a share of a longer
 *   window's. A revisit of two 1-minute windows as one 2-minute window thus leaves one 2-minute entry.
 *   Recorded entries that only partly overlap [start, end) are left as they are (the pipeline never revisits
 *   part of a first read). A settle that covers no entry (its windows aged out of the ring, were counted before
 *   this process started, or were never recorded) changes nothing.
 * - A window whose revisit is skipped (the API refused it, reason `revisit`) keeps its first read and stays
 *   provisional: it has no final answer.
 *
 * Figures of a window, from the API's answer as the counters take it (docs/upstream-api.md): requests per second
 * (`*_requests_total`, or the sum of the status classes, or of the exact codes, when the API gave no total) over the window's length; the
 * 5xx ratio (`*_status_5xx`, or the exact 5xx codes summed, over requests); the edge cache hit ratio (hit bytes over
 * transferred bytes, or the byte-weighted mean of `edge_hit_ratio` when no hit bytes came); bandwidth in bit/s
 * (the sum of the resources' averages). A figure the answer did not have is NaN, shown as "-".
 *
 * Folded resources (limits.top_resources or a full series cap, docs/metrics.md "Bounded series: top resources and
 * `__other__`"): the top lists show what /metrics shows. A resource the `fold` decision (TrafficMapping.foldOf)
 * says was counted under `resource="__other__"` is never listed on its own: the folded resources of the window are
 * one entry (`folded`: how many), ranked by their sums like any resource. Without a decision only a record the API
 * itself names `__other__` is folded (the mapping folds it too). The window's figures count every record alike.
 */
import { OTHER } from '../traffic/fold.js';
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

/**
 * Bytes one account's history holds at most: the ring of figures and bounds (8 B each), the provisional flags (1 B
 * each) and two lists of resources (names up to 64 B).
 */
export const HISTORY_BYTES_PER_ACCOUNT =
  HISTORY_WINDOWS * (8 * (FIGURES.length + 2) + 1) + 2 * TOP_RESOURCES * 200;

export interface TopResource {
  /** The resource id; '' for the folded entry. */
  resource: string;
  name: string;
  bandwidthBitsPerSecond: number;
  requests: number;
  errors5xx: number;
  /** Present on the one entry that stands for the window's folded resources: how many they are (> 0). */
  folded?: number;
}

/**
 * Whether `resource` of `account` was counted under `resource="__other__"` in the answer whose records are
 * `records` (TrafficMapping.foldOf, asked after the answer was counted).
 */
export type FoldDecision = (account: string, resource: string, records: readonly TrafficRecord[]) => boolean;

/** Without a decision: only what the API itself names `__other__`. */
const API_OTHER: FoldDecision = (_account, resource) => resource === OTHER;

/** One account's history, oldest first. */
export interface AccountHistory {
  /** Window starts and ends, ms. */
  starts: number[];
  ends: number[];
  figures: Record<Figure, number[]>;
  /** Per window: true while it holds its first read only (still open to late data), false once final. */
  provisional: boolean[];
  /** The newest window's busiest resources, by bandwidth and by 5xx count (empty with breakdown `account`). */
  topByTraffic: TopResource[];
  topBy5xx: TopResource[];
  /** Resources in the newest window. */
  resources: number;
  /** Of them, those counted under `__other__` (0: none). */
  folded: number;
}

interface Ring {
  starts: Float64Array;
  ends: Float64Array;
  figures: Record<Figure, Float64Array>;
  /** 1: provisional (recorded, not settled). */
  provisional: Uint8Array;
  /** Next slot to write. */
  next: number;
  size: number;
  topByTraffic: TopResource[];
  topBy5xx: TopResource[];
  resources: number;
  folded: number;
  /**
   * The newest `record`'s bounds and answer (held weakly: never kept alive for this), so that its `settle` with
   * the same answer, right after it, only clears the flag instead of reading the answer a second time.
   */
  last?: { start: number; end: number; response: WeakRef<TrafficResponse> };
}

/** A window's figures, in FIGURES order, and what the newest window's lists need. */
interface Summary {
  values: number[];
  topByTraffic: TopResource[];
  topBy5xx: TopResource[];
  resources: number;
  folded: number;
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

/** A top list's item: a record (made a TopResource only if it stays in the list), or the folded entry. */
type Ranked = TrafficRecord | TopResource;

/** The `n` items with the largest keys (over 0; ties: the first seen), kept sorted as they are offered. */
class TopList {
  private readonly keys: number[] = [];
  private readonly items: Ranked[] = [];

  constructor(private readonly n: number) {}

  offer(key: number, record: Ranked): void {
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

  get list(): TopResource[] {
    return this.items.map((x) => ('edge' in x ? topResource(x) : x));
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

/** The figures of `response` as `account`'s answer for a window of `seconds` (> 0), in one pass over its records. */
function summarize(account: string, response: TrafficResponse, seconds: number, fold: FoldDecision): Summary {
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
  // The folded resources' sums: one entry of the top lists.
  let folded = 0;
  let foldedBits: number | undefined;
  let foldedRequests = 0;
  let foldedErrors: number | undefined;
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
      if (fold(account, r.resource, records)) {
        folded++;
        if (bits !== undefined) foldedBits = (foldedBits ?? 0) + bits;
        foldedRequests += requests ?? 0;
        if (errors !== undefined) foldedErrors = (foldedErrors ?? 0) + errors;
        continue;
      }
      if (bits !== undefined) byTraffic.offer(bits, r);
      if (errors !== undefined) by5xx.offer(errors, r);
    }
  }
  if (folded > 0) {
    // Offered last: a resource with the same figure ranks before it.
    const entry: TopResource = {
      resource: '',
      name: '',
      bandwidthBitsPerSecond: foldedBits ?? 0,
      requests: foldedRequests,
      errors5xx: foldedErrors ?? 0,
      folded,
    };
    if (foldedBits !== undefined) byTraffic.offer(foldedBits, entry);
    if (foldedErrors !== undefined) by5xx.offer(foldedErrors, entry);
  }
  const bytes = (bandwidth * seconds) / 8;
  const hitRatio =
    hitKnown && bytes > 0
      ? Math.min(1, hitBytes / bytes)
      : ratioBytes > 0
        ? weightedRatio / ratioBytes
        : Number.NaN;
  const byName: Record<Figure, number> = {
    edgeRequestsPerSecond: edgeRequests / seconds,
    edge5xxRatio: edgeRequests > 0 ? edgeErrors / edgeRequests : Number.NaN,
    cacheHitRatio: hitRatio,
    bandwidthBitsPerSecond: bandwidth,
    originRequestsPerSecond: originRequests / seconds,
    origin5xxRatio: originRequests > 0 ? originErrors / originRequests : Number.NaN,
  };
  return {
    values: FIGURES.map((f) => byName[f]),
    topByTraffic: byTraffic.list,
    topBy5xx: by5xx.list,
    resources: records.length,
    folded,
  };
}

export class TrafficHistory {
  private readonly rings = new Map<string, Ring>();
  private fold: FoldDecision = API_OTHER;

  constructor(private readonly capacity = HISTORY_WINDOWS) {}

  /**
   * Where the exporter counted each resource (TrafficMapping.foldOf), so that the top lists show the folded
   * resources as /metrics does: as one entry. Asked for the windows recorded or settled from then on.
   */
  foldBy(decision: FoldDecision): void {
    this.fold = (account, resource, records) => resource === OTHER || decision(account, resource, records);
  }

  /** Records a counted window of `account` (its first read): a new provisional entry, the newest. */
  record(account: string, startMs: number, endMs: number, response: TrafficResponse): void {
    const seconds = (endMs - startMs) / 1000;
    if (!(seconds > 0)) return;
    const summary = summarize(account, response, seconds, this.fold);
    const ring = this.ringOf(account);
    const i = ring.next;
    this.write(ring, i, startMs, endMs, summary.values, true);
    ring.next = (i + 1) % this.capacity;
    ring.size = Math.min(this.capacity, ring.size + 1);
    this.newest(ring, summary);
    ring.last = { start: startMs, end: endMs, response: new WeakRef(response) };
  }

  /**
   * A window's final answer (its revisit, or its first read when it is not revisited): the recorded entries
   * inside [startMs, endMs) become one final entry over [startMs, endMs) with this answer's figures (see the
   * contract at the top of this file). Nothing recorded inside it: nothing changes.
   */
  settle(account: string, startMs: number, endMs: number, response: TrafficResponse): void {
    const seconds = (endMs - startMs) / 1000;
    const ring = this.rings.get(account);
    if (!ring || ring.size === 0 || !(seconds > 0)) return;
    // The covered entries, in counting order: a contiguous run, as entries are in time order.
    let from = -1;
    let to = -1;
    for (let k = 0; k < ring.size; k++) {
      const i = this.slot(ring, k);
      if (ring.starts[i]! >= startMs && ring.ends[i]! <= endMs) {
        if (from < 0) from = k;
        to = k;
      }
    }
    if (from < 0) return;
    const newestCovered = to === ring.size - 1;
    const only = this.slot(ring, from);
    const last = ring.last;
    if (
      from === to &&
      ring.starts[only] === startMs &&
      ring.ends[only] === endMs &&
      last?.start === startMs &&
      last.end === endMs &&
      last.response.deref() === response
    ) {
      // The answer `record` just read: its figures are these.
      ring.provisional[only] = 0;
      return;
    }
    const summary = summarize(account, response, seconds, this.fold);
    this.write(ring, only, startMs, endMs, summary.values, false);
    // The other covered entries go: the entries after them move down by as many.
    const gone = to - from;
    if (gone > 0) {
      for (let k = to + 1; k < ring.size; k++) this.move(ring, this.slot(ring, k), this.slot(ring, k - gone));
      ring.size -= gone;
      ring.next = (ring.next - gone + this.capacity) % this.capacity;
    }
    if (newestCovered) this.newest(ring, summary);
    if (newestCovered || gone > 0) ring.last = undefined;
  }

  /** The account's history, oldest first; undefined when no window of it was counted since the start. */
  get(account: string): AccountHistory | undefined {
    const ring = this.rings.get(account);
    if (!ring || ring.size === 0) return undefined;
    const order: number[] = [];
    for (let k = 0; k < ring.size; k++) order.push(this.slot(ring, k));
    const figures = {} as Record<Figure, number[]>;
    for (const name of FIGURES) figures[name] = order.map((i) => ring.figures[name][i]!);
    return {
      starts: order.map((i) => ring.starts[i]!),
      ends: order.map((i) => ring.ends[i]!),
      figures,
      provisional: order.map((i) => ring.provisional[i] === 1),
      topByTraffic: ring.topByTraffic,
      topBy5xx: ring.topBy5xx,
      resources: ring.resources,
      folded: ring.folded,
    };
  }

  /** The account is no longer polled. */
  remove(account: string): void {
    this.rings.delete(account);
  }

  /** The ring slot of the `k`-th entry, oldest first. */
  private slot(ring: Ring, k: number): number {
    return (ring.next - ring.size + k + 2 * this.capacity) % this.capacity;
  }

  private write(
    ring: Ring,
    i: number,
    start: number,
    end: number,
    values: readonly number[],
    provisional: boolean,
  ): void {
    ring.starts[i] = start;
    ring.ends[i] = end;
    FIGURES.forEach((f, j) => {
      ring.figures[f][i] = values[j]!;
    });
    ring.provisional[i] = provisional ? 1 : 0;
  }

  private move(ring: Ring, from: number, to: number): void {
    ring.starts[to] = ring.starts[from]!;
    ring.ends[to] = ring.ends[from]!;
    for (const f of FIGURES) ring.figures[f][to] = ring.figures[f][from]!;
    ring.provisional[to] = ring.provisional[from]!;
  }

  private newest(ring: Ring, s: Summary): void {
    ring.topByTraffic = s.topByTraffic;
    ring.topBy5xx = s.topBy5xx;
    ring.resources = s.resources;
    ring.folded = s.folded;
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
        provisional: new Uint8Array(this.capacity),
        next: 0,
        size: 0,
        topByTraffic: [],
        topBy5xx: [],
        resources: 0,
        folded: 0,
      };
      this.rings.set(account, ring);
    }
    return ring;
  }
}
