import { describe, expect, it } from 'vitest';
import { SIZE_RANGES } from '../../src/api/vocabulary.js';
import { ApiError } from '../../src/http/errors.js';
import { parseMetricsResponse } from '../../src/traffic/parse.js';
import type { TrafficResponse } from '../../src/traffic/response.js';

function body(data: unknown[], extra: Record<string, unknown> = {}) {
  return {
    start: '2026-01-01T12:00:00',
    end: '2026-01-01T12:05:00',
    account: 'acme',
    metrics: ['edge_status_200', 'edge_request_time'],
    data,
    ...extra,
  };
}

function paths(r: TrafficResponse): string[] {
  return r.issues.map((i) => i.path);
}

describe('parseMetricsResponse: shapes', () => {
  it('reads the envelope: account, window bounds as epoch ms, metric names', () => {
    const r = parseMetricsResponse(body([{ edge_requests_total: 5 }]));
    expect(r.account).toBe('acme');
    expect(r.start).toBe(Date.UTC(2026, 0, 1, 12, 0));
    expect(r.end).toBe(Date.UTC(2026, 0, 1, 12, 5));
    expect(r.metrics).toEqual(['edge_status_200', 'edge_request_time']);
    expect(r.records).toHaveLength(1);
    expect(r.issues).toEqual([]);
    expect(r.unknownKeys).toEqual([]);
  });

  it('falls back to the account asked for when the body does not echo it', () => {
    const r = parseMetricsResponse({ data: [] }, { account: 'demo' });
    expect(r.account).toBe('demo');
    expect(r.start).toBeUndefined();
  });

  it('splits status keys into exact codes and classes, per side, including codes the document does not list', () => {
    const r = parseMetricsResponse(
      body([
        {
          edge_status_200: 90,
          edge_status_2xx: 95,
          edge_status_418: 1,
          edge_status_5xx: 3,
          origin_status_504: 2,
          origin_status_5xx: 2,
        },
      ]),
    );
    const rec = r.records[0]!;
    expect([...rec.edge.codes]).toEqual([
      ['200', 90],
      ['418', 1],
    ]);
    expect([...rec.edge.classes]).toEqual([
      ['2xx', 95],
      ['5xx', 3],
    ]);
    expect([...rec.origin.codes]).toEqual([['504', 2]]);
    expect([...rec.origin.classes]).toEqual([['5xx', 2]]);
    expect(r.issues).toEqual([]);
  });

  it('reads bandwidth, requests, hit bytes and hit ratio on their sides', () => {
    const r = parseMetricsResponse(
      body([
        {
          edge_bandwidth: 1234.5,
          edge_requests_total: 100,
          edge_hit_bytes: 4096,
          edge_hit_ratio: 0.75,
          origin_bandwidth: 10,
          origin_requests_total: 7,
        },
      ]),
    );
    const { edge, origin } = r.records[0]!;
    expect(edge).toMatchObject({
      bandwidthBitsPerSecond: 1234.5,
      requests: 100,
      hitBytes: 4096,
      hitRatio: 0.75,
    });
    expect(origin).toMatchObject({ bandwidthBitsPerSecond: 10, requests: 7 });
    expect(origin.hitBytes).toBeUndefined();
  });

  it('accepts request_time as a plain number (keyed "all")', () => {
    const r = parseMetricsResponse(body([{ edge_request_time: 0.25 }]));
    expect([...r.records[0]!.edge.requestTimeSeconds]).toEqual([['all', 0.25]]);
  });

  it('accepts request_time as an object keyed by size range', () => {
    const byRange = Object.fromEntries(SIZE_RANGES.map((range, i) => [range, i / 10]));
    const r = parseMetricsResponse(body([{ origin_request_time: byRange }]));
    const times = r.records[0]!.origin.requestTimeSeconds;
    expect([...times.keys()]).toEqual([...SIZE_RANGES]);
    expect(times.get('4M+')).toBe(0.7);
    expect(r.issues).toEqual([]);
  });

  it('accepts flattened request_time keys', () => {
    const r = parseMetricsResponse(
      body([{ edge_request_time_0_250k: 0.1, 'edge_request_time_4M+': 2.5, origin_request_time_1m_2m: 0.9 }]),
    );
    const rec = r.records[0]!;
    expect(rec.edge.requestTimeSeconds.get('0_250k')).toBe(0.1);
    expect(rec.edge.requestTimeSeconds.get('4M+')).toBe(2.5);
    expect(rec.origin.requestTimeSeconds.get('1m_2m')).toBe(0.9);
    expect(r.unknownKeys).toEqual([]);
  });

  it('reads resource identity on /resources elements', () => {
    const r = parseMetricsResponse(
      body([
        { resource: '1001', resource_name: 'www', cname: 'www.example', edge_requests_total: 1 },
        { resource: '1002', resource_name: 'img', cname: 'img.example', edge_requests_total: 2 },
      ]),
      { breakdown: 'resource' },
    );
    expect(r.records.map((x) => [x.resource, x.resourceName, x.cname, x.edge.requests])).toEqual([
      ['1001', 'www', 'www.example', 1],
      ['1002', 'img', 'img.example', 2],
    ]);
  });

  it('ignores unknown keys and lists each place once', () => {
    const r = parseMetricsResponse(
      body(
        [
          { edge_foo: 1, bar: 2, edge_status_abc: 3 },
          { bar: 4, origin_hit_bytes: 5 },
        ],
        { version: 2 },
      ),
    );
    expect(r.unknownKeys.sort()).toEqual(
      [
        'version',
        'data[].edge_foo',
        'data[].bar',
        'data[].edge_status_abc',
        'data[].origin_hit_bytes',
      ].sort(),
    );
    expect(r.records).toHaveLength(2);
    expect(r.issues).toEqual([]);
  });
});

