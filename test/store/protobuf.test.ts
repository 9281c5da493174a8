/**
 * The store's protobuf exposition and counter start timestamps, decoded with protobufjs from the published schema
 * (test/helpers/protobuf.ts), not with the exporter's own encoder.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { decodeProtobuf } from '../helpers/protobuf.js';

const T0 = Date.UTC(2026, 2, 2, 12, 0, 0);

function storeAt(ms: { now: number }): SeriesStore {
  return new SeriesStore({ clock: { now: () => ms.now }, chunkSize: 64 });
}

describe('protobuf exposition', () => {
  it('has every family with series, labels unescaped, gauges plain and counters with their start', () => {
    const clock = { now: T0 + 1234 };
    const store = storeAt(clock);
    const requests = store.family({
      name: 'cdn_edge_requests_total',
      help: 'Requests at the edge.',
      type: 'counter',
      labelNames: ['account', 'resource'],
    });
    store.family({ name: 'cdn_empty', help: 'none yet', type: 'gauge', labelNames: ['a'] });
    const info = store.family({
      name: 'x_info',
      help: 'a "quoted" back\\slash\nline',
      type: 'gauge',
      labelNames: ['v', 'w'],
    });
    const bare = store.family({
      name: 'cdn_windows_total',
      help: 'Windows.',
      type: 'counter',
      labelNames: [],
    });
    requests.add(requests.slot(['acme', 'r1'], T0 - 3_600_000), 42);
    requests.add(requests.slot(['acme', 'r2']), 1.5);
    const odd = 'say "hi"\\path\nnext é ✓';
    info.set(info.slot([odd, '']), -0.25);
    bare.add(bare.slot([]), 3);

    const families = decodeProtobuf(store.render('protobuf'));
    expect(families.map((f) => [f.name, f.type, f.help])).toEqual([
      ['cdn_edge_requests_total', 'counter', 'Requests at the edge.'],
      ['x_info', 'gauge', 'a "quoted" back\\slash\nline'],
      ['cdn_windows_total', 'counter', 'Windows.'],
    ]);
    expect(families[0]!.metrics).toEqual([
      { labels: { account: 'acme', resource: 'r1' }, counter: 42, created: (T0 - 3_600_000) / 1000 },
      // Without a start the series starts when it is created (whole seconds).
      { labels: { account: 'acme', resource: 'r2' }, counter: 1.5, created: T0 / 1000 + 1 },
    ]);
    expect(families[1]!.metrics).toEqual([{ labels: { v: odd, w: '' }, gauge: -0.25 }]);
    expect(families[2]!.metrics).toEqual([{ labels: {}, counter: 3, created: T0 / 1000 + 1 }]);
  });

  it('writes OpenMetrics counters with a _created sample after each, gauges and text without', () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    const requests = store.family({
      name: 'cdn_edge_requests_total',
      help: 'Requests.',
      type: 'counter',
      labelNames: ['account'],
    });
    const ratio = store.family({ name: 'cdn_ratio', help: 'Ratio.', type: 'gauge', labelNames: ['account'] });
    requests.add(requests.slot(['acme'], T0 - 600_000), 100);
    requests.add(requests.slot(['b"x']), 1);
    ratio.set(ratio.slot(['acme']), 0.5);
    expect(store.render('openmetrics').toString()).toBe(
      [
        '# HELP cdn_edge_requests Requests.',
        '# TYPE cdn_edge_requests counter',
        'cdn_edge_requests_total{account="acme"} 100',
        `cdn_edge_requests_created{account="acme"} ${(T0 - 600_000) / 1000}`,
        'cdn_edge_requests_total{account="b\\"x"} 1',
        `cdn_edge_requests_created{account="b\\"x"} ${T0 / 1000}`,
        '# HELP cdn_ratio Ratio.',
        '# TYPE cdn_ratio gauge',
        'cdn_ratio{account="acme"} 0.5',
        '',
      ].join('\n'),
    );
    expect(store.render('text').toString()).not.toContain('_created');
  });

  it('stays equal to the text exposition through chunked refreshes, series added and removed, and gzip', async () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    const f = store.family({ name: 'big_total', help: 'Big.', type: 'counter', labelNames: ['id', 'long'] });
    const g = store.family({ name: 'big_gauge', help: 'Big.', type: 'gauge', labelNames: ['id'] });
    // A value longer than 127 bytes takes a two-byte length; a label pair and a metric then do too.
    const long = 'x'.repeat(300);
    for (let i = 0; i < 2000; i++) {
      f.add(f.slot([`r${i}`, i % 7 === 0 ? long : `v\\${i}`], T0 - i * 60_000), i + 0.5);
      g.set(g.slot([`r${i}`]), i / 3);
    }
    store.render('protobuf');
    await store.refresh();
    for (let i = 0; i < 2000; i += 3) f.delete([`r${i}`, i % 7 === 0 ? long : `v\\${i}`]);
    for (let i = 0; i < 100; i++) f.add(f.slot([`new${i}`, ''], T0 + i * 1000), 7);
    await store.refresh();

    const decoded = decodeProtobuf(store.render('protobuf'));
    const fromText = new Map<string, number>();
    for (const line of store.render('text').toString().split('\n')) {
      if (line.startsWith('big_total{'))
        fromText.set(line.slice(0, line.lastIndexOf(' ')), Number(line.split(' ').at(-1)));
    }
    const counters = decoded.find((d) => d.name === 'big_total')!.metrics;
    expect(counters).toHaveLength(fromText.size);
    for (const m of counters) {
      const key = `big_total{id="${m.labels.id}",long="${m.labels.long!.replace(/\\/g, '\\\\')}"}`;
      expect(fromText.get(key)).toBe(m.counter);
      const i = Number(m.labels.id!.replace(/^(r|new)/, ''));
      const start = m.labels.id!.startsWith('new') ? T0 + i * 1000 : T0 - i * 60_000;
      expect(m.created).toBe(start / 1000);
    }
    expect(decoded.find((d) => d.name === 'big_gauge')!.metrics).toHaveLength(2000);
    expect(gunzipSync(store.renderGzip('protobuf')).equals(store.render('protobuf'))).toBe(true);
  });
});

describe('formats built only while asked for', () => {
  it('builds a newly asked format in a refresh that waits for the window being counted', async () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    // What the traffic ledger keeps (src/traffic/counting-ledger.ts): the store reads it at each whole render.
    const counted = new Map<string, number>();
    store.counted = () => new Map(counted);
    const f = store.family({ name: 'w_total', help: 'W.', type: 'counter', labelNames: ['r'] });
    f.add(f.slot(['a']), 1);
    expect(store.enter()).toBeUndefined();
    f.add(f.slot(['a']), 10);
    f.add(f.slot(['b'], T0 - 60_000), 5);
    const preparing = store.prepare('protobuf');
    expect(preparing).toBeInstanceOf(Promise);
    counted.set('acct', T0);
    store.leave();
    await preparing;
    expect(store.prepare('protobuf')).toBeUndefined();
    expect(decodeProtobuf(store.render('protobuf'))[0]!.metrics.map((m) => [m.labels.r, m.counter])).toEqual([
      ['a', 11],
      ['b', 5],
    ]);
    expect(store.countedIn('protobuf')?.get('acct')).toBe(T0);
  });

  it('stops rebuilding a format nobody asked for in 15 minutes, and builds it again when asked', async () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    const f = store.family({ name: 'w_total', help: 'W.', type: 'counter', labelNames: ['r'] });
    f.add(f.slot(['a']), 1);
    await store.prepare('protobuf');
    await store.prepare('text');
    expect(store.countedIn('protobuf')).toBeDefined();
    clock.now += 16 * 60_000;
    store.render('text');
    f.add(f.slot(['a']), 1);
    await store.refresh();
    expect(store.countedIn('protobuf')).toBeUndefined();
    expect(store.render('text').toString()).toContain('w_total{r="a"} 2');
    const again = store.prepare('protobuf');
    expect(again).toBeInstanceOf(Promise);
    await again;
    expect(decodeProtobuf(store.render('protobuf'))[0]!.metrics[0]!.counter).toBe(2);
  });
});

describe('a format scraped only gzipped', () => {
  it('keeps its gzip, not its plain bodies, until a plain scrape asks for them', async () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    const f = store.family({ name: 'g_total', help: 'G.', type: 'counter', labelNames: ['r'] });
    for (let i = 0; i < 500; i++) f.add(f.slot([`r${i}`]), i);
    await store.prepare('protobuf', true);
    f.add(f.slot(['r1']), 100);
    await store.refresh();
    // Served from the gzip made by the refresh; a plain scrape would need the bodies rendered again.
    expect(store.prepare('protobuf', true)).toBeUndefined();
    const gzipped = decodeProtobuf(gunzipSync(store.renderGzip('protobuf')));
    expect(gzipped[0]!.metrics[1]).toEqual({ labels: { r: 'r1' }, counter: 101, created: T0 / 1000 });
    const plain = store.prepare('protobuf');
    expect(plain).toBeInstanceOf(Promise);
    await plain;
    expect(store.prepare('protobuf')).toBeUndefined();
    expect(decodeProtobuf(store.render('protobuf'))).toEqual(gzipped);
    // OpenMetrics likewise, its counters' own bodies included.
    await store.prepare('openmetrics', true);
    expect(gunzipSync(store.renderGzip('openmetrics')).toString()).toContain(
      `g_created{r="r1"} ${T0 / 1000}`,
    );
  });
});

describe('a gzip-only format out of date', () => {
  it('is brought up to date by a refresh the scrape waits for, not rendered by the scrape', async () => {
    const clock = { now: T0 };
    const store = storeAt(clock);
    const f = store.family({ name: 'h_total', help: 'H.', type: 'counter', labelNames: ['r'] });
    f.add(f.slot(['a']), 1);
    await store.prepare('openmetrics', true);
    f.add(f.slot(['a']), 1);
    const waiting = store.prepare('openmetrics', true);
    expect(waiting).toBeInstanceOf(Promise);
    expect(store.refreshing).toBe(true);
    await waiting;
    expect(gunzipSync(store.renderGzip('openmetrics')).toString()).toContain('h_total{r="a"} 2');
  });
});
