import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const HOUR = 3_600_000;
const T = Date.UTC(2026, 0, 1);

function side(n: number, extra: Partial<SideRecord> = {}): SideRecord {
  return {
    codes: new Map([
      ['200', 10 * n],
      ['404', n],
    ]),
    classes: new Map([
      ['2xx', 10 * n],
      ['4xx', 2 * n],
    ]),
    requests: 12 * n,
    bandwidthBitsPerSecond: (8 * 1000 * n) / 300, // 1000n bytes over a 5-minute window
    requestTimeSeconds: new Map([
      ['0_250k', 0.01 * n],
      ['4M+', 0.5],
    ]),
    ...extra,
  };
}

function record(id: string, n: number): TrafficRecord {
  return {
    resource: id,
    resourceName: `name-${id}`,
    cname: `${id}.cdn.example`,
    edge: side(n, { hitBytes: 600 * n, hitRatio: 0.6 }),
    origin: side(n),
  };
}

function answer(...records: TrafficRecord[]): TrafficResponse {
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function setup(
  opts: {
    metrics?: string[];
    resources?: string[];
    windowGauges?: boolean;
    breakdown?: 'resource' | 'account';
  } = {},
) {
  const store = new SeriesStore();
  const families = createTrafficFamilies(store, {
    breakdown: opts.breakdown ?? 'resource',
    windowGauges: opts.windowGauges ?? false,
  });
  const p = new TrafficMapping(families, { metrics: opts.metrics ?? [], resources: opts.resources ?? [] });
  const scrape = () => Scrape.of(store.render('text').toString());
  return { p, scrape };
}

describe('traffic mapping', () => {
  it('adds counters once per window and sets gauges from the newest window', () => {
    const { p, scrape } = setup();
    p.apply('acme', T, T + 300_000, answer(record('r1', 1), record('r2', 2)), T);
    p.apply('acme', T + 300_000, T + 600_000, answer(record('r1', 3), record('r2', 1)), T);
    const s = scrape();
    const r1 = { account: 'acme', resource: 'r1' };
    expect(s.value('cdn_edge_responses_total', { ...r1, code: '200' })).toBe(40);
    expect(s.value('cdn_edge_responses_by_class_total', { ...r1, class: '4xx' })).toBe(8);
    expect(s.value('cdn_origin_requests_total', r1)).toBe(48);
    expect(s.value('cdn_edge_transferred_bytes_total', r1)).toBe(4000);
    expect(s.value('cdn_edge_cache_hit_bytes_total', r1)).toBe(2400);
    expect(s.value('cdn_edge_bandwidth_bytes_per_second', r1)).toBeCloseTo(3000 / 300, 9);
    expect(s.value('cdn_edge_request_duration_median_seconds', { ...r1, size_range: '0_250k' })).toBeCloseTo(
      0.03,
      12,
    );
    expect(s.value('cdn_resource_info', { ...r1, resource_name: 'name-r1', cname: 'r1.cdn.example' })).toBe(
      1,
    );
    expect(s.value('cdn_metrics_windows_total', { account: 'acme' })).toBe(2);
    expect(s.value('cdn_metrics_window_end_timestamp_seconds', { account: 'acme' })).toBe(
      (T + 600_000) / 1000,
    );
  });

  it('drops a vanished resource’s gauges at once and its counters only after a day', () => {
    const { p, scrape } = setup();
    p.apply('acme', T, T + 300_000, answer(record('r1', 1), record('r2', 2)), T);
    p.apply('acme', T + 300_000, T + 600_000, answer(record('r1', 1)), T + HOUR);
    let s = scrape();
    const r2 = { account: 'acme', resource: 'r2' };
    expect(s.value('cdn_edge_bandwidth_bytes_per_second', r2)).toBeUndefined();
    expect(s.all('cdn_edge_request_duration_median_seconds', r2)).toHaveLength(0);
    expect(s.all('cdn_resource_info', r2)).toHaveLength(0);
    expect(s.value('cdn_edge_requests_total', r2)).toBe(24); // counters stay: no false reset if it returns
    p.apply('acme', T + 600_000, T + 900_000, answer(record('r1', 1)), T + 25 * HOUR);
    s = scrape();
    expect(s.value('cdn_edge_requests_total', r2)).toBeUndefined();
    expect(s.value('cdn_edge_requests_total', { account: 'acme', resource: 'r1' })).toBe(36);
  });

  it('removes a size range that is missing from the newest window', () => {
    const { p, scrape } = setup();
    p.apply('acme', T, T + 300_000, answer(record('r1', 1)), T);
    const r = record('r1', 1);
    r.edge.requestTimeSeconds = new Map([['0_250k', 0.02]]);
    p.apply('acme', T + 300_000, T + 600_000, answer(r), T);
    const s = scrape();
    const l = { account: 'acme', resource: 'r1' };
    expect(s.all('cdn_edge_request_duration_median_seconds', l).map((x) => x.labels.size_range)).toEqual([
      '0_250k',
    ]);
    expect(s.all('cdn_origin_request_duration_median_seconds', l)).toHaveLength(2);
  });

  it('applies the metric and resource allow-lists before a series exists', () => {
    const { p, scrape } = setup({ metrics: ['edge_status_200', 'edge_requests_total'], resources: ['r1'] });
    p.apply('acme', T, T + 300_000, answer(record('r1', 1), record('r2', 2)), T);
    const s = scrape();
    const names = new Set(s.samples.map((x) => x.name));
    expect([...names].filter((n) => n.startsWith('cdn_edge') || n.startsWith('cdn_origin')).sort()).toEqual([
      'cdn_edge_requests_total',
      'cdn_edge_responses_total',
    ]);
    expect(s.all('cdn_edge_responses_total').map((x) => x.labels.code)).toEqual(['200']);
    expect(s.all('cdn_edge_requests_total', { resource: 'r2' })).toHaveLength(0);
  });

  it('has no resource label with breakdown account, and exposes window gauges when asked', () => {
    const { p, scrape } = setup({ breakdown: 'account', windowGauges: true });
    const agg = record('ignored', 2);
    agg.resource = undefined;
    p.apply('acme', T, T + 300_000, answer(agg), T);
    const s = scrape();
    expect(s.all('cdn_edge_requests_total')).toEqual([
      { name: 'cdn_edge_requests_total', labels: { account: 'acme' }, value: 24 },
    ]);
    expect(s.all('cdn_resource_info')).toHaveLength(0);
    expect(s.value('cdn_edge_window_requests', { account: 'acme' })).toBe(24);
    expect(s.value('cdn_edge_window_responses', { account: 'acme', code: '404' })).toBe(2);
    expect(s.value('cdn_edge_window_transferred_bytes', { account: 'acme' })).toBe(2000);
  });

  it('does not count a resource twice when an answer repeats it, and reports it as dropped', () => {
    const { p, scrape } = setup();
    const r = p.apply('acme', T, T + 300_000, answer(record('r1', 1), record('r1', 5)), T);
    expect(r.dropped).toBe(1);
    expect(scrape().value('cdn_edge_requests_total', { account: 'acme', resource: 'r1' })).toBe(12);
  });

  it('counts skipped time in seconds', () => {
    const { p, scrape } = setup();
    p.initAccount('acme', 10);
    p.apply('acme', T, T + 300_000, answer(record('r1', 1)), T);
    p.skip('acme', 5, 'rejected');
    expect(scrape().value('cdn_metrics_skipped_seconds_total', { account: 'acme', reason: 'rejected' })).toBe(
      300,
    );
  });
});
