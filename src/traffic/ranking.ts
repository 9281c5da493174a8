/**
 * The ranking behind `limits.top_resources` (docs/metrics.md, "Bounded series: top resources and `__other__`"):
 * per account, each resource's edge traffic over a trailing period (`limits.top_resources_period`, a day by
 * default), and the N resources with the most of it. Shard-local: a replica ranks the accounts it polls, from the
 * windows it counts.
 *
 * The period is kept as BUCKETS slices of period / BUCKETS each (an hour at a day), a ring per account: a window's
 * traffic goes to the slice its start falls in, and a slice older than the period is cleared when time moves past
 * it, so the score covers the trailing period to within one slice. A resource absent from every answer for the
 * whole period is forgotten. Memory: one Float32Array row of BUCKETS per resource seen in the period, an Int32 of
 * when it was last seen, and its id in a Map (about 210 bytes per resource: `npm run bench`, suite `ranking`).
 *
 * "Edge traffic" is the edge bytes of a record (edge_bandwidth x window seconds / 8); an answer without edge
 * bandwidth ranks by edge requests. Ties go to the smaller id, so the top N is a function of the traffic alone.
 */
import type { TrafficRecord } from './response.js';

/** Slices of the trailing period. */
export const BUCKETS = 24;

/** One account's ring: rows of BUCKETS values, one row per resource. */
class AccountRanking {
  ids: string[] = [];
  readonly index = new Map<string, number>();
  traffic = new Float32Array(64 * BUCKETS);
  /** The slice (absolute number) each resource was last seen in. */
  seen = new Int32Array(64);
  /** The newest slice counted (absolute number); -Infinity: none yet. */
  newest = Number.NEGATIVE_INFINITY;
  /** End (ms) of the newest window fed: an older window given again (after a restart) is not counted twice. */
  fedThrough = Number.NEGATIVE_INFINITY;
  /** The top set last computed, and for which N; undefined: to be computed again. */
  top: ReadonlySet<string> | undefined;
  topN = 0;

  rowOf(id: string, slice: number): number {
    let i = this.index.get(id);
    if (i === undefined) {
      i = this.ids.length;
      this.ids.push(id);
      this.index.set(id, i);
      if (i >= this.seen.length) this.grow();
      this.traffic.fill(0, i * BUCKETS, (i + 1) * BUCKETS);
    }
    this.seen[i] = slice;
    return i;
  }

  private grow(): void {
    const seen = new Int32Array(this.seen.length * 2);
    seen.set(this.seen);
    this.seen = seen;
    const traffic = new Float32Array(seen.length * BUCKETS);
    traffic.set(this.traffic);
    this.traffic = traffic;
  }

  /** Moves the ring to `slice`: the slices passed over are cleared, resources not seen in the period forgotten. */
  advance(slice: number): void {
    if (slice <= this.newest) return;
    const from = this.newest === Number.NEGATIVE_INFINITY ? slice - BUCKETS : this.newest;
    const steps = Math.min(BUCKETS, slice - from);
    for (let s = 1; s <= steps; s++) {
      const at = mod(from + s, BUCKETS);
      for (let i = 0; i < this.ids.length; i++) this.traffic[i * BUCKETS + at] = 0;
    }
    this.newest = slice;
    // Forgotten: not seen in any slice of the period (swap-remove: the last row takes the hole).
    for (let i = this.ids.length - 1; i >= 0; i--) {
      if (this.seen[i]! > slice - BUCKETS) continue;
      const last = this.ids.length - 1;
      this.index.delete(this.ids[i]!);
      if (i !== last) {
        const id = this.ids[last]!;
        this.ids[i] = id;
        this.index.set(id, i);
        this.seen[i] = this.seen[last]!;
        this.traffic.copyWithin(i * BUCKETS, last * BUCKETS, (last + 1) * BUCKETS);
      }
      this.ids.pop();
    }
    this.top = undefined;
  }

  score(i: number): number {
    let n = 0;
    const base = i * BUCKETS;
    for (let b = 0; b < BUCKETS; b++) n += this.traffic[base + b]!;
    return n;
  }
}

function mod(a: number, m: number): number {
  return ((a % m) + m) % m;
}

/** One record's edge traffic: bytes when the answer has edge bandwidth, else requests, else 0. */
export function edgeTraffic(record: TrafficRecord, seconds: number): number {
  const bw = record.edge.bandwidthBitsPerSecond;
  if (bw !== undefined) return Math.round((bw * seconds) / 8);
  return record.edge.requests ?? 0;
}

/** The ranking as the ranking file holds it (./ranking-state.ts). */
export interface SavedRanking {
  version: 1;
  periodMs: number;
  buckets: number;
  accounts: Record<string, SavedAccountRanking>;
}

