/**
 * A backfill stopped after any window and resumed from its snapshot writes the same samples as one that ran
 * through (src/backfill/account-runner.ts), whatever resources come and go: a counter unchanged for
 * metrics.counter_retention starts again from a zero in both, though RunningTotals sweeps at other windows in the
 * resumed run. Answers are made up per window (fast-check), as the API would give them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AccountRunner, type SeriesSink } from '../../src/backfill/account-runner.js';
import { seriesLines } from '../../src/backfill/openmetrics.js';
import type { RunProgress } from '../../src/backfill/progress-file.js';
import { WindowReader } from '../../src/backfill/reader.js';
import { MINUTE, systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import type { SettledSeries } from '../../src/settled/running-totals.js';
import { WindowSeries } from '../../src/settled/window-series.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { record } from './traffic-record.js';

const RESOURCES = ['1', '2', '3'];
const T0 = Date.parse('2026-10-01T00:00:00Z');

/** Collects what a runner writes, as OpenMetrics lines, in order. */
class Lines implements SeriesSink {
  text = '';
  async ready(): Promise<void> {}
  put(_a: string, _i: number, _e: number, series: readonly SettledSeries[]): boolean {
    for (const s of series) this.text += seriesLines(s);
    return true;
  }
}

async function walk(
  runs: RunProgress[],
  answers: (start: number) => TrafficResponse,
  retentionMs: number,
  stopAfter?: number,
): Promise<{ text: string; runs: RunProgress[] }> {
  const sink = new Lines();
  const stop = new AbortController();
  let taken = 0;
  const runner: AccountRunner = new AccountRunner({
    account: 'a',
    index: 0,
    runs,
    windowMs: MINUTE,
    readAhead: 2,
    reader: new WindowReader('a', async (start) => answers(start), {
      clock: systemClock,
      log: silentLogger,
      backoff: { baseMs: 1, capMs: 1 },
      random: () => 0.5,
      signal: stop.signal,
    }),
    series: new WindowSeries({
      breakdown: 'resource',
      metrics: [],
      resources: [],
      maxLabelLength: 1024,
      extraLabels: [['job', 'j']],
    }),
    retentionMs,
    sink,
    log: silentLogger,
    signal: stop.signal,
    onWindow: () => {
      if (++taken === stopAfter) stop.abort(new Error('stopped'));
    },
  });
  await runner.run().catch((err: unknown) => {
    if (!stop.signal.aborted) throw err;
  });
  return { text: sink.text, runs: runner.snapshot() };
}

describe('a resumed account runner', () => {
  it('writes what one that ran through writes, resources coming and going past the retention', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Per window, the resources present (a bit mask) and their requests.
        fc.array(fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 50 })), {
          minLength: 2,
          maxLength: 200,
          // Long runs too: RunningTotals sweeps every 64 windows.
          size: 'max',
        }),
        fc.integer({ min: 1, max: 6 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        async (windows, retentionWindows, at) => {
          const answers = (start: number): TrafficResponse => {
            const [mask, n] = windows[(start - T0) / MINUTE]!;
            return {
              account: 'a',
              metrics: [],
              issues: [],
              unknownKeys: [],
              records: RESOURCES.filter((_, i) => mask & (1 << i)).map((r, i) => record(r, n + i)),
            };
          };
          const run = (): RunProgress[] => [
            { account: 'a', start: T0, end: T0 + windows.length * MINUTE, next: T0 },
          ];
          const retentionMs = retentionWindows * MINUTE;
          const whole = await walk(run(), answers, retentionMs);
          const stopAfter = 1 + Math.floor(at * (windows.length - 1));
          const first = await walk(run(), answers, retentionMs, stopAfter);
          expect(first.runs[0]!.next).toBe(T0 + stopAfter * MINUTE);
          // The snapshot goes through JSON as the progress file does.
          const rest = await walk(
            JSON.parse(JSON.stringify(first.runs)) as RunProgress[],
            answers,
            retentionMs,
          );
          expect(first.text + rest.text).toBe(whole.text);
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
