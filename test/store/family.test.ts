/**
 * One family's rendering (src/store/family.ts), as the store (src/store/series-store.ts, sliced-render.ts) uses
 * it: the body of its live series in text, OpenMetrics and protobuf, in slot order, label values escaped once;
 * the same bytes whether rendered whole or in slices; a text body, once finished, the source the next render reads
 * label text from; and a render over a family whose series changed meanwhile refused at its end, so the store
 * starts again. The store as a whole against a model: family-model.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SeriesFamily } from '../../src/store/family.js';
import type { ExpositionFormat, FamilySpec } from '../../src/store/types.js';
import { parseExposition } from '../helpers/exposition.js';
import { decodeProtobuf } from '../helpers/protobuf.js';

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const COUNTER: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Edge requests.\nBy "status" \\ class.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};
const GAUGE: FamilySpec = {
  name: 'cdn_up',
  help: 'Whether the last poll worked.',
  type: 'gauge',
  labelNames: ['account'],
};

/** A family whose clock reads T, with `series` set in order: label values and value. */
function family(spec: FamilySpec, series: Array<[string[], number]> = []): SeriesFamily {
  const f = new SeriesFamily(spec, () => T);
  for (const [labels, v] of series) f.set(f.slot(labels), v);
  return f;
}

/** The body rendered in slices of `step` slots, as the store's sliced render does between turns of the loop. */
function sliced(f: SeriesFamily, format: ExpositionFormat, step: number): Buffer {
  const r = f.beginRender(format);
  while (r.next < f.highWater) f.renderRange(r, Math.min(r.next + step, f.highWater));
  return f.finishRender(r);
}

describe('a family body in text', () => {
  it('is one line per live series in slot order, label values escaped, after its HELP and TYPE', () => {
    const f = family(COUNTER, [
      [['acme', 'r1'], 5],
      [['acme', 'say "hi"\\now\nthen'], 0.25],
      [['other', 'ü'], 1e21],
    ]);
    expect(f.header('text').toString()).toBe(
      '# HELP cdn_edge_requests_total Edge requests.\\nBy "status" \\\\ class.\n' +
        '# TYPE cdn_edge_requests_total counter\n',
    );
    expect(f.renderBody('text').toString()).toBe(
      'cdn_edge_requests_total{account="acme",resource="r1"} 5\n' +
        'cdn_edge_requests_total{account="acme",resource="say \\"hi\\"\\\\now\\nthen"} 0.25\n' +
        'cdn_edge_requests_total{account="other",resource="ü"} 1e+21\n',
    );
    // What a scraper reads back is what was set.
    const samples = parseExposition(f.header('text').toString() + f.renderBody('text').toString());
    expect(samples.map((s) => s.labels.resource)).toEqual(['r1', 'say "hi"\\now\nthen', 'ü']);
  });

  it('leaves deleted series out and puts a new series in the slot one left, reading labels from its last body', () => {
    const f = family(GAUGE, [
      [['a'], 1],
      [['b'], 2],
      [['c'], 3],
    ]);
    f.renderBody('text');
    expect(f.delete(['b'])).toBe(true);
    f.set(f.find(['a'])!, 10);
    expect(f.renderBody('text').toString()).toBe('cdn_up{account="a"} 10\ncdn_up{account="c"} 3\n');
    f.set(f.slot(['d']), 4);
    expect(f.renderBody('text').toString()).toBe(
      'cdn_up{account="a"} 10\ncdn_up{account="d"} 4\ncdn_up{account="c"} 3\n',
    );
    // Rendered again and again, the label texts read from the previous body stay whole.
    for (let i = 0; i < 3; i++) f.set(f.find(['c'])!, 100 + i);
    expect(f.renderBody('text').toString()).toBe(
      'cdn_up{account="a"} 10\ncdn_up{account="d"} 4\ncdn_up{account="c"} 102\n',
    );
  });

  it('is the same in slices of any size as in one piece', () => {
    const series: Array<[string[], number]> = Array.from({ length: 50 }, (_, i) => [
      ['acme', `r${i}`],
      i * 1.5,
    ]);
    const whole = family(COUNTER, series).renderBody('text');
    for (const step of [1, 7, 50]) {
      const f = family(COUNTER, series);
      f.delete(['acme', 'r3']);
      f.set(f.slot(['acme', 'r3']), 4.5);
      expect(sliced(f, 'text', step).equals(whole), `step ${step}`).toBe(true);
    }
  });

  it('refuses to finish a render over a family whose series changed meanwhile; a new render has them all', () => {
    const f = family(GAUGE, [
      [['a'], 1],
      [['b'], 2],
    ]);
    const r = f.beginRender('text');
    f.renderRange(r, 1);
    f.set(f.slot(['c']), 3);
    f.renderRange(r, f.highWater);
    expect(() => f.finishRender(r)).toThrow('cdn_up: a render finished over a changed family');
    f.abandonRender(r);
    expect(f.renderBody('text').toString()).toBe(
      'cdn_up{account="a"} 1\ncdn_up{account="b"} 2\ncdn_up{account="c"} 3\n',
    );
  });
});

