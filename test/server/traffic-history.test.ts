/**
 * TrafficHistory's provisional and final windows (issue 32): `record` takes a first read (provisional), `settle` a
 * window's final answer, which replaces the recorded entries inside its [start, end) by one final entry over that
 * span with the figures of that answer. Checked on small hand-made answers, then on generated sequences (fast-check)
 * against a model: every entry's requests per second are its own minutes' counts over its own length.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AccountHistory, TrafficHistory } from '../../src/server/traffic-history.js';
import { answer, rec } from './history-answers.js';

const MIN = 60_000;

/** The entries as [start minute, end minute, requests/s, provisional]. */
function entries(h: AccountHistory | undefined): [number, number, number, boolean][] {
  if (!h) return [];
  return h.starts.map((s, k) => [
    s / MIN,
    h.ends[k]! / MIN,
    h.figures.edgeRequestsPerSecond[k]!,
    h.provisional[k]!,
  ]);
}

describe('TrafficHistory.settle', () => {
  it('marks a first read provisional, and final once settled with the same bounds', () => {
    const h = new TrafficHistory();
    const first = answer(rec('r1', 600, 8000));
    h.record('a', 0, MIN, first);
    expect(entries(h.get('a'))).toEqual([[0, 1, 10, true]]);
    // Revisit off, or read once final: settled right after with the same answer.
    h.settle('a', 0, MIN, first);
    expect(entries(h.get('a'))).toEqual([[0, 1, 10, false]]);
  });

  it('replaces the figures of a revisited window by the final answer, same bounds', () => {
    const h = new TrafficHistory();
    h.record('a', 0, MIN, answer(rec('r1', 600, 8000, 6)));
    h.record('a', MIN, 2 * MIN, answer(rec('r1', 300, 4000)));
    // The revisit found late requests: 1200 in the first minute, 60 of them 5xx.
    h.settle('a', 0, MIN, answer(rec('r1', 1200, 16000, 60)));
    const got = h.get('a')!;
    expect(entries(got)).toEqual([
      [0, 1, 20, false],
      [1, 2, 5, true],
    ]);
    expect(got.figures.edge5xxRatio[0]).toBeCloseTo(0.05);
    expect(got.figures.bandwidthBitsPerSecond[0]).toBe(16000);
    // The newest window is untouched: its first read's resources stay the top list.
    expect(got.topByTraffic.map((r) => r.bandwidthBitsPerSecond)).toEqual([4000]);
  });

  it('gives one final entry over a revisit that spans several recorded windows', () => {
    const h = new TrafficHistory();
    h.record('a', 0, MIN, answer(rec('r1', 600, 1)));
    h.record('a', MIN, 2 * MIN, answer(rec('r1', 300, 1)));
    h.record('a', 2 * MIN, 3 * MIN, answer(rec('r1', 120, 1)));
    h.record('a', 3 * MIN, 4 * MIN, answer(rec('r1', 60, 1)));
    // Minutes 1 and 2 are revisited as one 2-minute window: 2400 requests over 120 s.
    h.settle('a', MIN, 3 * MIN, answer(rec('r1', 2400, 1)));
    expect(entries(h.get('a'))).toEqual([
      [0, 1, 10, true],
      [1, 3, 20, false],
      [3, 4, 1, true],
    ]);
    // Then the rest, the newest included: its top list is the final answer's.
    h.settle('a', 0, MIN, answer(rec('r1', 900, 1)));
    h.settle('a', 3 * MIN, 4 * MIN, answer(rec('r9', 120, 5)));
    const got = h.get('a')!;
    expect(entries(got)).toEqual([
      [0, 1, 15, false],
      [1, 3, 20, false],
      [3, 4, 2, false],
    ]);
    expect(got.topByTraffic.map((r) => r.resource)).toEqual(['r9']);
  });

  it('merges across the ring edge and keeps counting in order after it', () => {
    const h = new TrafficHistory(4);
    for (let m = 0; m < 6; m++) h.record('a', m * MIN, (m + 1) * MIN, answer(rec('r1', 60 * (m + 1), 1)));
    // Slots wrapped: minutes 2..5 are kept. Revisit 3..5 (two slots before the edge, one after).
    h.settle('a', 3 * MIN, 6 * MIN, answer(rec('r1', 1800, 1)));
    expect(entries(h.get('a'))).toEqual([
      [2, 3, 3, true],
      [3, 6, 10, false],
    ]);
    for (let m = 6; m < 9; m++) h.record('a', m * MIN, (m + 1) * MIN, answer(rec('r1', 60, 1)));
    expect(entries(h.get('a'))).toEqual([
      [3, 6, 10, false],
      [6, 7, 1, true],
      [7, 8, 1, true],
      [8, 9, 1, true],
    ]);
  });

  it('changes nothing for a window no longer in the ring, or one that only partly overlaps', () => {
    const h = new TrafficHistory(3);
    for (let m = 0; m < 5; m++) h.record('a', m * 5 * MIN, (m + 1) * 5 * MIN, answer(rec('r1', 300, 1)));
    const before = h.get('a');
    // Minutes 0..10 aged out of the ring.
    h.settle('a', 0, 10 * MIN, answer(rec('r1', 99_999, 1)));
    // Part of a recorded window only (the pipeline never revisits so, but the ring must not be bent by it).
    h.settle('a', 12 * MIN, 17 * MIN, answer(rec('r1', 99_999, 1)));
    // A window after everything recorded.
    h.settle('a', 25 * MIN, 30 * MIN, answer(rec('r1', 99_999, 1)));
    expect(h.get('a')).toEqual(before);
  });

  it('takes a settle before any record, of an unknown account or of an empty window without harm', () => {
    const h = new TrafficHistory();
    h.settle('a', 0, MIN, answer(rec('r1', 60, 1)));
    expect(h.get('a')).toBeUndefined();
    h.record('a', MIN, 2 * MIN, answer(rec('r1', 60, 1)));
    h.settle('a', 2 * MIN, 2 * MIN, answer(rec('r1', 60, 1)));
    h.settle('b', MIN, 2 * MIN, answer(rec('r1', 60, 1)));
    expect(entries(h.get('a'))).toEqual([[1, 2, 1, true]]);
    expect(h.get('b')).toBeUndefined();
    h.remove('a');
    h.settle('a', MIN, 2 * MIN, answer(rec('r1', 60, 1)));
    expect(h.get('a')).toBeUndefined();
  });

  it('keeps every entry equal to its own minutes, provisional until settled (generated sequences)', () => {
    /**
     * A walk of windows 1..4 minutes long; after each first read, revisits of the oldest unsettled windows (1..3
     * of them merged, as RevisitQueue merges neighbours), or a settle at once (read once final). Minute m's first
     * read count is m % 7, its count at a revisit m % 7 + 3 (a window read once final keeps its first read's).
     */
    const step = fc.record({
      minutes: fc.integer({ min: 1, max: 4 }),
      final: fc.boolean(),
      revisit: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(step, { maxLength: 40 }), (capacity, steps) => {
        const h = new TrafficHistory(capacity);
        const count = (from: number, to: number, extra: number) => {
          let n = 0;
          for (let m = from; m < to; m++) n += (m % 7) + extra;
          return n;
        };
        /** The model: every window's bounds and state, oldest first (the ring keeps the last `capacity`). */
        const model: { from: number; to: number; open: boolean; extra: number }[] = [];
        /** How many of the model's newest windows the ring holds. */
        let held = 0;
        let cursor = 0;
        for (const s of steps) {
          const from = cursor;
          const to = cursor + s.minutes;
          cursor = to;
          const first = answer(rec('r', count(from, to, 0), 1));
          h.record('a', from * MIN, to * MIN, first);
          model.push({ from, to, open: true, extra: 0 });
          held = Math.min(capacity, held + 1);
          if (s.final) {
            h.settle('a', from * MIN, to * MIN, first);
            model[model.length - 1]!.open = false;
          } else if (s.revisit > 0) {
            // The oldest run of open windows, up to `revisit` of them, among those still kept.
            const kept = model.slice(-capacity);
            const k = kept.findIndex((w) => w.open);
            if (k >= 0) {
              let j = k;
              while (j + 1 < kept.length && j + 1 - k < s.revisit && kept[j + 1]!.open) j++;
              const a = kept[k]!.from;
              const b = kept[j]!.to;
              h.settle('a', a * MIN, b * MIN, answer(rec('r', count(a, b, 3), 1)));
              const at = model.length - kept.length + k;
              // The run's windows still in the ring become one entry.
              const inRing = model.length - held;
              const covered = Math.max(0, at + (j - k + 1) - Math.max(at, inRing));
              held -= Math.max(0, covered - 1);
              model.splice(at, j - k + 1, { from: a, to: b, open: false, extra: 3 });
            }
          }
        }
        // The ring drops the oldest entry for a new one when full; a merge frees slots.
        const got = entries(h.get('a'));
        expect(got.length).toBe(held);
        const tail = model.slice(model.length - held);
        expect(got.map(([a, b, , open]) => [a, b, open])).toEqual(tail.map((w) => [w.from, w.to, w.open]));
        got.forEach(([a, b, rate], i) => {
          expect(rate).toBeCloseTo(count(a, b, tail[i]!.extra) / ((b - a) * 60));
        });
      }),
      { numRuns: 300, seed: 32 },
    );
  });
});