describe('parseMetricsResponse: bad values are issues, the rest is kept', () => {
  const bad: [string, unknown, string][] = [
    ['a string where a count belongs', '12', 'edge_status_200'],
    ['NaN', Number.NaN, 'edge_status_200'],
    ['Infinity', Number.POSITIVE_INFINITY, 'edge_requests_total'],
    ['a negative count', -1, 'origin_status_5xx'],
    ['a non-integer count', 1.5, 'edge_requests_total'],
    ['null', null, 'edge_hit_bytes'],
    ['a negative bandwidth', -3, 'edge_bandwidth'],
    ['a hit ratio above 1', 1.5, 'edge_hit_ratio'],
    ['request_time as a string', 'fast', 'edge_request_time'],
    ['request_time as an array', [0.1, 0.2], 'edge_request_time'],
    ['a negative flattened request_time', -0.1, 'edge_request_time_1m_2m'],
    // Out of range: a bandwidth that makes the byte counter +Inf, counts JSON cannot carry exactly.
    ['a bandwidth of 1.7e308 bit/s', 1.7e308, 'edge_bandwidth'],
    ['a bandwidth over 100 Tbit/s', 1.01e14, 'origin_bandwidth'],
    ['a count above 2^53', 2 ** 53 + 2, 'edge_requests_total'],
    ['a status count above 2^53', 1e20, 'edge_status_200'],
    ['a class count above 2^53', 2 ** 60, 'edge_status_2xx'],
    ['hit bytes of 2^53 (what JSON makes of 2^53+1)', 2 ** 53, 'edge_hit_bytes'],
    ['a request_time of 1e300 s', 1e300, 'edge_request_time'],
    ['a flattened request_time of 1e300 s', 1e300, 'edge_request_time_1m_2m'],
  ];
  it.each(bad)('%s is dropped with an issue at its path', (_name, value, key) => {
    const r = parseMetricsResponse(
      body([
        { edge_requests_total: 10, edge_status_204: 4 },
        { [key]: value, edge_status_206: 6, origin_requests_total: 3 },
      ]),
    );
    expect(paths(r)).toEqual([`data[1].${key}`]);
    expect(r.issues[0]!.problem).not.toBe('');
    // Exactly that field is dropped: the result equals the parse of the same body without it.
    const without = parseMetricsResponse(
      body([
        { edge_requests_total: 10, edge_status_204: 4 },
        { edge_status_206: 6, origin_requests_total: 3 },
      ]),
    );
    expect(r.records).toEqual(without.records);
    expect(r.records[1]!.edge.codes.get('206')).toBe(6);
  });

  it('reports a bad range inside a request_time object and keeps the good ones', () => {
    const r = parseMetricsResponse(
      body([{ edge_request_time: { '0_250k': 0.1, '9m_10m': 0.2, '1m_2m': 'slow', '250k_500k': 0.3 } }]),
    );
    expect(paths(r).sort()).toEqual(['data[0].edge_request_time.1m_2m', 'data[0].edge_request_time.9m_10m']);
    expect([...r.records[0]!.edge.requestTimeSeconds]).toEqual([
      ['0_250k', 0.1],
      ['250k_500k', 0.3],
    ]);
  });

  it('drops a data element that is not an object, keeps the others', () => {
    const r = parseMetricsResponse(body([42, { edge_requests_total: 1 }, 'x']));
    expect(paths(r)).toEqual(['data[0]', 'data[2]']);
    expect(r.records).toHaveLength(1);
  });

  it('drops a /resources element without a resource id when the breakdown is by resource', () => {
    const r = parseMetricsResponse(
      body([{ edge_requests_total: 1 }, { resource: 7, edge_requests_total: 2 }, { resource: 'r3' }]),
      { breakdown: 'resource' },
    );
    expect(paths(r)).toEqual(['data[0].resource', 'data[1].resource', 'data[1].resource']);
    expect(r.records.map((x) => x.resource)).toEqual(['r3']);
  });

  it('reports bad envelope fields and keeps the data', () => {
    const r = parseMetricsResponse(
      {
        start: '2026-01-01T12:00',
        end: 'yesterday',
        account: 5,
        metrics: ['a', 3],
        data: [{ edge_status_200: 1 }],
      },
      { account: 'acme' },
    );
    expect(paths(r)).toEqual(['account', 'end', 'metrics[1]']);
    expect(r.account).toBe('acme');
    expect(r.start).toBe(Date.UTC(2026, 0, 1, 12, 0));
    expect(r.end).toBeUndefined();
    expect(r.metrics).toEqual(['a']);
    expect(r.records[0]!.edge.codes.get('200')).toBe(1);
  });
});

