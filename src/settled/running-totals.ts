/**
 * The settled counters of one account: each series' running total, turned with a window's points
 * (./window-series.ts) into the samples that window writes (docs/remote-write.md, "What is written").
 *
 * - A counter series seen for the first time writes `0` one millisecond after its window's start, then its total
 *   at the window's end. The millisecond lets a run begin right where another ended (a backfill's last window
 *   ends where the exporter's first begins): the earlier run's last sample keeps its instant, and the zero after
 *   it reads as a counter reset, so increase() across the seam is exact with either run alone or both.
 * - A known series writes its new total at the window's end; a series absent from a window writes nothing (its
 *   total waits, as a scraped counter does).
 * - A gauge writes its value at the window's end.
 * - A total unchanged for `retentionMs` (a resource gone) is forgotten, as the scraped counters are after
 *   `metrics.counter_retention`: if it comes back it starts again from a zero.
 *
 * `take` computes a window without changing the totals; `commit` applies it once the window is accepted for
 * sending, so a window refused by a full queue leaves no trace.
 */
import type { WindowPoint } from './window-series.js';

export interface Sample {
  value: number;
  timestampMs: number;
}

export interface SettledSeries {
  /** `__name__` first, then the family's labels, then the writer's own (job, instance, external labels). */
  labels: readonly (readonly [string, string])[];
  samples: readonly Sample[];
}

/** A window's series and the totals they leave, not yet applied. */
export interface TakenWindow {
  series: SettledSeries[];
  samples: number;
  /** The counters this window moves, and their new totals (same order): applied by `commit`. */
  keys: string[];
  totals: number[];
  startMs: number;
  endMs: number;
}

export interface SavedTotal {
  key: string;
  total: number;
  /** End of the last window that counted it (ms). */
  lastMs: number;
}

/** Sweeps the forgotten totals once this many windows have been committed since the last sweep. */
const SWEEP_EVERY = 64;

/**
 * Totals by slot: a key's slot in `index`, its total and last window end in two arrays (a million counters cost
 * the map's entries and 16 bytes, not an object each).
 */
export class RunningTotals {
  private readonly index = new Map<string, number>();
  private totals: number[] = [];
  private lastMs: number[] = [];
  /** Slots freed by a sweep, for reuse. */
  private free: number[] = [];
  private sinceSweep = 0;

  constructor(private readonly retentionMs: number) {}

  get size(): number {
    return this.index.size;
  }

  take(startMs: number, endMs: number, points: readonly WindowPoint[]): TakenWindow {
    const w = this.begin(startMs, endMs);
    this.add(w, points);
    return w;
  }

  /** An empty window, to `add` its points to a part at a time. */
  begin(startMs: number, endMs: number): TakenWindow {
    return { series: [], samples: 0, keys: [], totals: [], endMs, startMs };
  }

  add(w: TakenWindow, points: readonly WindowPoint[]): void {
    const { series, keys, totals, startMs, endMs } = w;
    for (const p of points) {
      if (p.kind === 'gauge') {
        series.push({ labels: p.labels, samples: [{ value: p.value, timestampMs: endMs }] });
        w.samples++;
        continue;
      }
      // Keys are unique within a window (./window-series.ts counts a resource once).
      const slot = this.index.get(p.key);
      if (slot === undefined) {
        series.push({
          labels: p.labels,
          samples: [
            { value: 0, timestampMs: startMs + 1 },
            { value: p.value, timestampMs: endMs },
          ],
        });
        w.samples += 2;
        keys.push(p.key);
        totals.push(p.value);
      } else {
        const total = this.totals[slot]! + p.value;
        series.push({ labels: p.labels, samples: [{ value: total, timestampMs: endMs }] });
        w.samples++;
        keys.push(p.key);
        totals.push(total);
      }
    }
  }

  /** Applies a taken window's totals. */
  commit(w: TakenWindow): void {
    this.commitRange(w, 0, w.keys.length);
    this.committed(w.endMs);
  }

  /** Applies the totals `[from, to)` of a taken window (a big one a part at a time; `committed` after the last). */
  commitRange(w: TakenWindow, from: number, to: number): void {
    const { keys, totals, endMs } = w;
    const end = Math.min(to, keys.length);
    for (let i = from; i < end; i++) this.set(keys[i]!, totals[i]!, endMs);
  }

  /** A window was committed whole: now and then, the totals unchanged for the retention are forgotten. */
  committed(endMs: number): void {
    if (++this.sinceSweep >= SWEEP_EVERY) {
      this.sinceSweep = 0;
      for (const [key, slot] of this.index)
        if (endMs - this.lastMs[slot]! > this.retentionMs) {
          this.index.delete(key);
          this.free.push(slot);
        }
    }
  }

  private set(key: string, total: number, lastMs: number): void {
    let slot = this.index.get(key);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.totals.length;
      this.index.set(key, slot);
    }
    this.totals[slot] = total;
    this.lastMs[slot] = lastMs;
  }

  get(key: string): number | undefined {
    const slot = this.index.get(key);
    return slot === undefined ? undefined : this.totals[slot];
  }

  saved(): SavedTotal[] {
    return [...this.entries()];
  }

  /** Every total, read as it is iterated (the caller keeps the totals unchanged meanwhile). */
  *entries(): Generator<SavedTotal> {
    for (const [key, slot] of this.index)
      yield { key, total: this.totals[slot]!, lastMs: this.lastMs[slot]! };
  }

  restore(saved: Iterable<SavedTotal>): void {
    this.index.clear();
    this.totals = [];
    this.lastMs = [];
    this.free = [];
    for (const s of saved) this.set(s.key, s.total, s.lastMs);
  }

  /** A copy, for the totals as acknowledged (the writer keeps one beside the totals as queued). */
  clone(): RunningTotals {
    const c = new RunningTotals(this.retentionMs);
    for (const [key, slot] of this.index) c.set(key, this.totals[slot]!, this.lastMs[slot]!);
    return c;
  }
}
