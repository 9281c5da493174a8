/**
 * Family names and label names (src/store/names.ts), through validateSpec and openMetricsName: names follow the
 * Prometheus data model, a counter's name ends in `_total` and a gauge's does not (promtool's lint), label names
 * are Prometheus label names, none reserved (`__`) nor given twice; a counter's OpenMetrics family name is its name
 * without `_total`. A bad spec is a TypeError that names the family and the problem.
 */
import { describe, expect, it } from 'vitest';
import { openMetricsName, validateSpec } from '../../src/store/names.js';
import type { FamilySpec } from '../../src/store/types.js';

const spec = (over: Partial<FamilySpec>): FamilySpec => ({
  name: 'cdn_edge_requests_total',
  help: 'Requests.',
  type: 'counter',
  labelNames: ['account', 'resource'],
  ...over,
});

describe('validateSpec', () => {
  it('takes the names the exporter uses, and any the data model allows', () => {
    for (const s of [
      spec({}),
      spec({ name: 'cdn_edge_cache_hit_ratio', type: 'gauge' }),
      spec({ name: 'a:recorded:rule_total', labelNames: [] }),
      spec({ name: '_x_total', labelNames: ['_private', 'A9'] }),
      spec({ name: 'cdn_totals', type: 'gauge', help: '' }),
    ])
      expect(() => validateSpec(s), s.name).not.toThrow();
  });

  it.each([
    ['a name the data model refuses', spec({ name: '9lives_total' }), /invalid metric name "9lives_total"/],
    ['a dash in the name', spec({ name: 'cdn-edge_total' }), /invalid metric name/],
    ['an empty name', spec({ name: '' }), /invalid metric name ""/],
    [
      'a counter without _total',
      spec({ name: 'cdn_edge_requests' }),
      /cdn_edge_requests: a counter's name must end in _total/,
    ],
    ['a counter named only _total', spec({ name: '_total' }), /_total: a counter's name must end in _total/],
    [
      'a gauge with _total',
      spec({ type: 'gauge' }),
      /cdn_edge_requests_total: only counters' names end in _total/,
    ],
    [
      'an unknown type',
      spec({ type: 'histogram' as never }),
      /cdn_edge_requests_total: unknown type "histogram"/,
    ],
    ['help that is not text', spec({ help: undefined as never }), /help must be a string/],
    [
      'a label name with a dash',
      spec({ labelNames: ['account', 'cache-status'] }),
      /invalid label name "cache-status"/,
    ],
    ['a label name with a colon', spec({ labelNames: ['a:b'] }), /invalid label name "a:b"/],
    ['a label name starting with a digit', spec({ labelNames: ['1st'] }), /invalid label name "1st"/],
    ['an empty label name', spec({ labelNames: [''] }), /invalid label name ""/],
    ['a reserved label name', spec({ labelNames: ['__name__'] }), /label name __name__ is reserved/],
    ['any label name starting with __', spec({ labelNames: ['__cache'] }), /label name __cache is reserved/],
    [
      'a label name twice',
      spec({ labelNames: ['account', 'resource', 'account'] }),
      /label name account appears twice/,
    ],
  ])('refuses %s with a TypeError that says so', (_what, s, message) => {
    expect(() => validateSpec(s)).toThrow(TypeError);
    expect(() => validateSpec(s)).toThrow(message);
  });
});

describe('openMetricsName', () => {
  it("is a counter's name without _total, and a gauge's name as it is", () => {
    expect(openMetricsName({ name: 'cdn_edge_requests_total', type: 'counter' })).toBe('cdn_edge_requests');
    expect(openMetricsName({ name: 'cdn_up', type: 'gauge' })).toBe('cdn_up');
    expect(openMetricsName({ name: 'cdn_totals', type: 'gauge' })).toBe('cdn_totals');
  });
});
