/**
 * Rendezvous hashing of accounts onto shards (src/sharding.ts): each account on exactly one shard, evenly spread,
 * moved only onto a new shard when one is added, decided by each replica alone. End to end with three exporters:
 * test/scenarios/sharding.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { accountsForShard, assertShard, shardOf } from '../src/sharding.js';

const ownsAccount = (account: string, shard: number, shards: number) =>
  accountsForShard([{ name: account }], shard, shards).length === 1;

// Names shaped like real account names (letters, digits, dashes), not a sequence that might hash suspiciously well.
const ACCOUNTS = Array.from({ length: 10_000 }, (_, i) => `acct-${(i * 7919).toString(36)}-${i % 13}`);

describe('shardOf / accountsForShard', () => {
  it('puts every account on exactly one shard, for 1 to 8 shards', () => {
    for (let shards = 1; shards <= 8; shards++) {
      for (const account of ACCOUNTS.slice(0, 2_000)) {
        const owners = Array.from({ length: shards }, (_, s) => s).filter((s) =>
          ownsAccount(account, s, shards),
        );
        expect(owners).toEqual([shardOf(account, shards)]);
      }
    }
  });

  it('spreads accounts evenly (each shard within 10% of its fair share)', () => {
    for (let shards = 2; shards <= 8; shards++) {
      const counts = new Array<number>(shards).fill(0);
      for (const account of ACCOUNTS) counts[shardOf(account, shards)]! += 1;
      const fair = ACCOUNTS.length / shards;
      for (const n of counts) {
        expect(Math.abs(n - fair) / fair).toBeLessThan(0.1);
      }
    }
  });

  it('from N to N+1 shards moves about 1/(N+1) of the accounts, all onto the new shard', () => {
    for (let shards = 1; shards <= 7; shards++) {
      let moved = 0;
      for (const account of ACCOUNTS) {
        const before = shardOf(account, shards);
        const after = shardOf(account, shards + 1);
        if (before !== after) {
          moved++;
          expect(after).toBe(shards);
        }
      }
      const expected = ACCOUNTS.length / (shards + 1);
      expect(Math.abs(moved - expected) / expected).toBeLessThan(0.1);
    }
  });

  it('is stable across calls and does not depend on the other accounts', () => {
    const alone = accountsForShard([{ name: 'acme' }], shardOf('acme', 5), 5);
    expect(alone.map((a) => a.name)).toEqual(['acme']);
    const mixed = [{ name: 'x' }, { name: 'acme' }, { name: 'y' }];
    const owner = shardOf('acme', 5);
    expect(accountsForShard(mixed, owner, 5).map((a) => a.name)).toContain('acme');
    for (let s = 0; s < 5; s++) {
      if (s !== owner) expect(accountsForShard(mixed, s, 5).map((a) => a.name)).not.toContain('acme');
    }
  });

  it('splits a list so that the shards together hold each account once, in order', () => {
    const list = ACCOUNTS.slice(0, 500).map((name) => ({ name }));
    const parts = [0, 1, 2].map((s) => accountsForShard(list, s, 3));
    expect(parts.flat().length).toBe(list.length);
    expect(new Set(parts.flat().map((a) => a.name)).size).toBe(list.length);
    for (const part of parts) {
      const idx = part.map((a) => list.indexOf(a));
      expect(idx).toEqual([...idx].sort((a, b) => a - b));
    }
  });

  it('refuses impossible shard settings', () => {
    const bad: Array<[number, number]> = [
      [0, 0],
      [1, 1],
      [-1, 2],
      [0, 1.5],
      [0.5, 2],
      [3, 2],
      [0, Number.NaN],
    ];
    for (const [shard, shards] of bad) {
      expect(() => assertShard(shard, shards), `${shard}/${shards}`).toThrow(RangeError);
      expect(() => ownsAccount('acme', shard, shards), `${shard}/${shards}`).toThrow(RangeError);
    }
    expect(() => shardOf('acme', 0)).toThrow(RangeError);
    expect(() => assertShard(1, 2)).not.toThrow();
  });
});
