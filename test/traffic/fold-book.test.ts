/**
 * The traffic pipeline's side of folding (src/traffic/fold-book.ts; docs/configuration.md "Top resources"): each
 * account's `top_resources` as the configuration resolves it (an account's own, a discovered account's, else
 * `limits.top_resources`; 0: no limit), whether any account has one (the ranking is kept only then), the ranking's
 * period (a day by default); the FoldBook, which reads what the revisit being counted has for a series (0 outside
 * a revisit); and which neighbouring windows a revisit may read in one request: any while the account folds
 * nothing, else only windows of one fold epoch counted in this process (windows from the state file one by one).
 */
import { describe, expect, it } from 'vitest';
import { resolveTopResources } from '../../src/config/top-resources-schema.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { CountedBook } from '../../src/traffic/counted-book.js';
import {
  anyTopResources,
  foldBook,
  mergeable,
  rankingPeriodMs,
  topResourcesOf,
} from '../../src/traffic/fold-book.js';
import type { PendingWindow } from '../../src/traffic/revisit.js';

const DAY = 86_400_000;

describe('topResourcesOf', () => {
  it("gives a configured account its own N, any other the discovered accounts' N (docs' example)", () => {
    // The example of docs/configuration.md: acme takes limits' 100, big-reseller its own 500, discovered ones 20.
    const limits = resolveTopResources(
      { top_resources: 100, top_resources_period: DAY },
      [{ name: 'acme' }, { name: 'big-reseller', top_resources: 500 }],
      20,
    );
    expect(topResourcesOf(limits, 'acme')).toBe(100);
    expect(topResourcesOf(limits, 'big-reseller')).toBe(500);
    expect(topResourcesOf(limits, 'found-later')).toBe(20);
    expect(anyTopResources(limits)).toBe(true);
  });

  it("an account's own 0 is no limit, even where limits has one", () => {
    const limits = resolveTopResources(
      { top_resources: 100, top_resources_period: DAY },
      [{ name: 'acme', top_resources: 0 }],
      undefined,
    );
    expect(topResourcesOf(limits, 'acme')).toBe(0);
    expect(topResourcesOf(limits, 'found-later')).toBe(100);
  });

  it('without any N above 0, or without limits: no limit anywhere, no ranking kept', () => {
    const none = resolveTopResources(
      { top_resources: 0, top_resources_period: DAY },
      [{ name: 'acme' }],
      undefined,
    );
    expect(topResourcesOf(none, 'acme')).toBe(0);
    expect(anyTopResources(none)).toBe(false);
    expect(topResourcesOf(undefined, 'acme')).toBe(0);
    expect(anyTopResources(undefined)).toBe(false);
    // One account's own N is enough to keep the ranking.
    expect(anyTopResources({ topResourcesByAccount: { acme: 0, beta: 3 } })).toBe(true);
    expect(anyTopResources({ topResourcesDiscovered: 5 })).toBe(true);
  });
});

describe('rankingPeriodMs', () => {
  it('is the configured period, a day by default', () => {
    expect(rankingPeriodMs(undefined)).toBe(DAY);
    expect(rankingPeriodMs({})).toBe(DAY);
    expect(
      rankingPeriodMs(
        resolveTopResources({ top_resources: 5, top_resources_period: 3_600_000 }, [], undefined),
      ),
    ).toBe(3_600_000);
  });
});

describe('foldBook', () => {
  it('reads what the revisit being counted has for a series, 0 outside a revisit', () => {
    const store = new SeriesStore();
    const book = new CountedBook();
    const requests = book.wrap(
      store.family({
        name: 'cdn_edge_requests_total',
        help: 'h',
        type: 'counter',
        labelNames: ['account', 'resource'],
      }),
      true,
    );
    const fold = foldBook(book);
    const slot = requests.slot(['acme', 'r1']);
    book.beginRecord('acme');
    requests.add(slot, 7);
    const first = book.endRecord();
    book.beginRecord('acme');
    requests.add(slot, 5);
    const second = book.endRecord();
    expect(fold.counted(requests, slot)).toBe(0);
    // A revisit of both windows: what their first reads counted, summed.
    book.beginRevisit('acme', [first, second]);
    expect(fold.counted(requests, slot)).toBe(12);
    expect(fold.counted(requests, requests.slot(['acme', 'r2']))).toBe(0);
    book.endRevisit();
    expect(fold.counted(requests, slot)).toBe(0);
  });
});

describe('mergeable', () => {
  const w = (start: number, foldEpoch?: number): PendingWindow => ({
    start,
    end: start + 300_000,
    counted: new Float64Array(),
    countedAt: start + 600_000,
    foldEpoch,
  });

  it('while the account folds nothing, any neighbours merge, from the state file too', () => {
    const may = mergeable(() => false);
    expect(may(w(0, 1), w(300_000, 2))).toBe(true);
    expect(may(w(0), w(300_000))).toBe(true);
  });

  it('while it folds, only windows of one epoch counted in this process', () => {
    let folds = true;
    const may = mergeable(() => folds);
    expect(may(w(0, 3), w(300_000, 3))).toBe(true);
    expect(may(w(0, 3), w(300_000, 4))).toBe(false);
    expect(may(w(0), w(300_000))).toBe(false);
    expect(may(w(0, 3), w(300_000))).toBe(false);
    // Asked each time: the account may stop folding.
    folds = false;
    expect(may(w(0, 3), w(300_000, 4))).toBe(true);
  });
});
