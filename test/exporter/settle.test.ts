/**
 * The bounded waits of a stop (src/exporter/settle.ts): `settledWithin` says whether a closing part settled
 * (resolved or rejected: either way it is done) within its bound, and returns false at the bound for one that
 * hangs, so the stop goes on without it.
 */
import { describe, expect, it } from 'vitest';
import { settledWithin } from '../../src/exporter/settle.js';

describe('settledWithin', () => {
  it('is true for a part that resolves or rejects within the bound', async () => {
    expect(await settledWithin(Promise.resolve('closed'), 60_000)).toBe(true);
    expect(await settledWithin(Promise.reject(new Error('close failed')), 60_000)).toBe(true);
  });

  it('is false at the bound for a part that never settles, and leaves no timer behind', async () => {
    const hangs = new Promise<void>(() => {});
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    expect(await settledWithin(hangs, 5)).toBe(false);
    // A part that settled long before its bound leaves no timer either: a stop must not wait for one.
    expect(await settledWithin(Promise.resolve(), 3_600_000)).toBe(true);
    expect(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length).toBe(before);
  });
});