describe('parseMetricsResponse: wrong top level is malformed', () => {
  it.each([
    ['an array', [{ edge_status_200: 1 }]],
    ['null', null],
    ['a string', 'ok'],
    ['an object without data', { account: 'acme' }],
    ['data that is not an array', { data: { edge_status_200: 1 } }],
    ['an error body on a 200', { description: 'Invalid time format' }],
  ])('%s', (_name, raw) => {
    let caught: unknown;
    try {
      parseMetricsResponse(raw);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect(caught).toMatchObject({ kind: 'malformed', api: 'metrics', retryable: true });
  });
});

describe('parseMetricsResponse: an answer for another request is malformed', () => {
  const asked = { account: 'acme', start: Date.UTC(2026, 0, 1, 12, 0), end: Date.UTC(2026, 0, 1, 12, 5) };
  it.each([
    ['another start', { start: '2026-01-01T11:55:00' }, 'start 2026-01-01T11:55 (asked 2026-01-01T12:00)'],
    ['another end', { end: '2026-01-01T12:10:00' }, 'end 2026-01-01T12:10 (asked 2026-01-01T12:05)'],
    ['another account', { account: 'beta' }, 'account "beta" (asked "acme")'],
  ])('%s', (_name, extra, words) => {
    let caught: unknown;
    try {
      parseMetricsResponse(body([{ edge_requests_total: 5 }], extra), asked);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ApiError);
    expect(caught).toMatchObject({ kind: 'malformed', api: 'metrics' });
    expect((caught as ApiError).message).toContain(`the answer is for another request: it echoes ${words}`);
  });

  it('takes the same window and account, or none echoed, as the answer asked for', () => {
    expect(parseMetricsResponse(body([{ edge_requests_total: 5 }]), asked).records).toHaveLength(1);
    expect(parseMetricsResponse({ data: [{ edge_requests_total: 5 }] }, asked).records).toHaveLength(1);
  });
});
