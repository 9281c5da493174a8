/**
 * The accounts stopped at run time and not back (src/state-file/departed.ts), through DepartedAccounts: what the
 * parts keep for such an account stays until it has been away longer than `metrics.counter_retention`
 * (forgetAway with the cut-off), then every part forgets it at once and its name is returned (its cursor goes too);
 * an account that came back is never forgotten.
 */
import { describe, expect, it } from 'vitest';
import { DepartedAccounts, type KeptPerAccount } from '../../src/state-file/departed.js';

const HOUR = 3_600_000;
const T = Date.UTC(2026, 2, 1);

/** A part keeping something per account, as the counters, the revisit keep and the ranking do. */
class Kept implements KeptPerAccount {
  readonly forgotten: string[] = [];
  forget(account: string): void {
    this.forgotten.push(account);
  }
}

describe('DepartedAccounts', () => {
  it('keeps what was kept for a departed account until it stopped before the cut-off, then every part forgets it', () => {
    const parts = [new Kept(), new Kept(), new Kept()];
    const d = new DepartedAccounts(parts);
    d.left('acme', T);
    d.left('beta', T + 2 * HOUR);
    // Stopped at or after the cut-off: kept.
    expect(d.forgetAway(T)).toEqual([]);
    expect(parts.every((p) => p.forgotten.length === 0)).toBe(true);
    expect(d.forgetAway(T + 1)).toEqual(['acme']);
    for (const p of parts) expect(p.forgotten).toEqual(['acme']);
    // Forgotten once only.
    expect(d.forgetAway(T + HOUR)).toEqual([]);
    expect(d.forgetAway(T + 3 * HOUR)).toEqual(['beta']);
    for (const p of parts) expect(p.forgotten).toEqual(['acme', 'beta']);
  });

  it('never forgets an account that came back', () => {
    const part = new Kept();
    const d = new DepartedAccounts([part]);
    d.left('acme', T);
    d.back('acme');
    expect(d.forgetAway(T + 100 * HOUR)).toEqual([]);
    expect(part.forgotten).toEqual([]);
  });

  it('counts the retention from the last time the account left', () => {
    const part = new Kept();
    const d = new DepartedAccounts([part]);
    d.left('acme', T);
    d.back('acme');
    d.left('acme', T + 10 * HOUR);
    expect(d.forgetAway(T + 5 * HOUR)).toEqual([]);
    expect(d.forgetAway(T + 11 * HOUR)).toEqual(['acme']);
    expect(part.forgotten).toEqual(['acme']);
  });

  it('forgets every account that left before the cut-off in one call', () => {
    const part = new Kept();
    const d = new DepartedAccounts([part]);
    for (const [i, a] of ['a', 'b', 'c', 'd'].entries()) d.left(a, T + i * HOUR);
    expect(d.forgetAway(T + 2 * HOUR).sort()).toEqual(['a', 'b']);
    expect(part.forgotten.sort()).toEqual(['a', 'b']);
  });
});
