/**
 * Bounded series (issue 35): one account of 15,000 resources (the simulator's answers, every metric, six 5-minute
 * windows) counted through the real TrafficMapping with `limits.top_resources: 100` against no limit: the series the
 * store holds and the bytes of its /metrics text (plain and gzipped), from a cold start (the ranking knows only
 * those windows) and with a day of history (a minute of each hour of the day before standing for its hour, as a running
 * exporter or one restarted with its ranking file has); and what the ranking costs in memory per 10,000 resources seen, with a full
 * day of slices filled (V8 heap and array buffers after a full GC, the ranking made and dropped).
 *
 * Run alone: `npm run build && node dist/bench/run.js ranking`.
 */
import { gzipSync } from 'node:zlib';
import { METRIC_NAMES } from '../src/api/vocabulary.js';
import { MINUTE } from '../src/clock.js';
import { formatApiTime, metricValues } from '../src/simulator/traffic.js';
import { TrafficModel } from '../src/simulator/traffic-model.js';
import { SeriesStore } from '../src/store/series-store.js';
import { TrafficMapping } from '../src/traffic/mapping.js';
import { createTrafficFamilies } from '../src/traffic/metrics.js';
import { parseMetricsResponse } from '../src/traffic/parse.js';
import { BUCKETS, ResourceRanking } from '../src/traffic/ranking.js';
import type { TrafficRecord, TrafficResponse } from '../src/traffic/response.js';
import { fullGc } from './measure.js';
import type { BenchRow } from './report.js';

const ACCOUNT = 'bench';
const RESOURCES = Number(process.env.RANKING_BENCH_RESOURCES ?? 15_000);
const TOP = 100;
const WINDOW = 5 * MINUTE;
const T0 = Date.UTC(2026, 0, 1, 18, 0);
const DAY = 86_400_000;
const WINDOWS = 6;

/** The simulator's answer for one window of every resource, read as the exporter reads it. */
function answer(model: TrafficModel, startMs: number, windowMs = WINDOW): TrafficResponse {
  const data: Record<string, unknown>[] = [];
  for (let i = 0; i < RESOURCES; i++) {
    const id = String(100_000 + i);
    const totals = model.totals(ACCOUNT, [id], startMs, startMs + windowMs);
    data.push({
      cname: `r${i}.cdn.example`,
      resource: id,
      resource_name: `resource-${i}`,
      ...metricValues(totals, windowMs / 1000, METRIC_NAMES, 'object'),
    });
  }
  const raw = {
    start: formatApiTime(startMs),
    end: formatApiTime(startMs + windowMs),
    account: ACCOUNT,
    metrics: METRIC_NAMES,
    data,
  };
  return parseMetricsResponse(JSON.parse(JSON.stringify(raw)), { account: ACCOUNT });
}

interface Exposed {
  series: number;
  bytes: number;
  gz: number;
  /** Resources with gauges (their own series, counted in the newest window), `__other__` included. */
  live: number;
  /** Resources out of the top N whose counters stay at their last value. */
  frozen: number;
}

/** The windows counted with `top` (0: no limit): the store's series and /metrics text. */
function exposed(answers: readonly TrafficResponse[], top: number, ranking?: ResourceRanking): Exposed {
  const store = new SeriesStore();
  const mapping = new TrafficMapping(
    createTrafficFamilies(store, { breakdown: 'resource', windowGauges: false }),
    {
      metrics: [],
      resources: [],
      fold: { topResources: () => top, ranking: top > 0 ? (ranking ?? new ResourceRanking(DAY)) : undefined },
    },
  );
  answers.forEach((a, i) => {
    const start = T0 + i * WINDOW;
    mapping.apply(ACCOUNT, start, start + WINDOW, a, start + WINDOW);
  });
  const text = store.render('text');
  const live = new Set<string>();
  const all = new Set<string>();
  for (const line of text.toString().split('\n')) {
    const id = /resource="([^"]*)"/.exec(line)?.[1];
    if (id === undefined) continue;
    all.add(id);
    if (line.startsWith('cdn_resource_info{')) live.add(id);
  }
  return {
    series: store.size,
    bytes: text.length,
    gz: gzipSync(text).length,
    live: live.size,
    frozen: all.size - live.size,
  };
}

