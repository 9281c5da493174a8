/**
 * The key index behind keyed families (src/traffic/key-index.ts): each key (a status code, class or size range)
 * gets one small integer for the life of the index, the same whether it is asked by `of` or by `at` during a walk
 * in whatever order the answers list their keys, and distinct keys never share one; a wrong one would count a
 * status code's requests under another.
 */
import { describe, expect, it } from 'vitest';
import { KeyIndex } from '../../src/traffic/key-index.js';

describe('KeyIndex', () => {
  it('numbers keys from 0 in the order first seen, and keeps each number', () => {
    const k = new KeyIndex();
    expect(k.of('200')).toBe(0);
    expect(k.of('404')).toBe(1);
    expect(k.of('200')).toBe(0);
    expect(k.keys).toEqual(['200', '404']);
  });

  it("gives a key its own number in a walk, whatever order and length each record's map has", () => {
    const k = new KeyIndex();
    const truth = new Map<string, number>();
    const codes = [
      '200',
      '206',
      '301',
      '304',
      '403',
      '404',
      '500',
      '502',
      '503',
      '2xx',
      '3xx',
      '4xx',
      '5xx',
      'all',
    ];
    let s = 11;
    const next = (n: number) => {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      return s % n;
    };
    for (let record = 0; record < 2000; record++) {
      // Mostly the same order as the record before (one answer), sometimes shuffled, shorter or longer.
      const keys = [...codes];
      if (next(4) === 0)
        for (let i = keys.length - 1; i > 0; i--) {
          const j = next(i + 1);
          [keys[i], keys[j]] = [keys[j]!, keys[i]!];
        }
      const walk = keys.slice(next(3), keys.length - next(5));
      walk.forEach((key, j) => {
        const got = k.at(j, key);
        const known = truth.get(key);
        if (known === undefined) truth.set(key, got);
        else expect(got, `${record}:${j}:${key}`).toBe(known);
        expect(k.keys[got]).toBe(key);
      });
    }
    // Distinct keys, distinct numbers, and `of` agrees with every walk.
    expect(new Set(truth.values()).size).toBe(truth.size);
    for (const [key, i] of truth) expect(k.of(key)).toBe(i);
    expect(k.keys).toHaveLength(truth.size);
  });
});
