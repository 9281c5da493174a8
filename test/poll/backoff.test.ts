/**
 * Backoff with full jitter (src/poll/backoff.ts), as the login and the backfill's reader retry with it: a wait
 * drawn uniformly from [0, min(cap, base x 2^attempt)), never 0 (a retry always yields some time to the API),
 * never past the cap however many attempts failed, and finite for any attempt count.
 */
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/poll/backoff.js';
import { mulberry32 } from '../../src/simulator/random.js';

const POLICY = { baseMs: 100, capMs: 30_000 };

describe('backoffDelay', () => {
  it('doubles its ceiling with each attempt up to the cap', () => {
    // random() just below 1 draws the ceiling itself (floored).
    const top = () => 1 - Number.EPSILON;
    expect([0, 1, 2, 3, 8, 9].map((n) => backoffDelay(n, POLICY, top))).toEqual([
      99, 199, 399, 799, 25_599, 29_999,
    ]);
  });

  it('never waits 0, even when the draw is 0 or the base is below a millisecond', () => {
    expect(backoffDelay(0, POLICY, () => 0)).toBe(1);
    expect(backoffDelay(0, { baseMs: 0.1, capMs: 0.5 }, () => 0.99)).toBe(1);
  });

  it('stays finite and within the cap for any attempt count', () => {
    for (const attempt of [30, 31, 1000, Number.MAX_SAFE_INTEGER]) {
      const wait = backoffDelay(attempt, POLICY, () => 0.999_999);
      expect(Number.isFinite(wait)).toBe(true);
      expect(wait).toBeLessThanOrEqual(POLICY.capMs);
    }
  });

  it('spreads the waits of one attempt over its whole range (full jitter, not a fixed step)', () => {
    const random = mulberry32(7);
    const waits = Array.from({ length: 2000 }, () => backoffDelay(4, POLICY, random));
    const ceiling = POLICY.baseMs * 2 ** 4;
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...waits)).toBeLessThan(ceiling);
    // Each quarter of the range gets about a quarter of the draws.
    const quarters = [0, 1, 2, 3].map((q) => waits.filter((w) => Math.floor((w / ceiling) * 4) === q).length);
    for (const n of quarters) expect(Math.abs(n - 500)).toBeLessThan(100);
  });
});
