/**
 * One account's revisits of late data as the pipeline wires them (src/traffic/revisit-reads.ts; docs/metrics.md,
 * "Late data"), on the real store, mapping, counted book, applier and ledger, with the metrics API answered by the
 * test (the narrow `fetchWindow`) on the fake clock: the revisit series of the account start at 0; a window is
 * re-read `delay + revisit` after it ends, at the gate's revisit priority; what it finds beyond its first read is
 * added, counted by direction (up, down, none) and, for the edge requests, in cdn_metrics_revisit_edge_requests_total;
 * each revisit is numbered in the ledger, and held for the state file when a scrape had already seen its window's
 * first read; a re-read the API rejects (422) is skipped: its seconds in cdn_metrics_skipped_seconds_total{reason=
 * "revisit"}, numbered too; the settled side hears of each.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { ApiError } from '../../src/http/errors.js';
import { REVISIT_PRIORITY } from '../../src/poll/request-gate.js';
import type { KeptWindow } from '../../src/state-file/revisit-keep.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficApplier } from '../../src/traffic/applier.js';
import { CountedBook } from '../../src/traffic/counted-book.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { foldBook } from '../../src/traffic/fold-book.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { revisitReads } from '../../src/traffic/revisit-reads.js';
import { Arrivals } from '../helpers/arrivals.js';
import { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 0, 1, 12, 0);
const WINDOW = 5 * MINUTE;
const DELAY = MINUTE;
const REVISIT = 5 * MINUTE;

function answer(requests: number): TrafficResponse {
  const side = (n: number) => ({
    codes: new Map([['200', n]]),
    classes: new Map(),
    requests: n,
    requestTimeSeconds: new Map(),
  });
  return {
    account: 'acme',
    metrics: [],
    records: [{ resource: 'r1', edge: side(requests), origin: side(0) }],
    issues: [],
    unknownKeys: [],
  };
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

/**
 * The parts as the pipeline makes them (src/traffic/pipeline.ts), the first read of [T, T + WINDOW) counted with
 * `firstRead` edge requests, and the account's revisit queue running on the fake clock. `reread` is what the API
 * gives for the re-read; `shown`: the cursor of the newest exposition a scrape was given.
 */
function setup(firstRead: number, reread: () => Promise<TrafficResponse>, shown: number) {
  const clock = new FakeClock(T + WINDOW + DELAY);
  const store = new SeriesStore();
  const ledger = new CountingLedger(store);
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false, revisit: true });
  const book = new CountedBook();
  for (const side of [f.edge, f.origin]) {
    side.responses = book.wrap(side.responses);
    side.requests = book.wrap(side.requests, side === f.edge);
  }
  const mapping = new TrafficMapping(f, {
    metrics: [],
    resources: [],
    fold: { topResources: () => 0, book: foldBook(book) },
  });
  const applier = new TrafficApplier(mapping, { lock: ledger });
  const fetched: [number, number, number | undefined][] = [];
  const held: [string, number, readonly KeptWindow[]][] = [];
  const settled = new Arrivals<[number, number, string]>();
  const { log, lines } = captureLog();
  const queue = revisitReads(
    {
      opts: {
        delayMs: DELAY,
        revisitMs: REVISIT,
        backoff: { baseMs: 1, capMs: 1 },
        authBackoff: { baseMs: 1, capMs: 1 },
      },
      mapping,
      applier,
      families: f,
      book,
      lock: ledger,
      shownCursor: () => shown,
      revisitCounted: (account, n, windows) => held.push([account, n, windows]),
    },
    'acme',
    {
      clock,
      log,
      audit: () => {},
      refused: () => {},
      windowSettled: (start, end) => settled.push([start, end, 'settled']),
      settledSkipped: (start, end, reason) => settled.push([start, end, reason]),
    },
    (start, end, priority) => {
      fetched.push([start, end, priority]);
      return reread();
    },
  );
  const scrape = () => Scrape.of(store.render('text').toString());
  const first = () => {
    book.beginRecord('acme');
    mapping.apply('acme', T, T + WINDOW, answer(firstRead), T + WINDOW + DELAY);
    queue.add({
      start: T,
      end: T + WINDOW,
      counted: book.endRecord(),
      countedAt: clock.now(),
      foldEpoch: mapping.foldEpoch('acme'),
    });
  };
  const stop = new AbortController();
  const running = queue.run(stop.signal);
  stops.push(async () => {
    stop.abort();
    await running;
  });
  return { clock, ledger, scrape, fetched, held, settled, lines, first, queue };
}

