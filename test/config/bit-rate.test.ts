/**
 * Bandwidths as contracts write them (src/config/bit-rate.ts): bits per second with a decimal unit (bps..Tbps), a
 * fraction read exactly and rounded half up to whole bits; bytes per second (`MBps`) and numbers without a unit
 * refused, not guessed; and the form check-config prints reads back to the same bits.
 */
import { describe, expect, it } from 'vitest';
import { formatBitRate, parseBitRate } from '../../src/config/bit-rate.js';

describe('parseBitRate', () => {
  it('reads decimal units of bits per second, k in either case, fractions exactly', () => {
    expect(parseBitRate('2Gbps')).toBe(2_000_000_000n);
    expect(parseBitRate('500Mbps')).toBe(500_000_000n);
    expect(parseBitRate('1.5Tbps')).toBe(1_500_000_000_000n);
    expect(parseBitRate('10kbps')).toBe(10_000n);
    expect(parseBitRate('10Kbps')).toBe(10_000n);
    expect(parseBitRate('1.5bps')).toBe(2n);
    expect(parseBitRate('0.3Gbps')).toBe(300_000_000n);
    expect(parseBitRate(' 2 Gbps ')).toBe(2_000_000_000n);
  });

  it('refuses bytes per second, other cases, no unit and negatives', () => {
    for (const bad of ['2GBps', '2MBps', '2gbps', '2Gb/s', '2G', '2000000', '-2Gbps', '.5Gbps', ''])
      expect(parseBitRate(bad), bad).toBeUndefined();
  });
});

describe('formatBitRate', () => {
  it('writes the shortest exact form, else bits per second, which reads back to the same bits', () => {
    expect(formatBitRate(2e9)).toBe('2Gbps');
    expect(formatBitRate(1_500_000_000)).toBe('1500Mbps');
    expect(formatBitRate(999)).toBe('999bps');
    for (const n of [1, 1000, 2e9, 1_500_000_000_001, 7e12]) {
      expect(parseBitRate(formatBitRate(n)), `${n}`).toBe(BigInt(n));
    }
  });
});
