/**
 * The secret check on the store's hot path (src/redact.ts, src/store/family.ts): every series created has its label
 * values checked for a stretch of a registered secret. The row creates the series of 5k resources in 20 families
 * (as a poll's first window does, values shared by the families of a resource) with no secret registered
 * (baseline), then the same in fresh families with two tokens registered: the check must cost under a tenth of the
 * creation. A second row is the log's case: one warn line (every line written goes through `redact`).
 */
import { SECRETS } from '../src/redact.js';
import { SeriesFamily } from '../src/store/family.js';
import { fullGc } from './measure.js';
import type { BenchRow } from './report.js';

const RESOURCES = 5000;
const FAMILIES = 20;

function msOf(work: () => void): number {
  fullGc();
  const t = performance.now();
  work();
  return performance.now() - t;
}

function families(tag: string): SeriesFamily[] {
  return Array.from(
    { length: FAMILIES },
    (_, i) =>
      new SeriesFamily({
        name: `bench_${tag}_${i}_total`,
        help: 'bench',
        type: 'counter',
        labelNames: ['account', 'resource', 'resource_name', 'cname'],
      }),
  );
}

export async function redactBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  if (SECRETS.size > 0) throw new Error('bench: run the redaction suite before any other registers a token');
  const values = Array.from({ length: RESOURCES }, (_, i) => [
    'acme-video',
    String(100_000 + i),
    `name-${i}`,
    `r${i}.cdn.acme.example`,
  ]);
  const create = (fams: SeriesFamily[]) => () => {
    for (const v of values) for (const f of fams) f.slot(v);
  };
  const n = RESOURCES * FAMILIES;
  const warm = families('warm');
  create(warm)();
  const without = (msOf(create(families('without'))) * 1e6) / n;
  SECRETS.add('tK9vQ2xLmN7pR4sW8yZ1aB3cD5eF6gH0');
  SECRETS.add('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0');
  const withSecrets = (msOf(create(families('with'))) * 1e6) / n;
  const line =
    '{"level":40,"time":1795413061308,"account":"demo","cause":"500 server","error":"500: metrics GET /app/metrics/v1/resources: 500 server: upstream unavailable, try again later","msg":"metrics request failed; retrying with backoff"}'.repeat(
      1,
    );
  const lines = 100_000;
  const lineNs =
    (msOf(() => {
      for (let i = 0; i < lines; i++) SECRETS.redact(line);
    }) *
      1e6) /
    lines;
  log(
    `series created ${without.toFixed(0)} ns, with two secrets ${withSecrets.toFixed(0)} ns, log line ${lineNs.toFixed(0)} ns`,
  );
  return [
    {
      name: 'series created, two secrets registered vs none',
      unit: 'ns',
      value: withSecrets,
      baseline: without,
      target: { minRatio: 0.9 },
    },
    {
      name: `secret check per log line (${line.length} chars)`,
      unit: 'ns',
      value: lineNs,
      target: { maxValue: 5000 },
    },
  ];
}