/** Heap and array buffers in use after a full GC. */
function used(): number {
  fullGc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** A day of windows of `n` resources (one window per slice), fed to `r`; the records go with the call. */
function feedDay(r: ResourceRanking, n: number): void {
  const records: TrafficRecord[] = [];
  for (let i = 0; i < n; i++) {
    const side = { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() };
    records.push({
      resource: String(1_000_000 + i),
      edge: { ...side, bandwidthBitsPerSecond: 1000 + i },
      origin: side,
    });
  }
  for (let b = 0; b < BUCKETS; b++) {
    const start = T0 + b * (DAY / BUCKETS);
    r.observe(ACCOUNT, start, start + WINDOW, records, (x) => x.resource);
  }
}

/**
 * What a ranking of `n` resources seen over a whole day (every slice filled) holds, in bytes per resource: its rows,
 * its index, and the id strings it keeps alive once the answers that brought them are gone.
 */
function rankingBytesPerResource(n: number): number {
  const before = used();
  const r = new ResourceRanking(DAY);
  feedDay(r, n);
  r.top(ACCOUNT, TOP);
  const after = used();
  if (r.size(ACCOUNT) !== n) throw new Error(`ranked ${r.size(ACCOUNT)} of ${n}`);
  return (after - before) / n;
}

export async function rankingBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const model = new TrafficModel(7);
  log(`ranking: answers of ${RESOURCES} resources`);
  // Half an hour of 5-minute windows.
  const answers = Array.from({ length: WINDOWS }, (_, i) => answer(model, T0 + i * WINDOW));
  const none = exposed(answers, 0);
  log(`ranking: no limit: ${none.series} series, ${none.bytes} bytes`);
  const top = exposed(answers, TOP);
  const said = (what: string, e: Exposed) =>
    log(
      `ranking: top_resources ${TOP}, ${what}: ${e.series} series, ${e.bytes} bytes; ${e.live} resources with ` +
        `series of their own (__other__ included), ${e.frozen} out of the top N at their last value`,
    );
  said('cold start', top);
  // A day of history: a minute of each hour of the day before, standing for its hour.
  const day = new ResourceRanking(DAY);
  for (let h = 24; h >= 1; h--) {
    const start = T0 - h * 3_600_000;
    // The minute's bandwidth over the whole hour: the hour's bytes, as the ranking counts them.
    day.observe(ACCOUNT, start, start + 60 * MINUTE, answer(model, start, MINUTE).records, (r) => r.resource);
  }
  const warm = exposed(answers, TOP, day);
  said('a day of history', warm);
  const perResource = rankingBytesPerResource(10_000);
  const rows: BenchRow[] = [
    {
      name: `series of one account of ${RESOURCES} resources, top_resources: ${TOP}, cold start (baseline: no limit)`,
      unit: 'series',
      value: top.series,
      baseline: none.series,
    },
    {
      name: `/metrics text of that account, top_resources: ${TOP}, cold start (baseline: no limit)`,
      unit: 'MB',
      value: top.bytes / 1e6,
      baseline: none.bytes / 1e6,
    },
    {
      name: `/metrics gzipped, top_resources: ${TOP} (baseline: no limit)`,
      unit: 'MB',
      value: top.gz / 1e6,
      baseline: none.gz / 1e6,
    },
    {
      name: `the same with a day of history (baseline: no limit)`,
      unit: 'series',
      value: warm.series,
      baseline: none.series,
    },
    {
      name: `/metrics text with a day of history (baseline: no limit)`,
      unit: 'MB',
      value: warm.bytes / 1e6,
      baseline: none.bytes / 1e6,
    },
    {
      name: `resources with series of their own after ${WINDOWS} windows (__other__ included)`,
      unit: '',
      value: top.live,
    },
    { name: 'out of the top N, at their last value: cold start', unit: '', value: top.frozen },
    { name: 'out of the top N, at their last value: a day of history', unit: '', value: warm.frozen },
    { name: 'ranking memory per resource seen (a day of slices filled)', unit: 'B', value: perResource },
    { name: 'ranking memory per 10,000 resources', unit: 'MB', value: (perResource * 10_000) / 1e6 },
  ];
  await Promise.resolve();
  return rows;
}
