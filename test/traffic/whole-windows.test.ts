/**
 * Whole windows only (src/store/series-store.ts, src/traffic/applier.ts): a scrape in the middle of a window counted
 * in slices is served the last complete state, and every exposition carries the counted cursor of the state it
 * shows. Without this a scrape could show half a window past the cursor the state file saves, and a restart would
 * count that half twice. The counted cursor is the applier's, not the walker's, which runs ahead by the queue.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficApplier } from '../../src/traffic/applier.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';

const T = Date.UTC(2026, 0, 1);
const W = 600_000;

function record(id: string, n: number): TrafficRecord {
  return {
    resource: id,
    resourceName: id,
    cname: `${id}.cdn.example`,
    edge: {
      codes: new Map([['200', n]]),
      classes: new Map([['2xx', n]]),
      requestTimeSeconds: new Map(),
      requests: n,
      bandwidthBitsPerSecond: 8,
      hitBytes: 1,
      hitRatio: 0.5,
    },
    origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), requests: 0 },
  };
}

function answer(count: number): TrafficResponse {
  return {
    account: 'acme',
    metrics: [],
    records: Array.from({ length: count }, (_, i) => record(`r${i}`, 1)),
    issues: [],
    unknownKeys: [],
  };
}

/** A store and an applier whose slices end after two looks at the time; yields are real (setImmediate). */
function setup() {
  const store = new SeriesStore({ chunkSize: 64 });
  const mapping = new TrafficMapping(
    createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true }),
    {
      metrics: [],
      resources: [],
    },
  );
  mapping.initAccount('acme', 10);
  let clock = 0;
  const applier = new TrafficApplier(mapping, {
    sliceMs: 2,
    now: () => clock++,
    lock: new CountingLedger(store),
  });
  applier.startAt('acme', T);
  return { store, applier };
}

/** The sum of cdn_edge_requests_total in an exposition: windows of 1000 resources x 1 request each. */
function requests(text: string): number {
  let n = 0;
  for (const m of text.matchAll(/^cdn_edge_requests_total\{[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

describe('whole windows in every exposition', () => {
  it('serves the last complete state while a window is half counted, with the cursor of that state', async () => {
    const { store, applier } = setup();
    // The first scrape: nothing counted, the cursor where the walk starts.
    expect(requests(store.render('text').toString())).toBe(0);
    expect(store.countedIn('text')).toEqual(new Map([['acme', T]]));
    for (let i = 0; i < 3; i++) applier.apply('acme', T + i * W, T + (i + 1) * W, answer(1000), T, () => {});
    const seen: Array<[number, number]> = [];
    for (let i = 0; i < 10_000 && applier.pending > 0; i++) {
      // A scrape between two slices, and a refresh now and then as the exporter does.
      if (i % 7 === 0) void store.refresh();
      const text = store.render('text').toString();
      seen.push([requests(text), store.countedIn('text')!.get('acme')!]);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await applier.idle();
    await store.refresh();
    seen.push([requests(store.render('text').toString()), store.countedIn('text')!.get('acme')!]);
    // Every exposition shows whole windows, and exactly those before its cursor.
    for (const [n, cursor] of seen) expect(n).toBe(((cursor - T) / W) * 1000);
    expect(seen.at(-1)).toEqual([3000, T + 3 * W]);
    expect(new Set(seen.map(([, c]) => c)).size).toBeGreaterThan(1);
  });

  it('moves the counted cursor over a skipped window only in its turn, after the windows queued before it', async () => {
    const { store, applier } = setup();
    applier.apply('acme', T, T + W, answer(1000), T, () => {});
    let skipped = false;
    applier.skip('acme', T + W, T + 2 * W, () => {
      skipped = true;
    });
    expect(skipped).toBe(false);
    await applier.idle();
    expect(skipped).toBe(true);
    store.render('text');
    expect(store.countedIn('text')).toEqual(new Map([['acme', T + 2 * W]]));
  });
});
