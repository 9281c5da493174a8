import { describe, expect, it } from 'vitest';
import { mergeRanges, rangeHealth } from '../../src/dvr/ranges.js';
import { intBetween, seededShuffle } from '../../src/simulator/random.js';

const NOW = 10_000;
const r = (from: number, duration: number) => ({ from, duration });

describe('DVR range arithmetic', () => {
  it('no ranges: nothing recorded, no timestamps, no gaps, zero coverage', () => {
    expect(rangeHealth([], NOW, 3600)).toEqual({
      ranges: 0,
      recorded: 0,
      first: undefined,
      last: undefined,
      gap: 0,
      largestGap: 0,
      coverage: 0,
    });
  });

  it('one range covering the end of the window', () => {
    const h = rangeHealth([r(NOW - 1800, 1800)], NOW, 3600);
    expect(h).toMatchObject({
      ranges: 1,
      recorded: 1800,
      first: NOW - 1800,
      last: NOW,
      gap: 0,
      largestGap: 0,
    });
    expect(h.coverage).toBeCloseTo(0.5, 12);
  });

  it('overlapping and out-of-order ranges merge before measuring', () => {
    const ranges = [r(NOW - 600, 300), r(NOW - 3000, 1000), r(NOW - 2500, 1000), r(NOW - 450, 100)];
    expect(mergeRanges(ranges, NOW)).toEqual([
      { start: NOW - 3000, end: NOW - 1500 },
      { start: NOW - 600, end: NOW - 300 },
    ]);
    const h = rangeHealth(ranges, NOW, 3600);
    expect(h.ranges).toBe(2);
    expect(h.recorded).toBe(1500 + 300);
    expect(h.gap).toBe(900); // (NOW-300) - (NOW-3000) - 1800
    expect(h.largestGap).toBe(900);
    expect(h.coverage).toBeCloseTo(1800 / 3600, 12);
  });

  it('touching ranges join; several gaps add up and the largest is kept', () => {
    const ranges = [r(0, 100), r(100, 50), r(200, 100), r(400, 10), r(1000, 10)];
    const h = rangeHealth(ranges, 2000, 0);
    expect(h.ranges).toBe(4);
    expect(h.recorded).toBe(150 + 100 + 10 + 10);
    expect(h.gap).toBe(50 + 100 + 590);
    expect(h.largestGap).toBe(590);
    expect(h.coverage).toBeUndefined(); // window 0: unknown depth, no ratio
  });

  it('a range reaching past now is clipped at now', () => {
    const h = rangeHealth([r(NOW - 100, 500)], NOW, 100);
    expect(h.recorded).toBe(100);
    expect(h.last).toBe(NOW);
    expect(h.coverage).toBe(1);
  });

  it('a window longer than the history counts the missing history as uncovered', () => {
    const h = rangeHealth([r(NOW - 600, 600)], NOW, 7200);
    expect(h.coverage).toBeCloseTo(600 / 7200, 12);
  });

  it('ranges older than the window count for gaps but not for coverage', () => {
    const h = rangeHealth([r(NOW - 5000, 1000), r(NOW - 1000, 500)], NOW, 1200);
    expect(h.coverage).toBeCloseTo(500 / 1200, 12);
    expect(h.gap).toBe(3000);
  });

  it('zero-length and negative pieces are ignored', () => {
    const h = rangeHealth([r(NOW - 500, 0), r(NOW - 400, 100), r(NOW + 100, 50)], NOW, 1000);
    expect(h.ranges).toBe(1);
    expect(h.first).toBe(NOW - 400);
    expect(h.recorded).toBe(100);
  });

  it('ranges in order (as the API gives them, merged without a sort) measure as the same ranges shuffled', () => {
    for (let seed = 1; seed <= 20; seed++) {
      // Touching, overlapping, zero-length, equal starts and past-now pieces, by start.
      const ranges = Array.from({ length: 200 }, (_, i) =>
        r(NOW - 4000 + i * 20, intBetween(seed, 0, 45, i)),
      );
      ranges.sort((a, b) => a.from - b.from);
      const shuffled = seededShuffle(ranges, seed);
      expect(mergeRanges(ranges, NOW)).toEqual(mergeRanges(shuffled, NOW));
      expect(rangeHealth(ranges, NOW, 3600)).toEqual(rangeHealth(shuffled, NOW, 3600));
      expect(mergeRanges(ranges, NOW).length).toBeGreaterThan(1);
    }
  });
});
