/**
 * docs/backfill.md's recipe for Prometheus, as the backfill tests run it: the real `promtool tsdb
 * create-blocks-from openmetrics` turns a backfill's OpenMetrics file into blocks, a real Prometheus serves them
 * from that data directory, and for every window of a range, increase() of every counter series over the window,
 * at its end, is checked against the simulator's truth for the window.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { expectExact, type Reader } from '../helpers/ground-truth.js';
import { type Prometheus, startPrometheus } from '../helpers/prometheus.js';

/** The job the backfill writes without a `remote_write` section (docs/backfill.md, "What it writes"). */
export const SETTLED_JOB = 'cdn-exporter-settled';

/** The counter families of a backfill's file, by their series name (`_total`), from its `# TYPE` lines. */
export function counterNames(omText: string): string[] {
  return [...omText.matchAll(/^# TYPE (\S+) counter$/gm)].map((m) => `${m[1]}_total`);
}

/** promtool's blocks of `om` written into `dataDir`, and a Prometheus serving that directory (stop() it). */
export async function serveBlocks(
  tools: { promtool: string; prometheus: string },
  om: string,
  dataDir: string,
): Promise<Prometheus> {
  // Asynchronous: a week of samples takes promtool most of a minute on a busy machine.
  await promisify(execFile)(tools.promtool, ['tsdb', 'create-blocks-from', 'openmetrics', om, dataDir], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return startPrometheus({
    bin: tools.prometheus,
    target: '127.0.0.1:1',
    job: 'nothing',
    ruleFiles: [],
    storagePath: dataDir,
    // It opens every block before it is ready: a week is 85 of them.
    readyTimeoutMs: 60_000,
  });
}

/** The labels that tell the counter series of one family apart (job and instance are the same on all). */
const IDENTITY = ['account', 'resource', 'code', 'class'] as const;
const keyOf = (name: string, labels: Record<string, string>) =>
  [name, ...IDENTITY.map((l) => labels[l] ?? '')].join('\u0000');

/**
 * For every window `[s, s + windowMs)` of `[from, to)`: increase() of every counter series of `names` over the
 * window, evaluated at its end, equals the simulator's truth for it (test/helpers/ground-truth.ts `expectExact`; a series with
 * no value there reads as 0). One range query per family, stepping from window end to window end, gives every
 * window's increase() as an instant query at that end would. Returns how many values were compared.
 */
export async function expectEveryWindowExact(
  prom: Prometheus,
  sim: Simulator,
  accounts: readonly string[],
  names: readonly string[],
  range: { from: number; to: number; windowMs: number },
): Promise<number> {
  const { from, to, windowMs } = range;
  const byEnd = new Map<number, Map<string, number>>();
  for (const name of names) {
    const answer = await prom.queryRange(
      `increase(${name}{job="${SETTLED_JOB}"}[${windowMs / 1000}s])`,
      (from + windowMs) / 1000,
      to / 1000,
      windowMs / 1000,
    );
    expect(answer.status, answer.error).toBe('success');
    for (const s of answer.result) {
      const key = keyOf(name, s.metric);
      for (const [t, v] of s.values) {
        const end = Math.round(t * 1000);
        const at = byEnd.get(end) ?? new Map<string, number>();
        byEnd.set(end, at);
        at.set(key, Number(v));
      }
    }
  }
  let compared = 0;
  for (let start = from; start < to; start += windowMs) {
    const at = byEnd.get(start + windowMs);
    const read: Reader = (name, labels) => at?.get(keyOf(name, labels));
    for (const account of accounts) compared += expectExact(sim, read, account, [[start, start + windowMs]]);
  }
  return compared;
}
