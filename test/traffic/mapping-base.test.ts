/**
 * The part of the traffic mapping that keeps each account's entries and their series (src/traffic/mapping-base.ts),
 * through TrafficMapping, the mapping the pipeline uses: a counter saved in the state file continues at its value
 * and start after a restart and goes on counting from there (no reset), unless its metric or resource is no
 * longer allowed; a restored resource that never comes back loses its counters `counter_retention` after the
 * restart (docs/metrics.md, "Stale series"), unless a window awaiting its revisit may still hold its counts
 * (`keepSeenSince`); a renamed resource's info series is replaced, not doubled. What a window counts, the gauges
 * of a vanished resource and the allow-lists: test/traffic/mapping.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { type MappingOptions, TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';

const HOUR = 3_600_000;
const WINDOW = 300_000;
const T = Date.UTC(2026, 0, 1);

function side(requests: number): SideRecord {
  return {
    codes: new Map([['200', requests]]),
    classes: new Map([['2xx', requests]]),
    requests,
    requestTimeSeconds: new Map(),
  };
}

function record(id: string, requests: number, name = `name-${id}`): TrafficRecord {
  return {
    resource: id,
    resourceName: name,
    cname: `${id}.cdn.example`,
    edge: side(requests),
    origin: side(requests),
  };
}

function answer(...records: TrafficRecord[]): TrafficResponse {
  return { account: 'acme', metrics: [], records, issues: [], unknownKeys: [] };
}

function setup(opts: Partial<MappingOptions> = {}) {
  const store = new SeriesStore();
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false });
  const p = new TrafficMapping(f, { metrics: [], resources: [], counterRetentionMs: 24 * HOUR, ...opts });
  const scrape = () => Scrape.of(store.render('text').toString());
  const requests = (resource: string) =>
    scrape().value('cdn_edge_requests_total', { account: 'acme', resource });
  return { f, p, store, scrape, requests };
}

describe('restoreCounter', () => {
  it('continues a saved counter at its value and start, and the next window adds to it', () => {
    const { f, p, store, requests } = setup();
    const start = T - 5 * HOUR;
    expect(p.restoreCounter('acme', f.edge.requests, ['acme', 'r1'], 1200, start, T)).toBe(true);
    expect(requests('r1')).toBe(1200);
    const slot = f.edge.requests.find(['acme', 'r1'])!;
    expect(f.edge.requests.startOf!(slot)).toBe(start);
    p.apply('acme', T, T + WINDOW, answer(record('r1', 30)), T + WINDOW);
    expect(requests('r1')).toBe(1230);
    expect(f.edge.requests.startOf!(slot)).toBe(start);
    // An account's own counter (not a resource's) is restored as it was.
    expect(p.restoreCounter('acme', f.windows, ['acme'], 17, start, T)).toBe(true);
    expect(
      Scrape.of(store.render('text').toString()).value('cdn_metrics_windows_total', { account: 'acme' }),
    ).toBe(18);
  });

  it('leaves out a counter whose metric, status code or resource is no longer allowed', () => {
    const { f, p, requests, scrape } = setup({
      metrics: ['edge_requests_total', 'edge_status_200'],
      resources: ['r1'],
    });
    expect(p.restoreCounter('acme', f.edge.requests, ['acme', 'r2'], 5, T - HOUR, T)).toBe(false);
    expect(p.restoreCounter('acme', f.origin.requests, ['acme', 'r1'], 5, T - HOUR, T)).toBe(false);
    expect(p.restoreCounter('acme', f.edge.responses, ['acme', 'r1', '404'], 5, T - HOUR, T)).toBe(false);
    expect(p.restoreCounter('acme', f.edge.responses, ['acme', 'r1', '200'], 5, T - HOUR, T)).toBe(true);
    // __other__ holds what folded resources counted: kept whatever the resource allow-list says.
    expect(p.restoreCounter('acme', f.edge.requests, ['acme', '__other__'], 9, T - HOUR, T)).toBe(true);
    expect(requests('r2')).toBeUndefined();
    expect(requests('__other__')).toBe(9);
    expect(scrape().all('cdn_origin_requests_total')).toEqual([]);
  });

  it('a restored resource that never comes back loses its counters counter_retention after the restart', () => {
    const { f, p, requests } = setup();
    // Saved long ago: its retention counts from the restart, not from its start.
    p.restoreCounter('acme', f.edge.requests, ['acme', 'gone'], 50, T - 30 * 24 * HOUR, T);
    p.apply('acme', T, T + WINDOW, answer(record('r1', 1)), T + WINDOW);
    p.apply('acme', T + WINDOW, T + 2 * WINDOW, answer(record('r1', 1)), T + 23 * HOUR);
    expect(requests('gone')).toBe(50);
    p.apply('acme', T + 2 * WINDOW, T + 3 * WINDOW, answer(record('r1', 1)), T + 24 * HOUR);
    expect(requests('gone')).toBeUndefined();
    expect(requests('r1')).toBe(3);
  });
});

describe('counter retention', () => {
  it('keeps the counters of a resource a window awaiting its revisit may hold (keepSeenSince)', () => {
    let keepSince = Number.POSITIVE_INFINITY;
    const { p, requests } = setup({ keepSeenSince: () => keepSince });
    p.apply('acme', T, T + WINDOW, answer(record('r1', 1), record('r2', 4)), T + WINDOW);
    // r2 seen at T + WINDOW; a window counted then still awaits its revisit.
    keepSince = T + WINDOW;
    p.apply('acme', T + WINDOW, T + 2 * WINDOW, answer(record('r1', 1)), T + 30 * HOUR);
    expect(requests('r2')).toBe(4);
    // Revisited: nothing holds it any more.
    keepSince = Number.POSITIVE_INFINITY;
    p.apply('acme', T + 2 * WINDOW, T + 3 * WINDOW, answer(record('r1', 1)), T + 30 * HOUR + WINDOW);
    expect(requests('r2')).toBeUndefined();
  });
});

describe('resource info', () => {
  it('a renamed resource replaces its info series; an unchanged one keeps it', () => {
    const { p, scrape } = setup();
    p.apply('acme', T, T + WINDOW, answer(record('r1', 1, 'old name')), T + WINDOW);
    p.apply('acme', T + WINDOW, T + 2 * WINDOW, answer(record('r1', 1, 'old name')), T + 2 * WINDOW);
    expect(
      scrape()
        .all('cdn_resource_info')
        .map((s) => s.labels.resource_name),
    ).toEqual(['old name']);
    p.apply('acme', T + 2 * WINDOW, T + 3 * WINDOW, answer(record('r1', 1, 'new name')), T + 3 * WINDOW);
    expect(scrape().all('cdn_resource_info')).toEqual([
      {
        name: 'cdn_resource_info',
        labels: { account: 'acme', resource: 'r1', resource_name: 'new name', cname: 'r1.cdn.example' },
        value: 1,
      },
    ]);
  });
});
