/**
 * What the series caps share (src/store/limits.ts): a value is over `limits.max_label_length` when its UTF-8 bytes
 * are (docs/configuration.md: 64..1048576 bytes), and a longer name or cname is cut to fit and ends in
 * `...(truncated)`: within the limit, a prefix of the value, valid UTF-8 (no half of a surrogate pair), and as it
 * is (undefined) when it fits.
 */
import { describe, expect, it } from 'vitest';
import { overLength, REFUSAL_REASONS, TRUNCATED_MARKER, truncateLabel } from '../../src/store/limits.js';

/** The documented bounds of limits.max_label_length and some between. */
const MAXES = [64, 65, 100, 1024, 4096];

/** Values of 1-, 2-, 3- and 4-byte characters (a 4-byte one is a surrogate pair), mixed, around each limit. */
function values(max: number): string[] {
  const out: string[] = [];
  for (const unit of ['a', 'é', '€', '😀', 'a😀', 'é€a', '€😀é']) {
    for (const bytes of [max - 1, max, max + 1, max + 2, max + 3, 2 * max, 10 * max]) {
      const n = Math.ceil(bytes / Buffer.byteLength(unit)) + 1;
      for (const v of [unit.repeat(n), `x${unit.repeat(n)}`, `xy${unit.repeat(n)}`]) {
        // Cut to exactly `bytes` bytes or just under, on a character boundary.
        let s = '';
        for (const ch of v) {
          if (Buffer.byteLength(s + ch) > bytes) break;
          s += ch;
        }
        out.push(s);
      }
    }
  }
  return out;
}

describe('overLength', () => {
  it('counts UTF-8 bytes, not characters', () => {
    expect(overLength('a'.repeat(64), 64)).toBe(false);
    expect(overLength('a'.repeat(65), 64)).toBe(true);
    // 32 characters of 2 bytes: 64 bytes, fits; 22 of 3 bytes: 66 bytes, does not.
    expect(overLength('é'.repeat(32), 64)).toBe(false);
    expect(overLength('€'.repeat(22), 64)).toBe(true);
    expect(overLength('😀'.repeat(16), 64)).toBe(false);
    expect(overLength('😀'.repeat(17), 64)).toBe(true);
    for (const max of MAXES)
      for (const v of values(max)) expect(overLength(v, max), `${max}`).toBe(Buffer.byteLength(v) > max);
  });
});

describe('truncateLabel', () => {
  it('leaves a value that fits as it is (undefined)', () => {
    expect(truncateLabel('stream-1.example.com', 64)).toBeUndefined();
    expect(truncateLabel('é'.repeat(32), 64)).toBeUndefined();
  });

  it('cuts a longer value to fit: within the limit, a prefix of it, valid UTF-8, ending in the marker', () => {
    expect(TRUNCATED_MARKER).toBe('...(truncated)');
    for (const max of MAXES) {
      for (const v of values(max)) {
        const got = truncateLabel(v, max);
        if (Buffer.byteLength(v) <= max) {
          expect(got).toBeUndefined();
          continue;
        }
        expect(got, `${max} ${v.slice(0, 8)}`).toBeDefined();
        const cut = got!.slice(0, -TRUNCATED_MARKER.length);
        expect(got!.endsWith(TRUNCATED_MARKER)).toBe(true);
        expect(Buffer.byteLength(got!)).toBeLessThanOrEqual(max);
        expect(v.startsWith(cut)).toBe(true);
        // Valid UTF-8: it survives a round trip through bytes unchanged.
        expect(Buffer.from(got!).toString()).toBe(got);
      }
    }
  });

  it('keeps as much of the value as fits in one-byte text', () => {
    expect(truncateLabel('a'.repeat(65), 64)).toBe(
      'a'.repeat(64 - TRUNCATED_MARKER.length) + TRUNCATED_MARKER,
    );
  });

  it('never splits a surrogate pair at the cut', () => {
    // With room for 50 bytes of text, a 4-byte character would straddle the cut after 'xy' + 12 emoji.
    const got = truncateLabel(`xy${'😀'.repeat(40)}`, 64)!;
    expect(got).toBe(`xy${'😀'.repeat(12)}${TRUNCATED_MARKER}`);
  });
});

describe('refusal reasons', () => {
  it('are the three reasons the docs give for a refused series', () => {
    expect([...REFUSAL_REASONS]).toEqual(['max_series', 'max_series_per_account', 'label_too_long']);
  });
});
