/**
 * What `metrics.revisit` costs in memory and in the state file, beside the store's own bytes.
 *
 * One account with R resources of the documented shape (per side: 10 exact codes, 4 classes, requests, bandwidth,
 * request times; edge: hit bytes and ratio), counted through the real TrafficMapping and CountedBook, at 100k and
 * 1M series in the store. `window: 5m`, `delay: 5m` (the default), `revisit: 30m`: a window is held from its first
 * read until it is (delay + revisit) old, i.e. 35 / 5 = 7 windows at a time (plus the one being revisited).
 * Figures:
 * - store bytes per series (V8 heap + typed arrays, after a full GC), the baseline;
 * - revisit bytes per series per window held: the records (Float64Array by counter series) of the windows held,
 *   divided by (windows x all series of the store); target at most 8;
 * - the slot maps (4 bytes per counter slot, held once, not per window), per series;
 * - the state file's revisit part per series (all windows held, JSON as written).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MINUTE } from '../src/clock.js';
import { encodeCounted, type SavedRevisits } from '../src/state-file/saved-revisits.js';
import { StateFile } from '../src/state-file/state-file.js';
import { SeriesStore } from '../src/store/series-store.js';
import { CountedBook } from '../src/traffic/counted-book.js';
import { TrafficMapping } from '../src/traffic/mapping.js';
import { createTrafficFamilies } from '../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../src/traffic/response.js';
import { fullGc } from './measure.js';
import type { BenchRow } from './report.js';

const CODES = ['200', '204', '206', '301', '302', '304', '403', '404', '500', '504'];
const CLASSES = ['2xx', '3xx', '4xx', '5xx'];
const RANGES = ['0_1', '1_10', '10_100', 'all'];
const WINDOW = 5 * MINUTE;
const HELD = (5 * MINUTE + 30 * MINUTE) / WINDOW;

function side(r: number, w: number, edge: boolean): SideRecord {
  const v = (k: number) => ((r * 7919 + w * 104_729 + k * 31) % 100_003) + 1;
  return {
    codes: new Map(CODES.map((c, i) => [c, v(i)])),
    classes: new Map(CLASSES.map((c, i) => [c, v(20 + i)])),
    requests: v(40),
    bandwidthBitsPerSecond: v(41) * 8000,
    requestTimeSeconds: new Map(RANGES.map((x, i) => [x, v(50 + i) / 1e5])),
    hitBytes: edge ? v(42) : undefined,
    hitRatio: edge ? 0.9 : undefined,
  };
}

function response(resources: number, w: number): TrafficResponse {
  const records: TrafficRecord[] = [];
  for (let r = 0; r < resources; r++) {
    records.push({
      resource: String(100_000 + r),
      resourceName: `r${r}`,
      cname: `r${r}.example`,
      edge: side(r, w, true),
      origin: side(r, w, false),
    });
  }
  return { account: 'a', metrics: [], records, issues: [], unknownKeys: [] };
}

function bytesNow(): number {
  fullGc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

async function measure(series: number, log: (line: string) => void): Promise<BenchRow[]> {
  const label = series >= 1_000_000 ? `${series / 1_000_000}M` : `${series / 1000}k`;
  // Series per resource: counters 10 + 4 + 3 (edge) + 10 + 4 + 2 (origin); gauges 1 + 4 + 1 (edge) + 1 + 4; info 1.
  const perResource = 17 + 16 + 6 + 5 + 1;
  const resources = Math.round(series / perResource);
  const before = bytesNow();
  const store = new SeriesStore();
  const book = new CountedBook();
  const f = createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false, revisit: true });
  for (const s of [f.edge, f.origin]) {
    s.responses = book.wrap(s.responses);
    s.responsesByClass = book.wrap(s.responsesByClass);
    s.requests = book.wrap(s.requests, s === f.edge);
    s.transferredBytes = book.wrap(s.transferredBytes);
    if (s.cacheHitBytes) s.cacheHitBytes = book.wrap(s.cacheHitBytes);
  }
  const mapping = new TrafficMapping(f, { metrics: [], resources: [] });
  const t0 = Date.UTC(2026, 0, 1);
  // A first window with no record kept: the store as it is without revisit.
  mapping.apply('a', t0, t0 + WINDOW, response(resources, 0), t0 + 2 * WINDOW);
  const inStore = [...store.familyNames()].length > 0 ? countSeries(f) : 0;
  const storeBytes = bytesNow() - before;
  log(`revisit ${label}: ${resources} resources, ${inStore} series in the store`);
  const held: Float64Array[] = [];
  for (let w = 1; w <= HELD; w++) {
    book.beginRecord('a');
    const start = t0 + w * WINDOW;
    mapping.apply('a', start, start + WINDOW, response(resources, w), start + 2 * WINDOW);
    held.push(book.endRecord());
  }
  const recordBytes = held.reduce((n, c) => n + c.byteLength, 0);
  const saved = JSON.stringify({
    version: 1,
    families: book.familyNames(),
    accounts: {
      a: {
        series: book.save(['a']).get('a')!,
        windows: held.map((c, i) => ({
          start: new Date(t0 + i * WINDOW).toISOString(),
          end: new Date(t0 + (i + 1) * WINDOW).toISOString(),
          counted: encodeCounted(c),
        })),
      },
    },
  });
  const parsed = JSON.parse(saved) as SavedRevisits;
  // As the pipeline makes it for a save (TrafficPipeline.savedRevisits): the series from the book, each window's
  // record encoded once before.
  const encoded = held.map((c) => encodeCounted(c));
  const source = (): SavedRevisits => ({
    version: 1,
    families: book.familyNames(),
    accounts: {
      a: {
        series: book.save(['a']).get('a')!,
        windows: encoded.map((counted, i) => ({
          start: new Date(t0 + i * WINDOW).toISOString(),
          end: new Date(t0 + (i + 1) * WINDOW).toISOString(),
          counted,
        })),
      },
    },
  });
  // The first save makes the series table; later ones, with no series come or gone, reuse it.
  const first = await stateFileWrite(source);
  const write = await stateFileWrite(source);
  // Before the state file wrote in pieces: the whole text made at once, on the caller's stack.
  const atOnce = performance.now();
  JSON.stringify({ version: 1, cursors: { a: new Date(t0).toISOString() }, revisit: parsed });
  const atOnceMs = performance.now() - atOnce;
  return [
    { name: `store bytes/series ${label}`, unit: 'B', value: storeBytes / inStore },
    {
      name: `revisit bytes/series/window held ${label} (${HELD} windows)`,
      unit: 'B',
      value: recordBytes / HELD / inStore,
      target: { maxValue: 8 },
    },
    { name: `revisit slot maps bytes/series ${label}`, unit: 'B', value: book.mapBytes / inStore },
    { name: `state file revisit part bytes/series ${label}`, unit: 'B', value: saved.length / inStore },
    { name: `state file first save ${label}: whole write`, unit: 'ms', value: first.totalMs },
    { name: `state file first save ${label}: longest event-loop stall`, unit: 'ms', value: first.stallMs },
    { name: `state file next saves ${label}: whole write`, unit: 'ms', value: write.totalMs },
    { name: `state file next saves ${label}: longest event-loop stall`, unit: 'ms', value: write.stallMs },
    { name: `state file text at once ${label} (the stall before pieces)`, unit: 'ms', value: atOnceMs },
  ];
}

/** One StateFile.save of this revisit part to a temporary file: how long, and the longest stall of the loop. */
async function stateFileWrite(revisits: () => SavedRevisits): Promise<{ totalMs: number; stallMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-bench-state-'));
  try {
    const file = new StateFile(join(dir, 'state.json'));
    let stallMs = 0;
    let last = performance.now();
    const tick = setInterval(() => {
      const now = performance.now();
      stallMs = Math.max(stallMs, now - last);
      last = now;
    }, 1);
    const t = performance.now();
    await file.save(new Map([['a', Date.UTC(2026, 0, 1)]]), revisits);
    const totalMs = performance.now() - t;
    clearInterval(tick);
    stallMs = Math.max(stallMs, performance.now() - last);
    return { totalMs, stallMs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function countSeries(f: ReturnType<typeof createTrafficFamilies>): number {
  let n = 0;
  for (const s of [f.edge, f.origin]) {
    for (const x of [s.responses, s.responsesByClass, s.requests, s.transferredBytes, s.bandwidth])
      n += x.size;
    n += s.requestDurationMedian.size + (s.cacheHitBytes?.size ?? 0) + (s.cacheHitRatio?.size ?? 0);
  }
  return n + (f.resourceInfo?.size ?? 0);
}

export async function revisitBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const n of [100_000, 1_000_000]) rows.push(...(await measure(n, log)));
  return rows;
}
