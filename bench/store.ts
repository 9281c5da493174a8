/**
 * Series store vs prom-client, same label sets, same process, same run.
 *
 * Label sets look like the traffic family cdn_edge_responses_total{account,resource,code}: 10 accounts x 10 codes
 * x N/100 resources. Figures:
 * - fill: creating N series with a value each (store: slot + set; prom-client: Counter.inc(labels, v));
 * - scrape: render of an unchanged store (the cached buffer) vs registry.metrics();
 * - rebuild: render right after one value changed (the family's text re-rendered, the exposition reassembled);
 * - heap per series at the largest N, after a full GC (store: V8 heap, and V8 heap + typed arrays);
 * - event-loop stall at the largest N while every value changes and refresh() rebuilds, vs the stall of a
 *   synchronous rebuild and of prom-client's render.
 */
import { Counter, Registry } from 'prom-client';
import { SeriesStore } from '../src/store/series-store.js';
import type { Family } from '../src/store/types.js';
import { fullGc, maxStall, median } from './measure.js';
import type { BenchRow } from './report.js';

const SIZES = [100_000, 1_000_000] as const;
const NAME = 'cdn_edge_responses_total';
const HELP = 'Responses at the edge by exact status code.';
const LABELS = ['account', 'resource', 'code'] as const;
const CODES = ['200', '204', '206', '301', '302', '304', '403', '404', '500', '504'];

function labelValues(i: number): [string, string, string] {
  return [`account-${i % 10}`, `resource-${Math.floor(i / 100)}`, CODES[Math.floor(i / 10) % 10]!];
}

function sampleValue(i: number, round: number): number {
  return ((i * 7919 + round * 104_729) % 1_000_003) * 1000 + round;
}

function ms(start: number): number {
  return performance.now() - start;
}

/** Average time of fn in milliseconds over enough calls to last about `budgetMs`. */
function perCall(fn: () => unknown, budgetMs = 200): number {
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < budgetMs && calls < 1_000_000) {
    fn();
    calls++;
  }
  return ms(start) / calls;
}

interface HeapFigures {
  heap: number;
  external: number;
}

function heapNow(): HeapFigures {
  fullGc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.arrayBuffers };
}

function fillStore(n: number): { store: SeriesStore; family: Family } {
  const store = new SeriesStore();
  const family = store.family({ name: NAME, help: HELP, type: 'counter', labelNames: LABELS });
  for (let i = 0; i < n; i++) family.set(family.slot(labelValues(i)), sampleValue(i, 0));
  return { store, family };
}

function fillPromClient(n: number): { registry: Registry; counter: Counter<string> } {
  const registry = new Registry();
  const counter = new Counter({ name: NAME, help: HELP, labelNames: LABELS, registers: [registry] });
  for (let i = 0; i < n; i++) {
    const [account, resource, code] = labelValues(i);
    counter.inc({ account, resource, code }, sampleValue(i, 0));
  }
  return { registry, counter };
}

interface StoreFigures {
  fillMs: number;
  scrapeMs: number;
  rebuildMs: number;
  gzipMs: number;
  textBytes: number;
  heapPerSeries: number;
  allPerSeries: number;
  updateMs: number;
  stallRefresh: number;
  stallSync: number;
}

