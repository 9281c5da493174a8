/**
 * The codec of the state file's revisit records (src/state-file/saved-revisits.ts): what a window's first read
 * counted, by series number, as Float64 values, little-endian, in base64. A restart must read back exactly what was
 * counted (a revisit adds only the difference), and a record a crash or a hand cut is refused, not read short.
 * (A round trip of ordinary values is in test/traffic/revisit.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { decodeCounted, encodeCounted } from '../../src/state-file/saved-revisits.js';

/** The bytes of Float64 values, little-endian, as the format says, built without the module. */
function littleEndian(values: number[]): Buffer {
  const view = new DataView(new ArrayBuffer(values.length * 8));
  for (const [i, v] of values.entries()) view.setFloat64(i * 8, v, true);
  return Buffer.from(view.buffer);
}

describe('revisit records', () => {
  it('are the Float64 values little-endian, in base64', () => {
    const values = [1, 0, 130.25, 2 ** 53 + 2];
    expect(encodeCounted(Float64Array.from(values))).toBe(littleEndian(values).toString('base64'));
    // 1.0 is 3f f0 00 .. 00: little-endian, its last byte is 0x3f.
    expect(Buffer.from(encodeCounted(Float64Array.of(1)), 'base64').at(-1)).toBe(0x3f);
  });

  it('give back every value bit for bit, -0, NaN, Infinity and the smallest denormal included', () => {
    const values = Float64Array.of(
      -0,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.MIN_VALUE,
      1e308,
      0.1 + 0.2,
    );
    const back = decodeCounted(encodeCounted(values));
    expect(Buffer.from(back.buffer)).toEqual(Buffer.from(values.buffer));
    expect(Object.is(back[0], -0)).toBe(true);
  });

  it('are empty for a window that counted no series', () => {
    expect(encodeCounted(new Float64Array(0))).toBe('');
    expect(decodeCounted('')).toEqual(new Float64Array(0));
  });

  it('refuse a record that is not a whole number of 8-byte values, by what is wrong', () => {
    const whole = littleEndian([5, 6]);
    for (const cut of [1, 7, 9, 15]) {
      expect(() => decodeCounted(whole.subarray(0, cut).toString('base64'))).toThrow(
        'a revisit record is not a whole number of 8-byte values',
      );
    }
    expect(decodeCounted(whole.subarray(0, 8).toString('base64'))).toEqual(Float64Array.of(5));
  });
});
