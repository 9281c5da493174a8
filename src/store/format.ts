/**
 * Exposition text pieces shared by the series store: value formatting, escaping, label text.
 *
 * Prometheus text 0.0.4 and OpenMetrics 1.0 escape label values the same way (backslash, double quote, line
 * feed). HELP differs: text 0.0.4 escapes backslash and line feed only, OpenMetrics escapes the double quote too.
 */
import type { ExpositionFormat } from './types.js';

/**
 * A sample value as Prometheus parses it (Go's strconv.ParseFloat): `+Inf`, `-Inf`, `NaN`, otherwise JS's
 * shortest round-trip form. JS prints every integer below 1e21 without an exponent; larger and tiny magnitudes
 * get one (`1e+21`, `1e-7`), which ParseFloat accepts. `-0` prints as `0`.
 */
export function formatValue(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  // biome-ignore lint/suspicious/noSelfCompare: the fastest NaN test
  if (v !== v) return 'NaN';
  return `${v}`;
}

const MINUS = 0x2d;
const ZERO = 0x30;

/**
 * Writes a sample value as formatValue prints it, in ASCII, into `buf` at `pos`; returns the new position. Safe
 * integers, the common case (counters), are written digit by digit without making a string.
 */
export function writeValue(buf: Buffer, pos: number, v: number): number {
  if (Number.isSafeInteger(v)) {
    if (v === 0) {
      buf[pos++] = ZERO;
      return pos;
    }
    if (v < 0) {
      buf[pos++] = MINUS;
      v = -v;
    }
    let digits = 1;
    for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++;
    for (let i = pos + digits - 1; i >= pos; i--) {
      buf[i] = ZERO + (v % 10);
      v = Math.floor(v / 10);
    }
    return pos + digits;
  }
  const s = formatValue(v);
  for (let i = 0; i < s.length; i++) buf[pos++] = s.charCodeAt(i);
  return pos;
}

const LABEL_SPECIAL = /[\\"\n]/;

export function escapeLabelValue(v: string): string {
  if (!LABEL_SPECIAL.test(v)) return v;
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function escapeHelp(help: string, format: ExpositionFormat): string {
  const s = help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return format === 'openmetrics' ? s.replace(/"/g, '\\"') : s;
}

/**
 * The constant parts around label values: `{a="`, `",b="`, ... and `"}`, so a series' label text is
 * `parts[0] + v0 + parts[1] + v1 + ... + closing`. No label names: the label text is empty.
 */
export interface LabelTemplate {
  readonly parts: readonly string[];
  readonly closing: string;
}

export function labelTemplate(labelNames: readonly string[]): LabelTemplate {
  const parts = labelNames.map((n, i) => (i === 0 ? `{${n}="` : `",${n}="`));
  return { parts, closing: labelNames.length ? '"}' : '' };
}

/**
 * `{a="x",b="y"}` for these values (escaped), or '' without labels. Built with join, which yields one flat
 * string: `+` would yield a rope of cons cells (V8 keeps it as such even as a Map key), several times the
 * memory of the text itself.
 */
export function labelText(t: LabelTemplate, values: readonly string[]): string {
  const parts = t.parts;
  const n = parts.length;
  if (values.length !== n) {
    throw new RangeError(`expected ${n} label values, got ${values.length}`);
  }
  if (n === 0) return '';
  const pieces = new Array<string>(2 * n + 1);
  for (let i = 0; i < n; i++) {
    pieces[2 * i] = parts[i]!;
    pieces[2 * i + 1] = escapeLabelValue(values[i]!);
  }
  pieces[2 * n] = t.closing;
  return pieces.join('');
}

/** The label values back from a label text made by labelText (n values). */
export function parseLabelText(text: string, n: number): string[] {
  const out = new Array<string>(n);
  let pos = 0;
  for (let i = 0; i < n; i++) {
    pos = text.indexOf('="', pos) + 2;
    let end = pos;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(end);
      if (c === 0x22 /* " */) break;
      if (c === 0x5c /* \ */) {
        escaped = true;
        end += 2;
      } else {
        end++;
      }
    }
    const raw = text.slice(pos, end);
    out[i] = escaped ? raw.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c)) : raw;
    pos = end + 1;
  }
  return out;
}
