import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/config/index.js';

describe('parseDuration', () => {
  const GOOD: Array<[string, number]> = [
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1m30s', 90_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1s500ms', 1_500],
    ['2d', 172_800_000],
    ['1w', 604_800_000],
    ['0', 0],
    ['0s', 0],
  ];
  it.each(GOOD)('%s = %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', '5 m', '-5m', '1.5m', '30m1h', '5M', '1m1m', 'm', ' 5m'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([0, 500, 1_500, 90_000, 300_000, 5_400_000, 3_600_000, 172_800_000, 90_061_001])(
    'round-trips %i ms',
    (ms) => {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    },
  );

  it('writes the shortest form', () => {
    expect([90_000, 3_600_000, 0].map(formatDuration)).toEqual(['1m30s', '1h', '0s']);
  });
});
