/**
 * Sizes and volumes as the configuration file writes them (src/config/size.ts): whole bytes or a whole number with
 * a decimal (kB..PB, powers of 1000, as contracts count) or binary (KiB..PiB) unit; a volume may be a fraction,
 * read exactly and rounded half up to whole bytes; what is not a size is refused, never guessed; and the forms
 * check-config prints read back to the same bytes.
 */
import { describe, expect, it } from 'vitest';
import {
  formatDecimalSize,
  formatSize,
  MAX_EXACT,
  parseSize,
  parseVolume,
  scaleDecimal,
} from '../../src/config/size.js';

describe('parseSize', () => {
  it('reads bytes, decimal and binary units, k in either case, and a space before the unit', () => {
    expect(parseSize(1_048_576)).toBe(1_048_576);
    expect(parseSize('1048576')).toBe(1_048_576);
    expect(parseSize('512B')).toBe(512);
    expect(parseSize('500MB')).toBe(500_000_000);
    expect(parseSize('64MiB')).toBe(64 * 1024 ** 2);
    expect(parseSize('2kB')).toBe(2000);
    expect(parseSize('2KB')).toBe(2000);
    expect(parseSize('3 GiB')).toBe(3 * 1024 ** 3);
    expect(parseSize(' 1PB ')).toBe(1e15);
  });

  it('refuses what is not a whole size: fractions, negatives, unknown or miscased units, past exact numbers', () => {
    for (const bad of ['1.5MB', '-1', '5 megabytes', '5mb', '5mib', '5Mi', 'MB', '', '9PiB'])
      expect(parseSize(bad), bad).toBeUndefined();
    for (const bad of [1.5, -1, Number.NaN, MAX_EXACT + 1])
      expect(parseSize(bad), String(bad)).toBeUndefined();
    expect(parseSize(MAX_EXACT)).toBe(MAX_EXACT);
  });
});

describe('parseVolume', () => {
  it('reads a fraction exactly, rounded half up to whole bytes', () => {
    expect(parseVolume('50TB')).toBe(50n * 10n ** 12n);
    expect(parseVolume('1.5TB')).toBe(1_500_000_000_000n);
    expect(parseVolume('0.5PiB')).toBe(2n ** 49n);
    expect(parseVolume('0.0005kB')).toBe(1n);
    expect(parseVolume('0.0004kB')).toBe(0n);
    // 0.1 + 0.2 is no problem here: no floating point.
    expect(parseVolume('0.3GB')).toBe(300_000_000n);
    expect(parseVolume(123)).toBe(123n);
  });

  it('stays exact past MAX_EXACT, so a caller can say by how much a value is over', () => {
    expect(parseVolume('10PB')).toBe(10n ** 16n);
    expect(parseVolume('10PB')! > BigInt(MAX_EXACT)).toBe(true);
  });

  it('refuses what is not a volume', () => {
    for (const bad of ['1,5TB', '.5TB', '1.TB', '-1TB', '1e3', '2Gbps', ''])
      expect(parseVolume(bad), bad).toBeUndefined();
    expect(parseVolume(1.5)).toBeUndefined();
  });
});

describe('scaleDecimal', () => {
  it('multiplies whole.fraction by the unit exactly and rounds half up', () => {
    expect(scaleDecimal('1', '5', 1)).toBe(2n);
    expect(scaleDecimal('2', '49', 1)).toBe(2n);
    expect(scaleDecimal('9007199254740991', '', 1000)).toBe(9_007_199_254_740_991_000n);
  });
});

describe('formatSize and formatDecimalSize', () => {
  it('write the shortest exact form, else bytes, and read back to the same bytes', () => {
    expect(formatSize(64 * 1024 ** 2)).toBe('64MiB');
    expect(formatSize(1536)).toBe('1536B');
    expect(formatSize(3 * 1024 ** 5)).toBe('3PiB');
    expect(formatDecimalSize(50e12)).toBe('50TB');
    expect(formatDecimalSize(1_500_000_000_000)).toBe('1500GB');
    expect(formatDecimalSize(999)).toBe('999B');
    for (const n of [0, 1, 1024, 1000, 64 * 1024 ** 2, 50e12, 1_500_000_000_001, MAX_EXACT]) {
      expect(parseSize(formatSize(n)), `${n}`).toBe(n);
      expect(parseSize(formatDecimalSize(n)), `${n}`).toBe(n);
    }
  });
});
