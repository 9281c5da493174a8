/**
 * The series store against a plain Map model: random series come and go (slot reuse, the hash index's
 * backward-shift deletion, label texts read back from the rendered body), values change, and renders (synchronous
 * and chunked refreshes that yield to the event loop) interleave with all of it. After every step the exposition a
 * scraper would read must be exactly the model's.
 */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/simulator/random.js';
import { formatValue } from '../../src/store/format.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family } from '../../src/store/types.js';

const VALUES = ['r', 'r1', 'ü-é', 'x"y', 'a\\b', 'line\nbreak', '', 'long-'.repeat(30), '😀'];

function escapeValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function modelText(name: string, model: Map<string, number>, order: string[]): string[] {
  return order
    .filter((k) => model.has(k))
    .map((k) => {
      const [a, b] = JSON.parse(k) as [string, string];
      return `${name}{account="${escapeValue(a)}",resource="${escapeValue(b)}"} ${formatValue(model.get(k)!)}`;
    });
}

function exposed(store: SeriesStore): string[] {
  return store
    .render('text')
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'));
}

describe('series store against a model', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`keeps every series exact through adds, deletes, reuse and interleaved renders (seed ${seed})`, async () => {
      const rand = mulberry32(seed);
      const store = new SeriesStore({ chunkSize: 7 });
      const f: Family = store.family({
        name: 'cdn_x_total',
        help: 'x',
        type: 'counter',
        labelNames: ['account', 'resource'],
      });
      const model = new Map<string, number>();
      const pick = (): [string, string] => [
        `acct${Math.floor(rand() * 3)}`,
        `${VALUES[Math.floor(rand() * VALUES.length)]}${Math.floor(rand() * 40)}`,
      ];
      let refreshes: Promise<void>[] = [];
      for (let step = 0; step < 1500; step++) {
        const op = rand();
        const labels = pick();
        const key = JSON.stringify(labels);
        if (op < 0.45) {
          const d = Math.floor(rand() * 1000) / (rand() < 0.2 ? 7 : 1);
          f.add(f.slot(labels), d);
          model.set(key, (model.get(key) ?? 0) + d);
        } else if (op < 0.7) {
          expect(f.delete(labels)).toBe(model.delete(key));
        } else if (op < 0.75) {
          const acct = labels[0];
          const n = f.deleteWhere((l) => l[0] === acct && l[1]!.length % 2 === 0);
          let m = 0;
          for (const k of [...model.keys()]) {
            const [a, b] = JSON.parse(k) as [string, string];
            if (a === acct && b.length % 2 === 0) {
              model.delete(k);
              m++;
            }
          }
          expect(n).toBe(m);
        } else if (op < 0.85) {
          refreshes.push(store.refresh());
        } else if (op < 0.9) {
          await Promise.all(refreshes);
          refreshes = [];
        } else {
          const found = f.find(labels);
          expect(found === undefined).toBe(!model.has(key));
          if (found !== undefined) expect(f.get(found)).toBe(model.get(key));
        }
        if (step % 50 === 49 && refreshes.length === 0) {
          // Every live series once, with the model's value; forEach gives the label values back.
          const seen = new Map<string, number>();
          f.forEach((l, v) => {
            seen.set(JSON.stringify(l), v);
          });
          expect(seen).toEqual(model);
          const lines = exposed(store);
          expect(lines.length).toBe(model.size);
          expect(new Set(lines)).toEqual(new Set(modelText('cdn_x_total', model, [...model.keys()])));
        }
      }
      await Promise.all(refreshes);
      await store.refresh();
      expect(new Set(exposed(store))).toEqual(new Set(modelText('cdn_x_total', model, [...model.keys()])));
      expect(f.size).toBe(model.size);
    });
  }

  it('finds every one of 50,000 series after a third are deleted and the slots reused', () => {
    const store = new SeriesStore();
    const f = store.family({ name: 'g', help: 'g', type: 'gauge', labelNames: ['r'] });
    for (let i = 0; i < 50_000; i++) f.set(f.slot([`r${i}`]), i);
    store.render('text');
    for (let i = 0; i < 50_000; i += 3) expect(f.delete([`r${i}`])).toBe(true);
    for (let i = 0; i < 50_000; i += 3) f.set(f.slot([`n${i}`]), -i - 1);
    for (let i = 0; i < 50_000; i++) {
      const s = f.find([`r${i}`]);
      if (i % 3 === 0) expect(s).toBeUndefined();
      else expect(f.get(s!)).toBe(i);
      if (i % 3 === 0) expect(f.get(f.find([`n${i}`])!)).toBe(-i - 1);
    }
    const lines = exposed(store);
    expect(lines.length).toBe(50_000);
    expect(lines).toContain('g{r="n3"} -4');
    expect(lines).toContain('g{r="r4"} 4');
  });

  it('renders values longer than the first estimate (the body grows) and reads the labels back after', async () => {
    const store = new SeriesStore({ chunkSize: 5000 });
    const f = store.family({ name: 'g', help: 'g', type: 'gauge', labelNames: ['r'] });
    const n = 100_000;
    for (let i = 0; i < n; i++) f.set(f.slot([`r${i}`]), -1 / (i + 3));
    await store.refresh();
    const lines = exposed(store);
    expect(lines).toHaveLength(n);
    for (let i = 0; i < n; i += 997) expect(lines[i]).toBe(`g{r="r${i}"} ${formatValue(-1 / (i + 3))}`);
    // The labels now come from that body: every series is still found, and renders again the same.
    for (let i = 0; i < n; i += 7) f.set(f.find([`r${i}`])!, i);
    await store.refresh();
    const again = exposed(store);
    for (let i = 0; i < n; i += 997) {
      expect(again[i]).toBe(`g{r="r${i}"} ${formatValue(i % 7 === 0 ? i : -1 / (i + 3))}`);
    }
  });
});
