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
  /** `__name__` first, then the point's labels, then the writer's own (job, instance, external labels). */
  labels: readonly (readonly [string, string])[];
  samples: readonly Sample[];
}

/** A window's series and the totals they leave, not yet applied. */
export interface TakenWindow {
  series: SettledSeries[];
  samples: number;
  /** The counters' new totals, by key: applied by `commit`. */
  totals: Map<string, number>;
  endMs: number;
}

export interface SavedTotal {
  key: string;
  total: number;
  /** End of the last window that counted it (ms). */
  lastMs: number;
}

interface Total {
  total: number;
  lastMs: number;
}

/** Sweeps the forgotten totals once this many windows have been committed since the last sweep. */
const SWEEP_EVERY = 64;

export class RunningTotals {
  private readonly totals = new Map<string, Total>();
  private sinceSweep = 0;

  constructor(
    /** Labels every written series ends with (job, instance, external labels). */
    private readonly extra: readonly (readonly [string, string])[],
    private readonly retentionMs: number,
  ) {}

  get size(): number {
    return this.totals.size;
  }

  take(startMs: number, endMs: number, points: readonly WindowPoint[]): TakenWindow {
    const series: SettledSeries[] = [];
    const totals = new Map<string, number>();
    let samples = 0;
    for (const p of points) {
      const labels: (readonly [string, string])[] = [['__name__', p.family], ...p.labels, ...this.extra];
      if (p.kind === 'gauge') {
        series.push({ labels, samples: [{ value: p.value, timestampMs: endMs }] });
        samples++;
        continue;
      }
      const known = this.totals.get(p.key);
      const before = totals.get(p.key) ?? known?.total;
      const total = (before ?? 0) + p.value;
      totals.set(p.key, total);
      if (before === undefined) {
        series.push({
          labels,
          samples: [
            { value: 0, timestampMs: startMs + 1 },
            { value: total, timestampMs: endMs },
          ],
        });
        samples += 2;
      } else {
        series.push({ labels, samples: [{ value: total, timestampMs: endMs }] });
        samples++;
      }
    }
    return { series, samples, totals, endMs };
  }

  /** Applies a taken window's totals. */
  commit(w: TakenWindow): void {
    for (const [key, total] of w.totals) {
      const t = this.totals.get(key);
      if (t) {
        t.total = total;
        t.lastMs = w.endMs;
      } else this.totals.set(key, { total, lastMs: w.endMs });
    }
    if (++this.sinceSweep >= SWEEP_EVERY) {
      this.sinceSweep = 0;
      for (const [key, t] of this.totals) if (w.endMs - t.lastMs > this.retentionMs) this.totals.delete(key);
    }
  }

  get(key: string): number | undefined {
    return this.totals.get(key)?.total;
  }

  saved(): SavedTotal[] {
    const out: SavedTotal[] = [];
    for (const [key, t] of this.totals) out.push({ key, total: t.total, lastMs: t.lastMs });
    return out;
  }

  restore(saved: readonly SavedTotal[]): void {
    this.totals.clear();
    for (const s of saved) this.totals.set(s.key, { total: s.total, lastMs: s.lastMs });
  }

  /** A copy, for the totals as acknowledged (the writer keeps one beside the totals as queued). */
  clone(): RunningTotals {
    const c = new RunningTotals(this.extra, this.retentionMs);
    for (const [key, t] of this.totals) c.totals.set(key, { ...t });
    return c;
  }
}
