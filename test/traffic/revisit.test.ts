/**
 * The CountedBook and the revisit part of the state file, on the real store and TrafficMapping: what a revisit
 * adds series by series, and what a restart and another shard's accounts keep.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { decodeCounted, encodeCounted } from '../../src/state-file/saved-revisits.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { TrafficMapping } from '../../src/traffic/mapping.js';
import { TrafficPipeline } from '../../src/traffic/pipeline.js';
import type { SideRecord, TrafficResponse } from '../../src/traffic/response.js';

const T = Date.UTC(2026, 0, 1, 12, 0);

function side(requests: number, codes: Record<string, number>): SideRecord {
  return {
    codes: new Map(Object.entries(codes)),
    classes: new Map(),
    requests,
    requestTimeSeconds: new Map(),
  };
}

function answer(records: Array<[string, number, Record<string, number>]>): TrafficResponse {
  return {
    account: 'acme',
    metrics: [],
    records: records.map(([resource, requests, codes]) => ({
      resource,
      edge: side(requests, codes),
      origin: side(0, {}),
    })),
    issues: [],
    unknownKeys: [],
  };
}

function setup() {
  const store = new SeriesStore();
  const pipeline = new TrafficPipeline(store, {
    breakdown: 'resource',
    windowGauges: false,
    metrics: [],
    allMetrics: [],
    resources: [],
    windowMs: 5 * MINUTE,
    delayMs: MINUTE,
    lookbackMs: 5 * MINUTE,
    revisitMs: 5 * MINUTE,
    maxInFlight: 1,
    backoff: { baseMs: 1, capMs: 1 },
    authBackoff: { baseMs: 1, capMs: 1 },
  });
  const book = pipeline.book!;
  const mapping: TrafficMapping = pipeline.mapping;
  const text = () => store.render('text').toString();
  return { book, mapping, text, pipeline };
}

describe('CountedBook', () => {
  it('saves the series table again only when series came or went, and then with them', () => {
    const { book, mapping } = setup();
    const names = (t: ReturnType<typeof book.save>) =>
      (t.get('acme') ?? []).filter((x) => x !== null).map((x) => `${book.familyNames()[x[0]]}/${x.slice(1)}`);
    mapping.apply('acme', T, T + 5 * MINUTE, answer([['1', 10, { '200': 10 }]]), T + 6 * MINUTE);
    const first = book.save(['acme']);
    expect(names(first)).toContain('cdn_edge_requests_total/1');
    // Nothing new: the same table.
    mapping.apply('acme', T + 5 * MINUTE, T + 10 * MINUTE, answer([['1', 3, { '200': 3 }]]), T + 11 * MINUTE);
    expect(book.save(['acme']).get('acme')).toBe(first.get('acme'));
    // A new resource and a new code: in the next table, the old entries where they were.
    mapping.apply(
      'acme',
      T + 10 * MINUTE,
      T + 15 * MINUTE,
      answer([
        ['1', 3, { '200': 2, '404': 1 }],
        ['2', 4, { '200': 4 }],
      ]),
      T + 16 * MINUTE,
    );
    const next = book.save(['acme']);
    expect(next.get('acme')).not.toBe(first.get('acme'));
    expect(names(next)).toEqual(
      expect.arrayContaining(['cdn_edge_requests_total/2', 'cdn_edge_responses_total/1,404']),
    );
    first.get('acme')!.forEach((x, cid) => {
      expect(next.get('acme')![cid]).toEqual(x);
    });
    // A resource gone (its counters deleted): its numbers are free in the next table.
    mapping.removeAccount('acme');
    expect(names(book.save(['acme']))).toEqual([]);
  });

  it('adds what a revisit found beyond the first read, never takes back, and tells up from down', () => {
    const { book, mapping, text } = setup();
    book.beginRecord('acme');
    mapping.apply('acme', T, T + 5 * MINUTE, answer([['1', 100, { '200': 90, '404': 10 }]]), T + 6 * MINUTE);
    const counted = book.endRecord();
    expect(text()).toContain('cdn_edge_requests_total{account="acme",resource="1"} 100');

    // The CDN added 20 requests (all 200s) and a second resource; the 404s went down by 2.
    book.beginRevisit('acme', [counted]);
    const w = mapping.begin(
      'acme',
      T,
      T + 5 * MINUTE,
      answer([
        ['1', 120, { '200': 112, '404': 8 }],
        ['2', 7, { '200': 7 }],
      ]),
      T + 11 * MINUTE,
      false,
    );
    w.records(0, w.total);
    w.finish();
    const o = book.endRevisit();
    const t = text();
    expect(t).toContain('cdn_edge_requests_total{account="acme",resource="1"} 120');
    expect(t).toContain('cdn_edge_responses_total{account="acme",resource="1",code="200"} 112');
    // Down: the counter keeps what it had.
    expect(t).toContain('cdn_edge_responses_total{account="acme",resource="1",code="404"} 10');
    expect(t).toContain('cdn_edge_requests_total{account="acme",resource="2"} 7');
    expect(o.down).toBe(1);
    expect(o.edgeRequests).toBe(20 + 7);
    expect(o.up).toBeGreaterThan(0);
  });

  it('counts a series missing from the revisit as down, and a merged revisit against the sum of its windows', () => {
    const { book, mapping, text } = setup();
    const records: Float64Array[] = [];
    for (let i = 0; i < 2; i++) {
      book.beginRecord('acme');
      const s = T + i * 5 * MINUTE;
      mapping.apply('acme', s, s + 5 * MINUTE, answer([['1', 50, { '200': 50 }]]), s + 6 * MINUTE);
      records.push(book.endRecord());
    }
    book.beginRevisit('acme', records);
    const w = mapping.begin('acme', T, T + 10 * MINUTE, answer([['1', 130, { '200': 130 }]]), T, false);
    w.records(0, w.total);
    w.finish();
    const o = book.endRevisit();
    expect(text()).toContain('cdn_edge_requests_total{account="acme",resource="1"} 130');
    expect(o.edgeRequests).toBe(30);
    expect(o.down).toBe(0);

    book.beginRecord('acme');
    mapping.apply('acme', T + 10 * MINUTE, T + 15 * MINUTE, answer([['1', 5, { '200': 5 }]]), T);
    const third = book.endRecord();
    book.beginRevisit('acme', [third]);
    const gone = mapping.begin('acme', T + 10 * MINUTE, T + 15 * MINUTE, answer([]), T, false);
    gone.finish();
    expect(book.endRevisit().down).toBe(2);
  });

  it('round-trips a record through the state file text', () => {
    const c = new Float64Array([0, 1.5, 2 ** 40, 7]);
    expect(decodeCounted(encodeCounted(c))).toEqual(c);
    expect(() => decodeCounted('AAA')).toThrow('8-byte');
  });

  it("restores numbers from the state file and keeps another shard's pending windows on save", () => {
    const { pipeline } = setup();
    const other = {
      series: [[2, '9', '200'] as [number, ...string[]]],
      windows: [
        {
          start: new Date(T).toISOString(),
          end: new Date(T + 5 * MINUTE).toISOString(),
          counted: 'AAAAAAAAFEA=',
        },
      ],
    };
    pipeline.restoreRevisits({ version: 1, families: pipeline.book!.familyNames(), accounts: { other } }, T);
    pipeline.poller(
      'acme',
      { request: () => new Promise(() => {}) },
      {
        clock: { now: () => T, sleep: () => new Promise(() => {}) },
        log: silentLogger,
        startCursor: undefined,
        onStatus: () => {},
        audit: () => {},
        refused: () => {},
      },
    );
    expect(pipeline.savedRevisits()?.accounts).toEqual({ other });
  });
});