const value = (s: Scrape, name: string, labels: Record<string, string> = {}) =>
  s.value(name, { account: 'acme', ...labels });

describe('revisitReads', () => {
  it("starts the account's revisit series at 0", () => {
    const { scrape } = setup(10, () => Promise.resolve(answer(10)), 0);
    const s = scrape();
    for (const direction of ['up', 'down', 'none'])
      expect(value(s, 'cdn_metrics_revisions_total', { direction })).toBe(0);
    expect(value(s, 'cdn_metrics_revisit_edge_requests_total')).toBe(0);
    expect(value(s, 'cdn_metrics_skipped_seconds_total', { reason: 'revisit' })).toBe(0);
  });

  it('re-reads a window delay + revisit after its end, at revisit priority, and adds what came late', async () => {
    const { clock, ledger, scrape, fetched, held, settled, first, queue } = setup(
      100,
      () => Promise.resolve(answer(130)),
      T + WINDOW,
    );
    first();
    await clock.advance(REVISIT - 1);
    expect(fetched).toEqual([]);
    await clock.advance(1);
    await settled.nth(1);
    expect(fetched).toEqual([[T, T + WINDOW, REVISIT_PRIORITY]]);
    expect(settled.all).toEqual([[T, T + WINDOW, 'settled']]);
    const s = scrape();
    expect(value(s, 'cdn_edge_requests_total', { resource: 'r1' })).toBe(130);
    expect(value(s, 'cdn_metrics_revisions_total', { direction: 'up' })).toBe(1);
    expect(value(s, 'cdn_metrics_revisit_edge_requests_total')).toBe(30);
    // Numbered 1 in the ledger; a scrape had seen the first read (shown cursor at the window's end): held.
    expect(ledger.now().revisitCount).toBe(1);
    expect(held.map(([a, n, w]) => [a, n, w.map((x) => [x.start, x.end])])).toEqual([
      ['acme', 1, [[T, T + WINDOW]]],
    ]);
    expect(queue.pending).toEqual([]);
  });

  it('a re-read that finds less takes nothing back, counts down and says so; not held when no scrape saw the window', async () => {
    const { clock, ledger, scrape, held, settled, lines, first } = setup(
      100,
      () => Promise.resolve(answer(90)),
      T,
    );
    first();
    await clock.advance(REVISIT);
    await settled.nth(1);
    const s = scrape();
    expect(value(s, 'cdn_edge_requests_total', { resource: 'r1' })).toBe(100);
    expect(value(s, 'cdn_metrics_revisions_total', { direction: 'down' })).toBe(1);
    expect(value(s, 'cdn_metrics_revisit_edge_requests_total')).toBe(0);
    expect(lines.filter((l) => l.includes('the CDN now reports less than was counted'))).toHaveLength(1);
    expect(ledger.now().revisitCount).toBe(1);
    expect(held).toEqual([]);
  });

  it('a re-read the API rejects (422) is skipped: its seconds counted, numbered, the settled side told', async () => {
    const rejected = new ApiError({ api: 'metrics', kind: 'invalid', status: 422, description: 'too old' });
    const { clock, ledger, scrape, settled, first } = setup(100, () => Promise.reject(rejected), T + WINDOW);
    first();
    await clock.advance(REVISIT);
    await settled.nth(1);
    expect(settled.all).toEqual([[T, T + WINDOW, 'revisit']]);
    const s = scrape();
    expect(value(s, 'cdn_metrics_skipped_seconds_total', { reason: 'revisit' })).toBe(WINDOW / 1000);
    expect(value(s, 'cdn_edge_requests_total', { resource: 'r1' })).toBe(100);
    expect(ledger.now().revisitCount).toBe(1);
  });
});