describe('a family body in OpenMetrics', () => {
  it("names a counter without _total in its header, and gives each series a _total sample and its start's _created", () => {
    const f = new SeriesFamily(COUNTER, () => T);
    f.set(f.slot(['acme', 'r1']), 5);
    f.set(f.slot(['acme', 'r2'], T - 90_500), 7);
    expect(f.rendersOwn('openmetrics')).toBe(true);
    expect(f.header('openmetrics').toString()).toBe(
      '# HELP cdn_edge_requests Edge requests.\\nBy \\"status\\" \\\\ class.\n# TYPE cdn_edge_requests counter\n',
    );
    const s = T / 1000;
    expect(f.renderBody('openmetrics').toString()).toBe(
      `cdn_edge_requests_total{account="acme",resource="r1"} 5\n` +
        `cdn_edge_requests_created{account="acme",resource="r1"} ${s}\n` +
        `cdn_edge_requests_total{account="acme",resource="r2"} 7\n` +
        // A start in whole seconds.
        `cdn_edge_requests_created{account="acme",resource="r2"} ${s - 91}\n`,
    );
    expect(sliced(f, 'openmetrics', 1).toString()).toBe(f.renderBody('openmetrics').toString());
  });

  it("has no body of its own for a gauge: a gauge's OpenMetrics lines are its text lines", () => {
    const f = family(GAUGE, [[['a'], 1]]);
    expect(f.rendersOwn('openmetrics')).toBe(false);
    expect(f.rendersOwn('protobuf')).toBe(true);
    expect(f.header('openmetrics').toString()).toBe(
      '# HELP cdn_up Whether the last poll worked.\n# TYPE cdn_up gauge\n',
    );
  });
});

describe('a family body in protobuf', () => {
  it('is a MetricFamily, with its header, that a protobuf reader decodes to the same series, values and starts', () => {
    const f = new SeriesFamily(COUNTER, () => T);
    f.set(f.slot(['acme', 'r1']), 5);
    f.set(f.slot(['acme', 'say "hi"\\now\nthen'], T - 60_000), 0.25);
    f.set(f.slot(['other', 'gone']), 1);
    f.delete(['other', 'gone']);
    const body = f.renderBody('protobuf');
    expect(sliced(f, 'protobuf', 1).equals(body)).toBe(true);
    const [decoded, ...rest] = decodeProtobuf(Buffer.concat([f.protobufHeader(body.length), body]));
    expect(rest).toEqual([]);
    expect(decoded).toEqual({
      name: 'cdn_edge_requests_total',
      help: COUNTER.help,
      type: 'counter',
      metrics: [
        { labels: { account: 'acme', resource: 'r1' }, counter: 5, created: T / 1000 },
        {
          labels: { account: 'acme', resource: 'say "hi"\\now\nthen' },
          counter: 0.25,
          created: T / 1000 - 60,
        },
      ],
    });
  });

  it('gives a gauge its value alone', () => {
    const f = family(GAUGE, [[['a'], 0]]);
    const body = f.renderBody('protobuf');
    const [decoded] = decodeProtobuf(Buffer.concat([f.protobufHeader(body.length), body]));
    expect(decoded!.metrics).toEqual([{ labels: { account: 'a' }, gauge: 0 }]);
  });
});
