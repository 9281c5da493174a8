/**
 * The simulator's seeded randomness (src/simulator/random.ts): the same seed and parts give the same numbers on
 * every run and platform (so tests can assert exact values), Math.random is never read, and every helper stays
 * within its documented bounds.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { between, hash32, intBetween, mulberry32, seededShuffle, unit } from '../../src/simulator/random.js';

/** The documented hash, written out independently: FNV-1a (32-bit) from `basis ^ seed` over the parts joined by NUL, then murmur3's fmix32. */
function referenceHash(seed: number, parts: (string | number)[]): number {
  const M = 0xffffffffn;
  let h = (0x811c9dc5n ^ BigInt(seed >>> 0)) & M;
  const text = parts.join('\u0000');
  // Over UTF-16 code units, as JavaScript strings hold text.
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * 0x01000193n) & M;
  }
  h ^= h >> 16n;
  h = (h * 0x85ebca6bn) & M;
  h ^= h >> 13n;
  h = (h * 0xc2b2ae35n) & M;
  h ^= h >> 16n;
  return Number(h);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('hash32', () => {
  it('is FNV-1a over the parts joined by NUL, then the murmur3 finaliser, as an unsigned 32-bit number', () => {
    const cases: [number, (string | number)[]][] = [
      [0, []],
      [1, ['base', 'demo', '1001']],
      [42, ['noise', 'acme', '2001', 1_767_225_600_000]],
      [-7, ['é', 'ü', '→']],
      [2 ** 31 + 5, ['x']],
    ];
    for (const [seed, parts] of cases) {
      const h = hash32(seed, ...parts);
      expect(h, JSON.stringify([seed, parts])).toBe(referenceHash(seed, parts));
      expect(Number.isInteger(h) && h >= 0 && h < 2 ** 32).toBe(true);
    }
  });

  it('keeps parts apart: ("ab", "c") and ("a", "bc") differ, and a number part hashes as its text', () => {
    expect(hash32(1, 'ab', 'c')).not.toBe(hash32(1, 'a', 'bc'));
    expect(hash32(1, 'minute', 60_000)).toBe(hash32(1, 'minute', '60000'));
    expect(hash32(1, 'x')).not.toBe(hash32(2, 'x'));
  });
});

describe('unit, intBetween, between', () => {
  it('never read Math.random', () => {
    vi.spyOn(Math, 'random').mockImplementation(() => {
      throw new Error('Math.random read');
    });
    expect(() => {
      unit(1, 'a');
      intBetween(1, 1, 6, 'b');
      between(1, 0.5, 1.5, 'c');
      mulberry32(1)();
      seededShuffle([1, 2, 3], 1, 'd');
    }).not.toThrow();
  });

  it('stay in their bounds: unit [0, 1), intBetween [min, max] reaching both ends, between [min, max)', () => {
    const ints = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const u = unit(9, 'u', i);
      expect(u >= 0 && u < 1).toBe(true);
      const n = intBetween(9, 5, 30, 'launch', i);
      expect(Number.isInteger(n) && n >= 5 && n <= 30).toBe(true);
      ints.add(n);
      const b = between(9, 0.85, 1.15, 'noise', i);
      expect(b >= 0.85 && b < 1.15).toBe(true);
    }
    // 2000 draws over 26 values: every value of the range comes up, the ends included.
    expect(ints.size).toBe(26);
    expect(intBetween(3, 4, 4, 'only')).toBe(4);
  });

  it('are functions of the seed and the parts: the same call gives the same value', () => {
    expect(unit(5, 'p', 1)).toBe(unit(5, 'p', 1));
    expect(unit(5, 'p', 1)).toBe(hash32(5, 'p', 1) / 2 ** 32);
    expect(intBetween(5, 10, 120, 'running', 'id')).toBe(intBetween(5, 10, 120, 'running', 'id'));
    expect(between(5, 2, 48, 'ago')).toBe(2 + unit(5, 'ago') * 46);
  });
});

describe('mulberry32', () => {
  it('gives the same stream for a seed, another for another seed, every value in [0, 1)', () => {
    const a = mulberry32(123);
    const b = mulberry32(123);
    const c = mulberry32(124);
    const sa = Array.from({ length: 100 }, () => a());
    expect(Array.from({ length: 100 }, () => b())).toEqual(sa);
    expect(Array.from({ length: 100 }, () => c())).not.toEqual(sa);
    for (const v of sa) expect(v >= 0 && v < 1).toBe(true);
    expect(new Set(sa).size).toBe(100);
  });
});

describe('seededShuffle', () => {
  const items = Array.from({ length: 20 }, (_, i) => `r${i}`);

  it('returns a copy holding the same items, leaving the input as it was', () => {
    const before = [...items];
    const out = seededShuffle(items, 7, 'order');
    expect(out).not.toBe(items);
    expect(items).toEqual(before);
    expect([...out].sort()).toEqual([...items].sort());
  });

  it('orders by the seed and the parts: the same order again, another for another seed or parts', () => {
    const out = seededShuffle(items, 7, 'order');
    expect(seededShuffle(items, 7, 'order')).toEqual(out);
    expect(seededShuffle(items, 8, 'order')).not.toEqual(out);
    expect(seededShuffle(items, 7, 'other')).not.toEqual(out);
    expect(seededShuffle([], 7)).toEqual([]);
    expect(seededShuffle(['one'], 7)).toEqual(['one']);
  });
});
