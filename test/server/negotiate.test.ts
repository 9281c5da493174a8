/**
 * The exposition format chosen from Accept (src/server/negotiate.ts), through a real express app as /metrics
 * sees it. Issue 33, row 1: a 16 KB `Accept: *\/*,*\/*,...` cost 103 ms of CPU per request in negotiator, which
 * compares every offer with every range; the parser now reads at most MAX_ACCEPT_RANGES ranges. Its smaller item:
 * `charset=utf-8` on the OpenMetrics range got the classic text format.
 *
 * negotiator (express's `req.accepts`, which the app used before) is the reference: on headers within the bound
 * and without `charset`, the answer is the same. (No timing here: bench/hostile.ts measures the CPU.)
 */
import express from 'express';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ACCEPT_RANGES, negotiateFormat, parseAccept } from '../../src/server/negotiate.js';
import { listen, type Running, request } from './http.js';

let app: Running;
beforeAll(async () => {
  const e = express();
  e.get('/', (req, res) => {
    res.json({ format: negotiateFormat(req) });
  });
  app = await listen(e);
});
afterAll(() => app.close());

async function formatFor(accept: string): Promise<string> {
  const res = await request(app.url, { headers: { accept } });
  return (JSON.parse(res.body.toString('utf8')) as { format: string }).format;
}

/** The offers as the app gave them to negotiator before, in its order, and their formats. */
const PROTOBUF =
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';
const REFERENCE_OFFERS = new Map<string, string>(
  (
    [
      ['text/plain; version=0.0.4', 'text'],
      ['application/openmetrics-text; version=1.0.0', 'openmetrics'],
      ['application/openmetrics-text; version=0.0.1', 'openmetrics'],
      [PROTOBUF, 'protobuf'],
    ] as const
  ).flatMap(([type, format]) => [
    [type, format] as const,
    ...['allow-utf-8', 'underscores', 'dots', 'values'].map(
      (e) => [`${type}; escaping=${e}`, format] as const,
    ),
  ]),
);

/** negotiator's choice, as express's `req.accepts` made it. */
function reference(accept: string): string {
  const accepts = express.request.accepts as (this: unknown, types: string[]) => string | false;
  const best = accepts.call({ headers: { accept } }, [...REFERENCE_OFFERS.keys()]);
  return (best && REFERENCE_OFFERS.get(best)) || 'text';
}

const PROTOBUF_RANGE =
  'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited';
const PROMETHEUS_2 =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

describe('a pathological Accept header (issue 33, row 1)', () => {
  /** 16 KB of `*\/*,` as the issue sent (Node's default header limit is 16 KiB for all headers together). */
  const WILDCARDS = Array.from({ length: 4000 }, () => '*/*').join(',');

  it('is read up to MAX_ACCEPT_RANGES ranges, whatever its length', () => {
    expect(WILDCARDS.length).toBeGreaterThan(15_000);
    expect(parseAccept(WILDCARDS)).toHaveLength(MAX_ACCEPT_RANGES);
    expect(parseAccept(`${PROMETHEUS_2},${WILDCARDS}`)).toHaveLength(MAX_ACCEPT_RANGES);
    fc.assert(
      fc.property(fc.string({ maxLength: 2000 }), (header) => {
        expect(parseAccept(header).length).toBeLessThanOrEqual(MAX_ACCEPT_RANGES);
      }),
      { numRuns: 300, seed: 33 },
    );
  });

  it('gets the answer its first ranges give: the same as `*/*`, or as Prometheus header it starts with', async () => {
    expect(await formatFor(WILDCARDS)).toBe(await formatFor('*/*'));
    expect(await formatFor(`${PROMETHEUS_2},${WILDCARDS}`)).toBe('openmetrics');
  });

  it('stops after MAX_ACCEPT_RANGES: a format named in the range after the last read is not chosen', async () => {
    const om = 'application/openmetrics-text;version=1.0.0';
    const filler = (n: number) => Array.from({ length: n }, () => 'text/html').join(',');
    // The last range read names OpenMetrics: chosen. One range later: not read, the classic text format.
    expect(await formatFor(`${filler(MAX_ACCEPT_RANGES - 1)},${om}`)).toBe('openmetrics');
    expect(await formatFor(`${filler(MAX_ACCEPT_RANGES)},${om}`)).toBe('text');
  });

  it('a range of 16 KB of parameters is read once and matches as its first parameters say', async () => {
    const params = Array.from({ length: 2000 }, (_, i) => `p${i}=*`).join(';');
    expect(parseAccept(`application/openmetrics-text;version=1.0.0;${params}`)[0]!.params.size).toBe(2001);
    expect(await formatFor(`application/openmetrics-text;version=1.0.0;${params}`)).toBe('openmetrics');
  });
});

