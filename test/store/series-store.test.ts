import { spawnSync } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import type { FamilySpec } from '../../src/store/types.js';
import { findTool } from '../helpers/tools.js';

const requests: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Requests at the edge.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};
const ratio: FamilySpec = {
  name: 'cdn_edge_cache_hit_ratio',
  help: 'Cache hit ratio of the last window.',
  type: 'gauge',
  labelNames: ['account', 'resource'],
};

function text(store: SeriesStore, format: 'text' | 'openmetrics' = 'text'): string {
  return store.render(format).toString('utf8');
}

describe('exposition', () => {
  it('writes HELP, TYPE and one line per series in creation order', () => {
    const store = new SeriesStore();
    const f = store.family(requests);
    f.set(f.slot(['acme', 'r1']), 42);
    f.add(f.slot(['acme', 'r2']), 1.5);
    const g = store.family(ratio);
    g.set(g.slot(['acme', 'r1']), 0.25);
    expect(text(store)).toBe(
      [
        '# HELP cdn_edge_requests_total Requests at the edge.',
        '# TYPE cdn_edge_requests_total counter',
        'cdn_edge_requests_total{account="acme",resource="r1"} 42',
        'cdn_edge_requests_total{account="acme",resource="r2"} 1.5',
        '# HELP cdn_edge_cache_hit_ratio Cache hit ratio of the last window.',
        '# TYPE cdn_edge_cache_hit_ratio gauge',
        'cdn_edge_cache_hit_ratio{account="acme",resource="r1"} 0.25',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values and HELP text as each format requires', () => {
    const store = new SeriesStore();
    const f = store.family({
      name: 'x_info',
      help: 'a "quoted" back\\slash\nand a new line',
      type: 'gauge',
      labelNames: ['v'],
    });
    f.set(f.slot(['say "hi"\\path\nnext']), 1);
    expect(text(store)).toBe(
      [
        '# HELP x_info a "quoted" back\\\\slash\\nand a new line',
        '# TYPE x_info gauge',
        'x_info{v="say \\"hi\\"\\\\path\\nnext"} 1',
        '',
      ].join('\n'),
    );
    expect(text(store, 'openmetrics').split('\n')[0]).toBe(
      '# HELP x_info a \\"quoted\\" back\\\\slash\\nand a new line',
    );
  });

  it('formats values as Prometheus parses them', () => {
    const store = new SeriesStore();
    const f = store.family({ name: 'v', help: 'values', type: 'gauge', labelNames: ['k'] });
    const cases: [number, string][] = [
      [0, '0'],
      [-0, '0'],
      [-3, '-3'],
      [2 ** 53 - 1, '9007199254740991'],
      [1e20, '100000000000000000000'],
      [1e21, '1e+21'],
      [0.1, '0.1'],
      [1e-7, '1e-7'],
      [Number.POSITIVE_INFINITY, '+Inf'],
      [Number.NEGATIVE_INFINITY, '-Inf'],
      [Number.NaN, 'NaN'],
    ];
    for (const [i, [v]] of cases.entries()) f.set(f.slot([String(i)]), v);
    const lines = text(store).split('\n').slice(2, -1);
    expect(lines).toEqual(cases.map(([, s], i) => `v{k="${i}"} ${s}`));
    // Each printed value reads back as the same number (-0 as 0).
    for (const [i, [v]] of cases.entries()) {
      const back = Number(lines[i]!.split(' ')[1]!.replace('Inf', 'Infinity'));
      expect(back === v || (Number.isNaN(back) && Number.isNaN(v))).toBe(true);
    }
  });

  it('writes a family without labels, and leaves out families without series', () => {
    const store = new SeriesStore();
    store.family({ name: 'empty_total', help: 'never used', type: 'counter', labelNames: ['a'] });
    const up = store.family({ name: 'up_ish', help: 'no labels', type: 'gauge', labelNames: [] });
    up.set(up.slot([]), 1);
    expect(text(store)).toBe('# HELP up_ish no labels\n# TYPE up_ish gauge\nup_ish 1\n');
    expect(store.familyNames()).toEqual(['empty_total', 'up_ish']);
    expect(new SeriesStore().render('text').length).toBe(0);
  });

  it('names a counter family without _total in OpenMetrics, its samples with it, and adds no # EOF', () => {
    const start = Date.UTC(2026, 2, 2, 11, 0, 0);
    const store = new SeriesStore({ clock: { now: () => start + 3_600_000 } });
    const f = store.family(requests);
    f.set(f.slot(['acme', 'r1'], start), 7);
    const g = store.family(ratio);
    g.set(g.slot(['acme', 'r1']), 0.5);
    expect(text(store, 'openmetrics')).toBe(
      [
        '# HELP cdn_edge_requests Requests at the edge.',
        '# TYPE cdn_edge_requests counter',
        'cdn_edge_requests_total{account="acme",resource="r1"} 7',
        `cdn_edge_requests_created{account="acme",resource="r1"} ${start / 1000}`,
        '# HELP cdn_edge_cache_hit_ratio Cache hit ratio of the last window.',
        '# TYPE cdn_edge_cache_hit_ratio gauge',
        'cdn_edge_cache_hit_ratio{account="acme",resource="r1"} 0.5',
        '',
      ].join('\n'),
    );
  });
});

describe('caching', () => {
  it('returns the same buffer until something changes, then a new one', () => {
    const store = new SeriesStore();
    const f = store.family(ratio);
    const s = f.slot(['acme', 'r1']);
    f.set(s, 1);
    const first = store.render('text');
    expect(store.render('text')).toBe(first);
    f.set(s, 1); // the same value changes nothing
    expect(store.render('text')).toBe(first);
    f.set(s, 2);
    const second = store.render('text');
    expect(second).not.toBe(first);
    expect(second.toString()).toContain('cdn_edge_cache_hit_ratio{account="acme",resource="r1"} 2\n');
    // A series created at 0 is a change too.
    f.slot(['acme', 'r2']);
    expect(store.render('text').toString()).toContain('resource="r2"} 0\n');
  });

  it('re-renders only what changed: an untouched family keeps its text', () => {
    const store = new SeriesStore();
    const a = store.family(requests);
    const b = store.family(ratio);
    a.set(a.slot(['acme', 'r1']), 1);
    const sb = b.slot(['acme', 'r1']);
    b.set(sb, 0.5);
    const before = text(store);
    b.set(sb, 0.75);
    const after = text(store);
    expect(after).toBe(before.replace('} 0.5\n', '} 0.75\n'));
  });

  it('gzips to exactly the text, cached alongside it', () => {
    const store = new SeriesStore();
    const f = store.family(requests);
    for (let i = 0; i < 100; i++) f.set(f.slot(['acme', `r${i}`]), i);
    for (const format of ['text', 'openmetrics'] as const) {
      const gz = store.renderGzip(format);
      expect(gunzipSync(gz).equals(store.render(format))).toBe(true);
      expect(store.renderGzip(format)).toBe(gz);
    }
    const old = store.renderGzip('text');
    f.add(0, 1);
    const gz = store.renderGzip('text');
    expect(gz).not.toBe(old);
    expect(gunzipSync(gz).toString()).toContain('resource="r0"} 1\n');
  });
});

describe('series', () => {
  it('deletes series and reuses their slots', () => {
    const store = new SeriesStore();
    const f = store.family(ratio);
    const a = f.slot(['acme', 'a']);
    const b = f.slot(['acme', 'b']);
    f.slot(['acme', 'c']);
    f.set(b, 5);
    expect(f.size).toBe(3);
    expect(f.delete(['acme', 'b'])).toBe(true);
    expect(f.delete(['acme', 'b'])).toBe(false);
    expect(f.size).toBe(2);
    expect(f.find(['acme', 'b'])).toBeUndefined();
    expect(text(store)).not.toContain('resource="b"');
    expect(() => f.set(b, 1)).toThrow(/not a live series/);
    const d = f.slot(['acme', 'd']);
    expect(d).toBe(b);
    expect(f.get(d)).toBe(0);
    expect(f.find(['acme', 'a'])).toBe(a);
  });

  it('deleteWhere removes the matching series and forEach gives the label values back', () => {
    const store = new SeriesStore();
    const f = store.family(ratio);
    const odd = 'we"ird\\one\nx';
    for (const account of ['acme', 'globex']) {
      for (const r of ['r1', 'r2', odd]) f.set(f.slot([account, r]), r.length);
    }
    expect(f.deleteWhere((lv) => lv[0] === 'globex' && lv[1] !== 'r1')).toBe(2);
    const seen: [readonly string[], number][] = [];
    f.forEach((lv, v, slot) => {
      seen.push([lv, v]);
      expect(f.get(slot)).toBe(v);
    });
    expect(seen).toEqual([
      [['acme', 'r1'], 2],
      [['acme', 'r2'], 2],
      [['acme', odd], odd.length],
      [['globex', 'r1'], 2],
    ]);
    const before = f.size;
    f.slot(['initech', 'r1']);
    f.slot(['initech', 'r2']);
    f.slot(['initech', 'r3']);
    expect(f.size).toBe(before + 3);
    // Two freed slots were reused, the third is new.
    const slots: number[] = [];
    f.forEach((_lv, _v, s) => {
      slots.push(s);
    });
    expect(Math.max(...slots)).toBe(6);
  });

  it('counters refuse negative deltas and values; gauges take them', () => {
    const store = new SeriesStore();
    const c = store.family(requests);
    const s = c.slot(['acme', 'r1']);
    c.add(s, 3);
    expect(() => c.add(s, -1)).toThrow(RangeError);
    expect(() => c.add(s, Number.NaN)).toThrow(RangeError);
    expect(() => c.set(s, -1)).toThrow(RangeError);
    expect(c.get(s)).toBe(3);
    const g = store.family(ratio);
    const t = g.slot(['acme', 'r1']);
    g.add(t, -2);
    expect(g.get(t)).toBe(-2);
  });

  it('refuses label value lists of the wrong length', () => {
    const f = new SeriesStore().family(ratio);
    expect(() => f.slot(['acme'])).toThrow(/expected 2 label values/);
  });
});

describe('family specs', () => {
  it('refuses a name registered twice, also as OpenMetrics names it', () => {
    const store = new SeriesStore();
    store.family(requests);
    expect(() => store.family({ ...requests, help: 'again' })).toThrow(/clashes/);
    expect(() => store.family({ ...ratio, name: 'cdn_edge_requests' })).toThrow(/clashes/);
    expect(store.familyNames()).toEqual(['cdn_edge_requests_total']);
  });

  it.each([
    [{ ...requests, name: 'cdn_edge_requests' }, /must end in _total/],
    [{ ...requests, name: '_total' }, /must end in _total/],
    [{ ...ratio, name: 'cdn_ratio_total' }, /only counters/],
    [{ ...ratio, name: 'cdn-ratio' }, /invalid metric name/],
    [{ ...ratio, labelNames: ['account', 'resource-id'] }, /invalid label name/],
    [{ ...ratio, labelNames: ['__name'] }, /reserved/],
    [{ ...ratio, labelNames: ['a', 'a'] }, /appears twice/],
  ])('refuses %o', (spec, message) => {
    expect(() => new SeriesStore().family(spec)).toThrow(message);
  });
});

describe('refresh', () => {
  function filled(n: number, chunkSize: number) {
    const store = new SeriesStore({ chunkSize });
    const f = store.family(requests);
    for (let i = 0; i < n; i++) f.set(f.slot(['acme', `r${i}`]), i);
    return { store, f };
  }

  it('serves the last complete buffer while it runs, the new one after', async () => {
    const { store, f } = filled(1000, 100);
    const old = store.render('text');
    store.renderGzip('text');
    for (let i = 0; i < 1000; i++) f.add(i, 1000);
    const done = store.refresh();
    expect(store.refreshing).toBe(true);
    expect(store.render('text')).toBe(old);
    await done;
    expect(store.refreshing).toBe(false);
    const fresh = store.render('text');
    expect(fresh).not.toBe(old);
    const lines = fresh.toString().split('\n').slice(2, -1);
    expect(lines).toHaveLength(1000);
    expect(lines[999]).toBe('cdn_edge_requests_total{account="acme",resource="r999"} 1999');
    // The gzip was made by the refresh, of the same text.
    expect(gunzipSync(store.renderGzip('text')).equals(fresh)).toBe(true);
  });

  it('writes every series once when series come and go while it runs', async () => {
    const { store, f } = filled(1000, 50);
    store.render('openmetrics');
    f.add(0, 1);
    const first = store.refresh();
    // The refresh has written slots 0-49 and yields. r1 (written) moves to r500's slot (not yet written):
    // a render that went on would write r1 twice.
    f.delete(['acme', 'r1']);
    f.delete(['acme', 'r500']);
    f.slot(['acme', 'r1']);
    f.slot(['acme', 'new']);
    await first;
    // While the next refresh runs, scrapes see what the first one published.
    const second = store.refresh();
    const published = store.render('openmetrics');
    await second;
    for (const body of [published, store.render('openmetrics')]) {
      const all = body.toString().split('\n').slice(2, -1);
      // Each counter sample is followed by its start (`_created`) sample.
      const lines = all.filter((_l, i) => i % 2 === 0);
      expect(all.filter((l, i) => i % 2 === 1 && l.startsWith('cdn_edge_requests_created{'))).toHaveLength(
        lines.length,
      );
      const series = lines.map((l) => l.slice(0, l.lastIndexOf(' ')));
      expect(new Set(series).size).toBe(series.length);
      expect(series).toHaveLength(f.size);
      expect(series).toContain('cdn_edge_requests_total{account="acme",resource="new"}');
      expect(series).toContain('cdn_edge_requests_total{account="acme",resource="r1"}');
      expect(series).not.toContain('cdn_edge_requests_total{account="acme",resource="r500"}');
    }
  });
});

describe('promtool', () => {
  it('accepts the text format with the catalogue families, escaping and special values', () => {
    const promtool = findTool('promtool');
    if (!promtool) return;
    const store = new SeriesStore();
    const responses = store.family({
      name: 'cdn_edge_responses_total',
      help: 'Responses at the edge by exact status code ("code"), from edge_status_<code>\\n.',
      type: 'counter',
      labelNames: ['account', 'resource', 'code'],
    });
    const median = store.family({
      name: 'cdn_edge_request_duration_median_seconds',
      help: 'Median request time per size range,\nlast window.',
      type: 'gauge',
      labelNames: ['account', 'resource', 'size_range'],
    });
    const info = store.family({
      name: 'cdn_resource_info',
      help: 'Resource metadata.',
      type: 'gauge',
      labelNames: ['account', 'resource', 'resource_name', 'cname'],
    });
    store.family({ name: 'cdn_unused_total', help: 'No series.', type: 'counter', labelNames: [] });
    for (const code of ['200', '404', '504']) responses.set(responses.slot(['acme', 'r1', code]), 1e21);
    for (const [i, range] of ['0_250k', '4M+', 'all'].entries()) {
      median.set(median.slot(['acme', 'r1', range]), [0.012, Number.NaN, Number.POSITIVE_INFINITY][i]!);
    }
    info.set(info.slot(['acme', 'r1', 'Main "site"\\\nweb', 'cdn.example.com']), 1);
    const body = store.render('text');
    const res = spawnSync(promtool, ['check', 'metrics'], { input: body, encoding: 'utf8', timeout: 20_000 });
    expect(`${res.stdout}${res.stderr}`.trim()).toBe('');
    expect(res.status).toBe(0);
  });

  it('reports a broken exposition (the check is not vacuous)', () => {
    const promtool = findTool('promtool');
    if (!promtool) return;
    const broken = '# TYPE x_total counter\nx_total{a="unterminated} 1\n';
    const res = spawnSync(promtool, ['check', 'metrics'], {
      input: broken,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(res.status).not.toBe(0);
  });
});
