/**
 * One account's settled counters (src/settled/running-totals.ts), as docs/remote-write.md ("What is written")
 * promises them: a counter series' first sample is a 0 one millisecond after its first window's start, then its
 * running total at each window's end; a gauge its value at the window's end; a series absent from a window writes
 * nothing; a total unchanged past metrics.counter_retention is forgotten and starts again from a zero. A window is
 * computed without changing the totals (`take`) and applied once accepted (`commit`): one refused leaves no trace.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { RunningTotals } from '../../src/settled/running-totals.js';
import type { WindowPoint } from '../../src/settled/window-series.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const DAY = 24 * 60 * MINUTE;

const labels = (name: string, resource: string) =>
  [
    ['__name__', name],
    ['account', 'acme'],
    ['resource', resource],
  ] as const;
const counter = (resource: string, value: number): WindowPoint => ({
  key: `cdn_edge_requests_total\u0000acme\u0000${resource}`,
  family: 'cdn_edge_requests_total',
  labels: labels('cdn_edge_requests_total', resource),
  kind: 'counter',
  value,
});
const gauge = (resource: string, value: number): WindowPoint => ({
  key: `cdn_edge_cache_hit_ratio\u0000acme\u0000${resource}`,
  family: 'cdn_edge_cache_hit_ratio',
  labels: labels('cdn_edge_cache_hit_ratio', resource),
  kind: 'gauge',
  value,
});
const at = (m: number) => T + m * MINUTE;

describe('running totals: the samples a window writes', () => {
  it("writes a new counter series' 0 a millisecond after the window's start, then its count at the end", () => {
    const totals = new RunningTotals(DAY);
    const w = totals.take(at(0), at(5), [counter('r1', 40)]);
    expect(w.series).toEqual([
      {
        labels: labels('cdn_edge_requests_total', 'r1'),
        samples: [
          { value: 0, timestampMs: at(0) + 1 },
          { value: 40, timestampMs: at(5) },
        ],
      },
    ]);
    expect(w.samples).toBe(2);
  });

  it('writes a known series its new running total at the end, a gauge its value at the end, an absent series nothing', () => {
    const totals = new RunningTotals(DAY);
    totals.commit(totals.take(at(0), at(1), [counter('r1', 40), counter('r2', 3)]));
    const w = totals.take(at(1), at(2), [counter('r1', 2), gauge('r1', 0.75)]);
    expect(w.series).toEqual([
      { labels: labels('cdn_edge_requests_total', 'r1'), samples: [{ value: 42, timestampMs: at(2) }] },
      { labels: labels('cdn_edge_cache_hit_ratio', 'r1'), samples: [{ value: 0.75, timestampMs: at(2) }] },
    ]);
    expect(w.samples).toBe(2);
    totals.commit(w);
    // r2 was absent: its total waited, and goes on from there.
    const later = totals.take(at(2), at(3), [counter('r2', 1)]);
    expect(later.series[0]!.samples).toEqual([{ value: 4, timestampMs: at(3) }]);
    // A gauge keeps no total.
    expect(totals.get(gauge('r1', 0).key)).toBeUndefined();
  });

  it('changes nothing until a window is committed: a window refused (a full queue) leaves no trace', () => {
    const totals = new RunningTotals(DAY);
    totals.commit(totals.take(at(0), at(1), [counter('r1', 10)]));
    const refused = totals.take(at(1), at(2), [counter('r1', 5), counter('new', 1)]);
    expect(refused.series.map((s) => s.samples.at(-1)!.value)).toEqual([15, 1]);
    expect(totals.get(counter('r1', 0).key)).toBe(10);
    expect(totals.get(counter('new', 0).key)).toBeUndefined();
    expect(totals.size).toBe(1);
    // Read again later, the same window writes the same samples.
    expect(totals.take(at(1), at(2), [counter('r1', 5), counter('new', 1)])).toEqual(refused);
  });

  it('applies a window a range at a time as it does at once', () => {
    const points = Array.from({ length: 10 }, (_, i) => counter(`r${i}`, i + 1));
    const whole = new RunningTotals(DAY);
    whole.commit(whole.take(at(0), at(1), points));
    const parts = new RunningTotals(DAY);
    const w = parts.take(at(0), at(1), points);
    parts.commitRange(w, 0, 4);
    expect(parts.size).toBe(4);
    parts.commitRange(w, 4, 100);
    parts.committed(w.endMs);
    expect(parts.saved()).toEqual(whole.saved());
  });
});

describe('running totals: forgotten after the retention', () => {
  /** Commits 64 one-minute windows (the sweep's period) from `from`, each counting `busy` only. */
  function run(totals: RunningTotals, from: number): void {
    for (let m = from; m < from + 64; m++) totals.commit(totals.take(at(m), at(m + 1), [counter('busy', 1)]));
  }

  it('forgets a total unchanged for longer than the retention; back, it starts again from a zero', () => {
    const totals = new RunningTotals(62 * MINUTE);
    totals.commit(totals.take(at(0), at(1), [counter('gone', 7)]));
    // 63 more windows: the 64th commit ends at 64 min, 63 min after `gone` last counted.
    run(totals, 1);
    expect(totals.get(counter('gone', 0).key)).toBeUndefined();
    const back = totals.take(at(70), at(71), [counter('gone', 2)]);
    expect(back.series[0]!.samples).toEqual([
      { value: 0, timestampMs: at(70) + 1 },
      { value: 2, timestampMs: at(71) },
    ]);
  });

  it('keeps a total unchanged for exactly the retention', () => {
    const totals = new RunningTotals(63 * MINUTE);
    totals.commit(totals.take(at(0), at(1), [counter('gone', 7)]));
    run(totals, 1);
    expect(totals.get(counter('gone', 0).key)).toBe(7);
  });
});

describe('running totals: saved and restored', () => {
  it('gives back every total with its last window end, and a restore replaces whatever was there', () => {
    const totals = new RunningTotals(DAY);
    totals.commit(totals.take(at(0), at(1), [counter('a', 1), counter('b', 2)]));
    totals.commit(totals.take(at(1), at(2), [counter('a', 10)]));
    const saved = totals.saved();
    expect(saved).toEqual([
      { key: counter('a', 0).key, total: 11, lastMs: at(2) },
      { key: counter('b', 0).key, total: 2, lastMs: at(1) },
    ]);
    expect([...totals.entries()]).toEqual(saved);

    const restarted = new RunningTotals(DAY);
    restarted.commit(restarted.take(at(0), at(1), [counter('stale', 5)]));
    restarted.restore(saved);
    expect(restarted.saved()).toEqual(saved);
    // The series continue: no zero, the next total on top of the saved one.
    expect(restarted.take(at(2), at(3), [counter('a', 1)]).series[0]!.samples).toEqual([
      { value: 12, timestampMs: at(3) },
    ]);
  });

  it('clone() is a copy that moves on its own (the totals as acknowledged beside those queued)', () => {
    const queued = new RunningTotals(DAY);
    queued.commit(queued.take(at(0), at(1), [counter('a', 1)]));
    const acknowledged = queued.clone();
    queued.commit(queued.take(at(1), at(2), [counter('a', 1), counter('b', 1)]));
    expect(acknowledged.saved()).toEqual([{ key: counter('a', 0).key, total: 1, lastMs: at(1) }]);
    expect(queued.get(counter('a', 0).key)).toBe(2);
  });
});
