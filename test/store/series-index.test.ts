/**
 * A family's series and their index (src/store/series-index.ts), through SeriesIndex itself: one slot per label
 * text, found again byte for byte; `version` moves with every change an exposition would show and `structure` with
 * every series added or removed (what renders and refreshes rely on), `changed` told each time; counters refuse
 * what a counter cannot be; a secret in a label value is never kept; a counter's start as whole seconds in range.
 * (Rendering over it and many series with reuse: test/store/family.test.ts and family-model.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SECRETS } from '../../src/redact.js';
import { FREE_MIN_BYTES } from '../../src/store/free-now.js';
import { moved, SeriesIndex, startSecondsOf } from '../../src/store/series-index.js';
import type { FamilySpec } from '../../src/store/types.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const COUNTER: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Requests.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};
const GAUGE: FamilySpec = {
  name: 'cdn_edge_cache_hit_ratio',
  help: 'Ratio.',
  type: 'gauge',
  labelNames: ['r'],
};

function index(spec = COUNTER) {
  let changes = 0;
  const f = new SeriesIndex(
    spec,
    () => T,
    () => changes++,
  );
  return { f, changes: () => changes };
}

const all = (f: SeriesIndex) => {
  const out: [string[], number][] = [];
  f.forEach((labels, value) => {
    out.push([[...labels], value]);
  });
  return out;
};

const registered: string[] = [];
afterEach(() => {
  for (const s of registered.splice(0)) SECRETS.remove(s);
});

describe('series index: one slot per label text', () => {
  it('creates a series at 0 on first use and finds the same slot after, for any label text', () => {
    const { f } = index();
    const odd = ['acme', 'a "quoted" \\ back\nslash ü 🚀'];
    expect(f.find(odd)).toBeUndefined();
    const s = f.slot(odd);
    expect(f.get(s)).toBe(0);
    expect(f.slot(odd)).toBe(s);
    expect(f.find(odd)).toBe(s);
    // Texts that differ in one byte, or only by where the label boundary lies, are other series.
    expect(f.find(['acme', 'a "quoted" \\ back\nslash ü 🚁'])).toBeUndefined();
    expect(f.find(['acm', `e${odd[1]}`])).toBeUndefined();
    expect(all(f)).toEqual([[odd, 0]]);
    expect(f.size).toBe(1);
  });

  it('reuses a deleted series’ slot for the next new one; the old labels are gone', () => {
    const { f } = index();
    const a = f.slot(['acme', 'a']);
    f.slot(['acme', 'b']);
    expect(f.delete(['acme', 'a'])).toBe(true);
    expect(f.delete(['acme', 'a'])).toBe(false);
    expect(f.find(['acme', 'a'])).toBeUndefined();
    expect(() => f.get(a)).toThrow(`cdn_edge_requests_total: slot ${a} is not a live series`);
    expect(f.slot(['acme', 'c'])).toBe(a);
    expect(f.get(a)).toBe(0);
    expect(f.highWater).toBe(2);
    expect(all(f).map(([l]) => l[1])).toEqual(['c', 'b']);
  });

  it('deleteWhere removes the series whose label values match and says how many', () => {
    const { f } = index();
    for (const acc of ['acme', 'globex']) for (const r of ['1', '2', '3']) f.set(f.slot([acc, r]), Number(r));
    expect(f.deleteWhere((l) => l[0] === 'acme')).toBe(3);
    expect(f.deleteWhere(() => false)).toBe(0);
    expect(all(f)).toEqual([
      [['globex', '1'], 1],
      [['globex', '2'], 2],
      [['globex', '3'], 3],
    ]);
  });

  it('finds every series after many are added and removed (the table grows and shifts back)', () => {
    const { f } = index();
    for (let i = 0; i < 3000; i++) f.set(f.slot(['acme', `r${i}`]), i);
    for (let i = 0; i < 3000; i += 3) f.delete(['acme', `r${i}`]);
    for (let i = 0; i < 3000; i++) {
      const s = f.find(['acme', `r${i}`]);
      if (i % 3 === 0) expect(s).toBeUndefined();
      else expect(f.get(s!)).toBe(i);
    }
    expect(f.size).toBe(2000);
  });
});

describe('series index: version, structure and changed', () => {
  it('moves version with each change an exposition shows, structure with series added or removed only', () => {
    const { f, changes } = index();
    const at = () => [f.version, f.structure, changes()];
    const s = f.slot(['acme', 'a']);
    expect(at()).toEqual([1, 1, 1]);
    f.slot(['acme', 'a']);
    f.add(s, 0);
    f.set(s, 0);
    // Nothing changed: nothing to render again.
    expect(at()).toEqual([1, 1, 1]);
    f.add(s, 5);
    f.set(s, 7);
    expect(at()).toEqual([3, 1, 3]);
    f.delete(['acme', 'a']);
    expect(at()).toEqual([4, 2, 4]);
    f.deleteWhere(() => true);
    expect(at()).toEqual([4, 2, 4]);
  });
});

describe('series index: values', () => {
  it('refuses a counter a negative delta or value, or one that is not a number, naming the family', () => {
    const { f } = index();
    const s = f.slot(['acme', 'a']);
    f.set(s, 10);
    expect(() => f.add(s, -1)).toThrow(
      'cdn_edge_requests_total: a counter only accepts non-negative deltas, got -1',
    );
    expect(() => f.add(s, Number.NaN)).toThrow(RangeError);
    expect(() => f.set(s, -0.5)).toThrow('cdn_edge_requests_total: a counter cannot be set to -0.5');
    expect(() => f.set(s, Number.NaN)).toThrow(RangeError);
    expect(f.get(s)).toBe(10);
  });

  it('lets a gauge go anywhere, NaN included', () => {
    const { f } = index(GAUGE);
    const s = f.slot(['x']);
    f.set(s, -3);
    f.add(s, -1);
    expect(f.get(s)).toBe(-4);
    f.set(s, Number.NaN);
    expect(f.get(s)).toBeNaN();
  });
});

describe('series index: a secret in a label value', () => {
  it('keeps the series under the masked value, counts it, and two values masked alike share one series', () => {
    const secret = 'tok-9f8e7d6c5b4a39281706';
    SECRETS.add(secret);
    registered.push(secret);
    const before = SECRETS.redactions('label');
    const { f } = index();
    const s = f.slot(['acme', `id-${secret}`]);
    expect(f.slot(['acme', `id-${secret}`])).toBe(s);
    expect(SECRETS.redactions('label')).toBe(before + 1);
    const [[labels]] = all(f) as [[string[], number]];
    expect(labels[1]).not.toContain(secret);
    expect(labels[1]).toBe(SECRETS.redact(`id-${secret}`));
    expect(f.find(['acme', `id-${secret}`])).toBe(s);
  });
});

describe('startSecondsOf and startOf', () => {
  it('keeps whole seconds from 1 to 2^32 - 1, anything else none (0)', () => {
    expect(startSecondsOf(1000)).toBe(1);
    expect(startSecondsOf(1999)).toBe(1);
    expect(startSecondsOf(999)).toBe(0);
    expect(startSecondsOf(0xffff_ffff * 1000 + 999)).toBe(0xffff_ffff);
    expect(startSecondsOf(0x1_0000_0000 * 1000)).toBe(0);
    expect(startSecondsOf(-5000)).toBe(0);
    expect(startSecondsOf(Number.NaN)).toBe(0);
  });

  it('gives a series the start it was created with, in whole seconds, or the clock’s now', () => {
    const { f } = index();
    const given = f.slot(['acme', 'a'], T - 90_500);
    const now = f.slot(['acme', 'b']);
    const none = f.slot(['acme', 'c'], 0x1_0000_0000 * 1000);
    expect(f.startOf(given)).toBe(T - 91_000);
    expect(f.startOf(now)).toBe(T);
    expect(f.startOf(none)).toBe(0);
    // A series found again keeps its start.
    f.slot(['acme', 'a'], T);
    expect(f.startOf(given)).toBe(T - 91_000);
  });
});

describe('moved', () => {
  it('copies the bytes in use into a buffer of the size asked, and frees a large old one', () => {
    const old = Buffer.allocUnsafeSlow(FREE_MIN_BYTES);
    old.write('label text');
    const out = moved(old, 5, 8);
    expect(out.length).toBe(8);
    expect(out.toString('utf8', 0, 5)).toBe('label');
    expect(old.length).toBe(0);
  });
});
