/**
 * The exposition text pieces of the series store (src/store/format.ts): sample values as Prometheus parses them
 * (`+Inf`, `-Inf`, `NaN`, JS's shortest round-trip form otherwise, `-0` as `0`), written into a buffer exactly as
 * they print; label values escaped alike in text 0.0.4 and OpenMetrics (backslash, double quote, line feed); HELP
 * escaped per format (OpenMetrics escapes the double quote too); label text that gives the same values back.
 */
import { describe, expect, it } from 'vitest';
import {
  escapeHelp,
  escapeLabelValue,
  formatValue,
  labelTemplate,
  labelText,
  parseLabelText,
  writeValue,
} from '../../src/store/format.js';

/** Values across the kinds formatValue tells apart, and a seeded spread of others. */
function values(): number[] {
  const out = [0, -0, 1, -1, 7, 10, 99, 100, 1234567890, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER];
  out.push(
    Number.MAX_SAFE_INTEGER + 2,
    1e21,
    1.5e300,
    1e-7,
    0.1,
    0.875,
    -2.5,
    Number.MIN_VALUE,
    Number.MAX_VALUE,
  );
  out.push(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN);
  let s = 7;
  const next = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  for (let i = 0; i < 500; i++) {
    const scale = 10 ** Math.floor(next() * 24 - 8);
    const v = (next() - 0.3) * scale;
    out.push(v, Math.round(v));
  }
  return out;
}

describe('sample values', () => {
  it('print as Prometheus reads them', () => {
    expect(formatValue(Number.POSITIVE_INFINITY)).toBe('+Inf');
    expect(formatValue(Number.NEGATIVE_INFINITY)).toBe('-Inf');
    expect(formatValue(Number.NaN)).toBe('NaN');
    expect(formatValue(-0)).toBe('0');
    expect(formatValue(1234567890123)).toBe('1234567890123');
    expect(formatValue(0.875)).toBe('0.875');
    expect(formatValue(1e21)).toBe('1e+21');
    expect(formatValue(1e-7)).toBe('1e-7');
  });

  it('read back as the same number (what Prometheus stores is what was counted)', () => {
    const parse = (s: string) =>
      s === '+Inf' ? Number.POSITIVE_INFINITY : s === '-Inf' ? Number.NEGATIVE_INFINITY : Number(s);
    for (const v of values()) {
      if (Number.isNaN(v)) continue;
      expect(parse(formatValue(v)), String(v)).toBe(v === 0 ? 0 : v);
    }
  });

  it('written into a buffer are exactly the printed ASCII, at the given position, with the new position returned', () => {
    const buf = Buffer.alloc(64, 0x2e);
    for (const v of values()) {
      buf.fill(0x2e);
      const end = writeValue(buf, 3, v);
      const s = formatValue(v);
      expect(buf.toString('latin1', 3, end), String(v)).toBe(s);
      expect(end).toBe(3 + s.length);
      // Nothing around it is touched.
      expect(buf[2]).toBe(0x2e);
      expect(buf[end]).toBe(0x2e);
    }
  });
});

describe('escaping', () => {
  it('escapes backslash, double quote and line feed in label values, and leaves other text as it is', () => {
    expect(escapeLabelValue('plain-101 é <b>')).toBe('plain-101 é <b>');
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeLabelValue('\\n')).toBe('\\\\n');
    expect(escapeLabelValue('tab\there\r')).toBe('tab\there\r');
  });

  it('escapes HELP per format: the double quote in OpenMetrics only', () => {
    const help = 'Bytes "served"\nfrom C:\\cache';
    expect(escapeHelp(help, 'text')).toBe('Bytes "served"\\nfrom C:\\\\cache');
    expect(escapeHelp(help, 'openmetrics')).toBe('Bytes \\"served\\"\\nfrom C:\\\\cache');
  });
});

describe('label text', () => {
  it('is {name="value",...} with values escaped, and empty without labels', () => {
    const t = labelTemplate(['account', 'resource']);
    expect(labelText(t, ['acme', 'we"ird\\name\n'])).toBe('{account="acme",resource="we\\"ird\\\\name\\n"}');
    expect(labelText(labelTemplate([]), [])).toBe('');
    expect(labelText(labelTemplate(['a']), [''])).toBe('{a=""}');
  });

  it('refuses a count of values other than the label names', () => {
    expect(() => labelText(labelTemplate(['a', 'b']), ['x'])).toThrow(RangeError);
  });

  it('gives the same values back, however awkward', () => {
    const awkward = [
      '',
      'plain',
      '"',
      '\\',
      '\n',
      '\\n',
      '="',
      '","',
      'a="b",c="d"',
      '\\"}',
      'é€😀',
      'x'.repeat(300),
    ];
    const t = labelTemplate(['a', 'b', 'c']);
    for (const a of awkward)
      for (const b of awkward.slice(0, 6)) {
        const vals = [a, b, `${b}${a}`];
        expect(parseLabelText(labelText(t, vals), 3)).toEqual(vals);
      }
  });
});