describe('charset on a range (issue 33, smaller item)', () => {
  it.each([
    ['application/openmetrics-text;version=1.0.0;charset=utf-8', 'openmetrics'],
    ['application/openmetrics-text; version=1.0.0; charset=UTF-8', 'openmetrics'],
    ['application/openmetrics-text;charset=utf-8', 'openmetrics'],
    ['text/plain;version=0.0.4;charset=utf-8,application/openmetrics-text;q=0.5', 'text'],
    // Another charset is not what we write: the next acceptable range decides.
    ['application/openmetrics-text;version=1.0.0;charset=iso-8859-1,application/json', 'text'],
    ['application/openmetrics-text;version=1.0.0;charset=iso-8859-1,*/*;q=0.1', 'text'],
    // protobuf has no charset.
    [`${PROTOBUF_RANGE};charset=utf-8,text/plain;q=0.1`, 'text'],
  ])('%s -> %s', async (accept, format) => {
    expect(await formatFor(accept)).toBe(format);
  });
});

describe('the same choice as negotiator within the bound', () => {
  const range = fc
    .record({
      type: fc.constantFrom(
        'text/plain',
        'TEXT/Plain',
        'application/openmetrics-text',
        'application/vnd.google.protobuf',
        'application/*',
        'text/*',
        '*/*',
        'text/html',
        'application/json',
        'garbage',
        '',
      ),
      params: fc.array(
        fc.constantFrom(
          'version=0.0.4',
          'version=1.0.0',
          'version="1.0.0"',
          'version=0.0.1',
          'version=2.0.0',
          'version=*',
          'escaping=allow-utf-8',
          'escaping=underscores',
          'escaping=other',
          'proto=io.prometheus.client.MetricFamily',
          'proto=other.Message',
          'encoding=delimited',
          'encoding=text',
          'q=0',
          'q=0.1',
          'q=0.5',
          'q=0.75',
          'q=1',
          'q=',
          'q=x',
          'flag',
          'x="a,b;c"',
          ' version = 1.0.0 ',
        ),
        { maxLength: 4 },
      ),
      space: fc.constantFrom('', ' ', '\t'),
    })
    .map(({ type, params, space }) => [type, ...params].join(`;${space}`));
  const header = fc
    .array(range, { minLength: 1, maxLength: MAX_ACCEPT_RANGES })
    .chain((ranges) => fc.constantFrom(', ', ',').map((sep) => ranges.join(sep)));

  it('gives negotiator’s answer for headers of at most MAX_ACCEPT_RANGES ranges', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(header, (accept) => {
        const chosen = negotiateFormat({ headers: { accept } });
        expect(chosen, accept).toBe(reference(accept));
        seen.add(chosen);
      }),
      { numRuns: 2000, seed: 33 },
    );
    // The headers drawn reach every format, not only the default.
    expect([...seen].sort()).toEqual(['openmetrics', 'protobuf', 'text']);
  });

  it.each([
    PROMETHEUS_2,
    'text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,*/*;q=0.1',
    `${PROTOBUF_RANGE};q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1`,
    'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
    'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8',
  ])('Prometheus’ and a browser’s headers: %s', async (accept) => {
    expect(await formatFor(accept)).toBe(reference(accept));
  });
});