async function measureStore(
  n: number,
  label: string,
  big: boolean,
  log: (l: string) => void,
): Promise<StoreFigures> {
  const before = heapNow();
  let start = performance.now();
  const { store, family } = fillStore(n);
  const fillMs = ms(start);
  const after = heapNow();
  log(`store ${label}: filled in ${fillMs.toFixed(0)} ms`);

  const rebuilds: number[] = [];
  let textBytes = store.render('text').length;
  for (let round = 1; round <= 3; round++) {
    family.add(round, 1);
    start = performance.now();
    textBytes = store.render('text').length;
    rebuilds.push(ms(start));
  }
  const rebuildMs = median(rebuilds);
  const scrapeMs = perCall(() => store.render('text'));
  start = performance.now();
  const gz = store.renderGzip('text');
  const gzipMs = ms(start);
  log(
    `store ${label}: rebuild ${rebuildMs.toFixed(1)} ms, text ${(textBytes / 1e6).toFixed(1)} MB, ` +
      `gzip ${(gz.length / 1e6).toFixed(1)} MB in ${gzipMs.toFixed(0)} ms`,
  );

  let stallRefresh = 0;
  let stallSync = 0;
  let updateMs = 0;
  if (big) {
    // A poll's worth of changes: every value moves, then refresh() rebuilds in chunks (and gzips off-thread).
    start = performance.now();
    for (let i = 0; i < n; i++) family.set(i, sampleValue(i, 5));
    updateMs = ms(start);
    stallRefresh = await maxStall(() => store.refresh());
    const line = `${NAME}{account="account-7",resource="resource-42",code="200"} ${sampleValue(4207, 5)}\n`;
    if (!store.render('text').includes(line)) throw new Error('refresh() did not publish the new values');
    for (let i = 0; i < n; i++) family.set(i, sampleValue(i, 6));
    stallSync = await maxStall(async () => store.render('text'));
    log(
      `store ${label}: update of every value ${updateMs.toFixed(0)} ms, stall during refresh ` +
        `${stallRefresh.toFixed(0)} ms, during a synchronous rebuild ${stallSync.toFixed(0)} ms`,
    );
  }
  return {
    fillMs,
    scrapeMs,
    rebuildMs,
    gzipMs,
    textBytes,
    heapPerSeries: (after.heap - before.heap) / n,
    allPerSeries: (after.heap + after.external - before.heap - before.external) / n,
    updateMs,
    stallRefresh,
    stallSync,
  };
}

interface BaselineFigures {
  fillMs: number;
  renderMs: number;
  heapPerSeries: number;
  stall: number;
}

async function measurePromClient(
  n: number,
  label: string,
  big: boolean,
  log: (l: string) => void,
): Promise<BaselineFigures> {
  const before = heapNow();
  const start = performance.now();
  const { registry } = fillPromClient(n);
  const fillMs = ms(start);
  const after = heapNow();
  log(`prom-client ${label}: filled in ${fillMs.toFixed(0)} ms`);
  const renders: number[] = [];
  let stall = 0;
  for (let round = 0; round < (big ? 1 : 3); round++) {
    const t = performance.now();
    if (big) stall = await maxStall(() => registry.metrics());
    else await registry.metrics();
    renders.push(ms(t));
  }
  const renderMs = median(renders);
  log(`prom-client ${label}: metrics() ${renderMs.toFixed(0)} ms`);
  registry.clear();
  return { fillMs, renderMs, heapPerSeries: (after.heap - before.heap) / n, stall };
}

export async function storeBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const largest = SIZES[SIZES.length - 1]!;
  for (const n of SIZES) {
    const label = n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`;
    const big = n === largest;
    const s = await measureStore(n, label, big, log);
    heapNow();
    const b = await measurePromClient(n, label, big, log);
    heapNow();
    rows.push(
      { name: `fill ${label} series`, unit: 'ms', value: s.fillMs, baseline: b.fillMs },
      {
        name: `scrape ${label} (cached)`,
        unit: 'ms',
        value: s.scrapeMs,
        baseline: b.renderMs,
        target: { minRatio: 20 },
      },
      { name: `rebuild ${label} after a change`, unit: 'ms', value: s.rebuildMs, baseline: b.renderMs },
      { name: `gzip ${label} (first after a change)`, unit: 'ms', value: s.gzipMs },
    );
    if (big) {
      rows.push(
        {
          name: `heap/series ${label} (V8 heap)`,
          unit: 'B',
          value: s.heapPerSeries,
          baseline: b.heapPerSeries,
          target: { maxValue: 150 },
        },
        {
          name: `heap/series ${label} (+typed arrays)`,
          unit: 'B',
          value: s.allPerSeries,
          baseline: b.heapPerSeries,
        },
        { name: `exposition bytes/series ${label}`, unit: 'B', value: s.textBytes / n },
        { name: `update every value ${label}`, unit: 'ms', value: s.updateMs },
        {
          name: `max stall, refresh() ${label}`,
          unit: 'ms',
          value: s.stallRefresh,
          baseline: b.stall,
          target: { maxValue: 100 },
        },
        { name: `max stall, sync render ${label}`, unit: 'ms', value: s.stallSync, baseline: b.stall },
      );
    }
  }
  return rows;
}
