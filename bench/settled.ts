/**
 * Writing one settled window of about 1M series (issue 32, item 6), beside baselines from the same run: the
 * window's answer (the simulator's /resources elements of 15,000 resources, every metric) read as the exporter
 * reads it, then its series and running totals (src/settled/window-series.ts, src/settled/running-totals.ts), then the
 * remote-write requests (src/remote-write/encode.ts, snappy) of `remote_write.queue.max_samples_per_send`'s default.
 * Figures: CPU time of each step against JSON.parse of the same answer, heap kept by the running totals, bytes on
 * the wire per sample.
 *
 * Run alone: `npm run build && node dist/bench/run.js settled`.
 */
import { compressSync } from 'snappy';
import { METRIC_NAMES } from '../src/api/vocabulary.js';
import { MINUTE, systemClock } from '../src/clock.js';
import { silentLogger } from '../src/log.js';
import { cutRequests, encodeWriteRequest } from '../src/remote-write/encode.js';
import { RunningTotals } from '../src/settled/running-totals.js';
import { WindowSeries } from '../src/settled/window-series.js';
import { SettledWriter } from '../src/settled/writer.js';
import { formatApiTime, metricValues } from '../src/simulator/traffic.js';
import { TrafficModel } from '../src/simulator/traffic-model.js';
import { parseMetricsResponse } from '../src/traffic/parse.js';
import { fullGc, maxStall, median } from './measure.js';
import type { BenchRow } from './report.js';

const ACCOUNT = 'bench';
const RESOURCES = Number(process.env.SETTLED_BENCH_RESOURCES ?? 15_000);
const T0 = Date.UTC(2026, 0, 1, 18, 0);
const PER_SEND = 5000;
const RUNS = 3;

function answerText(model: TrafficModel, startMs: number): string {
  const data: Record<string, unknown>[] = [];
  for (let i = 0; i < RESOURCES; i++) {
    const id = String(100_000 + i);
    const totals = model.totals(ACCOUNT, [id], startMs, startMs + MINUTE);
    data.push({
      cname: `r${i}.cdn.example`,
      resource: id,
      resource_name: `resource-${i}`,
      ...metricValues(totals, 60, METRIC_NAMES, 'object'),
    });
  }
  return JSON.stringify({
    start: formatApiTime(startMs),
    end: formatApiTime(startMs + MINUTE),
    account: ACCOUNT,
    metrics: METRIC_NAMES,
    data,
  });
}

function timed<T>(f: () => T): [T, number] {
  const t = performance.now();
  const out = f();
  return [out, performance.now() - t];
}

export async function settledBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const model = new TrafficModel(1);
  const texts = [answerText(model, T0), answerText(model, T0 + MINUTE)];
  const series = new WindowSeries({
    breakdown: 'resource',
    metrics: [],
    resources: [],
    maxLabelLength: 1024,
  });
  const totals = new RunningTotals(24 * 60 * MINUTE);
  const json: number[] = [];
  const read: number[] = [];
  const points: number[] = [];
  const take: number[] = [];
  const encode: number[] = [];
  let samples = 0;
  let wire = 0;
  let seriesCount = 0;
  fullGc();
  const heapBefore = process.memoryUsage().heapUsed;
  for (let i = 0; i < RUNS + 1; i++) {
    const text = texts[i % 2]!;
    const start = T0 + i * MINUTE;
    fullGc(2);
    const [parsed, jsonMs] = timed(() => JSON.parse(text) as unknown);
    const [response, readMs] = timed(() =>
      parseMetricsResponse(parsed, { account: ACCOUNT, breakdown: 'resource' }),
    );
    const [pts, pointsMs] = timed(() => series.points(ACCOUNT, start, start + MINUTE, response));
    const [taken, takeMs] = timed(() => {
      const t = totals.take(start, start + MINUTE, pts);
      totals.commit(t);
      return t;
    });
    const [bytes, encodeMs] = timed(() => {
      let n = 0;
      for (const span of cutRequests(taken.series, PER_SEND))
        n += compressSync(encodeWriteRequest(taken.series, span)).length;
      return n;
    });
    // The first window creates every series (a zero and a total each): the steady ones are measured after it.
    if (i === 0) continue;
    json.push(jsonMs);
    read.push(jsonMs + readMs);
    points.push(pointsMs);
    take.push(takeMs);
    encode.push(encodeMs);
    samples = taken.samples;
    wire = bytes;
    seriesCount = taken.series.length;
  }
  fullGc();
  const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  // The writer as the exporter runs it: the window taken in slices; the longest the event loop waits meanwhile.
  const writer = new SettledWriter(
    { finalAfterMs: 0, graceMs: 0, maxReadMs: 10 * MINUTE, maxHeldRecords: 1e9, tickMs: 60_000 },
    {
      clock: systemClock,
      log: silentLogger,
      series,
      retentionMs: 24 * 60 * MINUTE,
      batches: {
        offer: (_b, done) => {
          setImmediate(() => done('sent'));
          return true;
        },
        room: async () => {},
      },
    },
  );
  const response = parseMetricsResponse(JSON.parse(texts[0]!), { account: ACCOUNT, breakdown: 'resource' });
  fullGc();
  const stallMs = await maxStall(async () => {
    writer.settled(ACCOUNT, T0, T0 + MINUTE, response);
    for (let i = 0; i < 100_000 && writer.cursor(ACCOUNT)?.acked !== T0 + MINUTE; i++)
      await new Promise((r) => setImmediate(r));
  });
  const jsonMs = median(json);
  const writeMs = median(points) + median(take) + median(encode);
  log(
    `settled: ${seriesCount} series, ${samples} samples a window; JSON.parse ${jsonMs.toFixed(0)} ms, read ` +
      `${median(read).toFixed(0)} ms, points ${median(points).toFixed(0)} ms, totals ${median(take).toFixed(0)} ms, ` +
      `encode + snappy ${median(encode).toFixed(0)} ms; ${(wire / 1e6).toFixed(1)} MB on the wire ` +
      `(${(wire / samples).toFixed(1)} B/sample); running totals keep ${heapMb.toFixed(0)} MB of heap; ` +
      `longest stall while the writer takes it ${stallMs.toFixed(0)} ms`,
  );
  return [
    {
      name: `settled window of ${(seriesCount / 1e6).toFixed(2)}M series: series, totals, encode + snappy (baseline JSON.parse of its answer)`,
      unit: 'ms',
      value: writeMs,
      baseline: jsonMs,
    },
    {
      name: 'settled window: the answer read as the exporter reads it (JSON.parse + parse)',
      unit: 'ms',
      value: median(read),
    },
    { name: 'settled window: bytes on the wire per sample (snappy)', unit: 'B', value: wire / samples },
    { name: 'settled window: MB on the wire', unit: 'MB', value: wire / 1e6 },
    { name: 'settled: heap kept by the running totals of those series', unit: 'MB', value: heapMb },
  ];
}