export interface SavedAccountRanking {
  /** The newest slice counted: floor(ms / (periodMs / buckets)). */
  newest: number;
  /** End of the newest window fed (ms). */
  fedThrough: number;
  ids: string[];
  /** Per resource, the slice it was last seen in. */
  seen: number[];
  /** Per resource, BUCKETS values: its traffic in each slice of the ring (index = slice mod buckets). */
  traffic: number[];
}

export class ResourceRanking {
  private readonly accounts = new Map<string, AccountRanking>();
  private readonly sliceMs: number;

  constructor(readonly periodMs: number) {
    this.sliceMs = periodMs / BUCKETS;
  }

  /**
   * Counts one window's records of `account` (a first read: revisits add late parts, which the ranking does without).
   * `skip(id)`: records not to rank (no resource id, not allowed). A window ending at or before one fed already is
   * not counted again.
   */
  observe(
    account: string,
    startMs: number,
    endMs: number,
    records: readonly TrafficRecord[],
    keep: (record: TrafficRecord) => string | undefined,
  ): void {
    const a = this.of(account);
    if (endMs <= a.fedThrough) return;
    a.fedThrough = endMs;
    const slice = Math.floor(startMs / this.sliceMs);
    if (slice <= a.newest - BUCKETS) return;
    a.advance(slice);
    const at = mod(slice, BUCKETS);
    const seconds = (endMs - startMs) / 1000;
    for (const record of records) {
      const id = keep(record);
      if (id === undefined) continue;
      const row = a.rowOf(id, slice);
      a.traffic[row * BUCKETS + at]! += edgeTraffic(record, seconds);
    }
    a.top = undefined;
  }

  /**
   * The N resources of `account` with the most traffic over the period (ties: the smaller id first); all of them
   * when it has N or fewer. Asked again with nothing counted in between, the same Set object.
   */
  top(account: string, n: number): ReadonlySet<string> {
    const a = this.of(account);
    if (a.top !== undefined && a.topN === n) return a.top;
    const count = a.ids.length;
    let next: Set<string>;
    if (count <= n) next = new Set(a.ids);
    else {
      const scores = new Float64Array(count);
      for (let i = 0; i < count; i++) scores[i] = a.score(i);
      const sorted = Float64Array.from(scores).sort();
      const cut = sorted[count - n]!;
      next = new Set();
      const ties: string[] = [];
      for (let i = 0; i < count; i++) {
        if (scores[i]! > cut) next.add(a.ids[i]!);
        else if (scores[i] === cut) ties.push(a.ids[i]!);
      }
      ties.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      for (const id of ties) {
        if (next.size >= n) break;
        next.add(id);
      }
    }
    const old = a.top;
    a.top = old && sameSet(old, next) ? old : next;
    a.topN = n;
    return a.top;
  }

  /** The score (traffic over the period) of one resource; 0 when not ranked. For tests and the docs' figures. */
  scoreOf(account: string, id: string): number {
    const a = this.accounts.get(account);
    const i = a?.index.get(id);
    return a === undefined || i === undefined ? 0 : a.score(i);
  }

  /** Resources ranked for `account`. */
  size(account: string): number {
    return this.accounts.get(account)?.ids.length ?? 0;
  }

  forget(account: string): void {
    this.accounts.delete(account);
  }

  /** The ranking of every account, for the ranking file. */
  saved(): SavedRanking {
    const out: SavedRanking = { version: 1, periodMs: this.periodMs, buckets: BUCKETS, accounts: {} };
    for (const [account, a] of this.accounts) {
      if (a.ids.length === 0) continue;
      out.accounts[account] = {
        newest: a.newest,
        fedThrough: a.fedThrough,
        ids: [...a.ids],
        seen: Array.from(a.seen.subarray(0, a.ids.length)),
        traffic: Array.from(a.traffic.subarray(0, a.ids.length * BUCKETS)),
      };
    }
    return out;
  }

  /**
   * Takes a saved ranking (checked by ./ranking-state.ts), before any window is counted. One of another period
   * or slicing is not taken: its slices would mean other times. Returns whether it was taken.
   */
  restore(saved: SavedRanking): boolean {
    if (saved.periodMs !== this.periodMs || saved.buckets !== BUCKETS) return false;
    for (const [account, s] of Object.entries(saved.accounts)) {
      const a = new AccountRanking();
      for (let i = 0; i < s.ids.length; i++) {
        const row = a.rowOf(s.ids[i]!, s.seen[i]!);
        a.traffic.set(s.traffic.slice(i * BUCKETS, (i + 1) * BUCKETS), row * BUCKETS);
      }
      a.newest = s.newest;
      a.fedThrough = s.fedThrough;
      this.accounts.set(account, a);
    }
    return true;
  }

  private of(account: string): AccountRanking {
    let a = this.accounts.get(account);
    if (!a) {
      a = new AccountRanking();
      this.accounts.set(account, a);
    }
    return a;
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
