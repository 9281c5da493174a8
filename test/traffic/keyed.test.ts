/**
 * KeyedBuilder shares one keys array between records that list the same keys; whatever it shares, each record it
 * builds must read exactly as a Map built from the same (key, value) pairs would, including keys given twice.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 as prng } from '../../src/simulator/random.js';
import { KeyedBuilder } from '../../src/traffic/keyed.js';

const KEYS = ['200', '204', '206', '304', '404', '500', '503'];

describe('KeyedBuilder', () => {
  it('builds records that read as Maps of the same pairs, whatever they share', () => {
    const rand = prng(11);
    const b = new KeyedBuilder();
    const built: Array<[ReadonlyMap<string, number>, Map<string, number>]> = [];
    let previous: string[] = KEYS;
    for (let r = 0; r < 2000; r++) {
      // Mostly the previous record's keys (as an answer lists them), sometimes fewer, other or repeated ones.
      const roll = rand();
      let keys: string[];
      if (roll < 0.6) keys = previous;
      else if (roll < 0.75) keys = previous.slice(0, Math.floor(rand() * previous.length));
      else
        keys = Array.from({ length: Math.floor(rand() * 9) }, () => KEYS[Math.floor(rand() * KEYS.length)]!);
      previous = keys.length ? [...new Set(keys)] : KEYS;
      b.start();
      const want = new Map<string, number>();
      for (const k of keys) {
        const v = Math.floor(rand() * 100);
        b.add(k, v);
        want.set(k, v);
      }
      built.push([b.finish(), want]);
    }
    // Checked after all are built: a later record must not have changed an earlier one through a shared array.
    for (const [got, want] of built) {
      expect([...got]).toEqual([...want]);
      expect(got.size).toBe(want.size);
      for (const k of KEYS) {
        expect(got.get(k)).toBe(want.get(k));
        expect(got.has(k)).toBe(want.has(k));
      }
      const walked: Array<[string, number]> = [];
      got.forEach((v, k) => {
        walked.push([k, v]);
      });
      expect(walked).toEqual([...want]);
    }
  });

  it('keeps the last value of a key given twice, in its first place', () => {
    const b = new KeyedBuilder();
    b.start();
    b.add('0_250k', 1);
    b.add('1m_2m', 2);
    b.add('0_250k', 3);
    expect([...b.finish()]).toEqual([
      ['0_250k', 3],
      ['1m_2m', 2],
    ]);
    // The same keys again share the first record's keys array, and a repeat still overwrites.
    b.start();
    b.add('0_250k', 4);
    b.add('1m_2m', 5);
    b.add('1m_2m', 6);
    expect([...b.finish()]).toEqual([
      ['0_250k', 4],
      ['1m_2m', 6],
    ]);
  });
});
