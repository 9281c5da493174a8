/**
 * `backfill --gaps` (the built CLI): the spans the exporter's recorder listed beside state_file (src/backfill/gaps.ts)
 * are read, exactly those windows and no other, each span written as a run of its own (a zero one millisecond after
 * its start, its running totals to its end, equal to the simulator's truth over the span), then marked filled: a
 * second run has nothing to do, and a span recorded later is the only one the next run reads.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { filledPath, GapsRecorder, gapsPath } from '../../src/backfill/gaps.js';
import { MINUTE, systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder, runCli } from '../helpers/cli-process.js';
import { expectExact, expectTiles, metricsRequests, type Range } from '../helpers/ground-truth.js';
import { closedEnd, iso, type OmSample, readOm, simConfig } from './om.js';

const dir = cliTestFolder('cdn-backfill-gaps-');

function windowsAsked(sim: Simulator, account: string, since = 0): Range[] {
  return metricsRequests(sim, account)
    .slice(since)
    .map((e) => e.window)
    .sort((a, b) => a[0] - b[0]);
}

describe('backfill --gaps', () => {
  it('fills exactly the listed spans, each as its own run, and marks them filled', async () => {
    const sim = await startSimulator({ seed: 35 }, { host: '127.0.0.1', port: 0 });
    try {
      const state = join(dir, 'state.json');
      const config = simConfig(dir, sim.url, ['  requests_per_second: 20', `state_file: ${state}`]);
      const t = closedEnd(6 * MINUTE);
      const m = (minutes: number) => t - minutes * MINUTE;
      const recorder = await GapsRecorder.open(gapsPath(state), { clock: systemClock, log: silentLogger });
      recorder.record('demo', m(100), m(75), 'rejected');
      recorder.record('demo', m(40), m(30), 'revisit');
      recorder.record('acme', m(90), m(60), 'catch_up_limit');
      recorder.record('acme', m(60), m(50), 'rejected');
      await recorder.flush();

      const out = join(dir, 'gaps.om');
      const run = await runCli(['backfill', '--config', config, '--gaps', '--output', out], {}, 60_000);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^backfill done: 8 windows \(0 skipped\), 8 requests/);

      // Spans are read on the --window grid laid from their start (10m), the last window cut at the span's end;
      // adjacent spans of one account (whatever their reasons) are one run.
      const spans: Record<string, Range[]> = {
        demo: [
          [m(100), m(75)],
          [m(40), m(30)],
        ],
        acme: [[m(90), m(50)]],
      };
      expect(windowsAsked(sim, 'demo')).toEqual([
        [m(100), m(90)],
        [m(90), m(80)],
        [m(80), m(75)],
        [m(40), m(30)],
      ]);
      expectTiles(windowsAsked(sim, 'acme'), m(90), m(50), 'acme');

      const file = readOm(readFileSync(out, 'utf8'));
      expect(file.wellFormed).toBe(true);
      const counters = file.samples.filter((s) => s.name.endsWith('_total'));
      expect(counters.length).toBeGreaterThan(0);
      for (const [account, list] of Object.entries(spans)) {
        const mine = counters.filter((s) => s.labels.account === account);
        // Every sample lies in a span: after its start, at most at its end.
        for (const s of mine)
          expect(
            list.some(([a, b]) => s.timestampMs > a && s.timestampMs <= b),
            `${s.key} at ${s.timestampMs}`,
          ).toBe(true);
        for (const [a, b] of list) {
          const inSpan = mine.filter((s) => s.timestampMs > a && s.timestampMs <= b);
          const first = new Map<string, OmSample>();
          const last = new Map<string, OmSample>();
          for (const s of inSpan) {
            if (!first.has(s.key)) first.set(s.key, s);
            last.set(s.key, s);
          }
          // Its own run: each series starts with a zero 1 ms after the span's start...
          for (const s of first.values()) expect([s.value, s.timestampMs], s.key).toEqual([0, a + 1]);
          // ... and ends at the span's end with the truth of the whole span.
          const read = (name: string, labels: Record<string, string>) =>
            [...last.values()].find(
              (s) =>
                s.name === name &&
                s.timestampMs === b &&
                Object.entries(labels).every(([k, v]) => s.labels[k] === v),
            )?.value;
          expect(expectExact(sim, read, account, [[a, b]])).toBeGreaterThan(50);
        }
      }
      expect(existsSync(filledPath(state))).toBe(true);

      // Filled: nothing left, no request.
      const asked = sim.requestLog.length;
      const again = await runCli([
        'backfill',
        '--config',
        config,
        '--gaps',
        '--output',
        join(dir, 'again.om'),
      ]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe('backfill: no gap to fill\n');
      expect(sim.requestLog.length).toBe(asked);

      // A span recorded since is the only one read next.
      const later = await GapsRecorder.open(gapsPath(state), { clock: systemClock, log: silentLogger });
      later.record('acme', m(20), m(10), 'rejected');
      await later.flush();
      const before = metricsRequests(sim, 'acme').length;
      const next = await runCli(['backfill', '--config', config, '--gaps', '--output', join(dir, 'next.om')]);
      expect(next.code, next.stderr).toBe(0);
      expect(windowsAsked(sim, 'acme', before)).toEqual([[m(20), m(10)]]);
      expect(metricsRequests(sim, 'demo').length).toBe(4);

      // A range backfilled over a listed gap fills it: --gaps does not write those minutes again.
      const covered = await GapsRecorder.open(gapsPath(state), { clock: systemClock, log: silentLogger });
      covered.record('demo', m(60), m(50), 'rejected');
      await covered.flush();
      const ranged = await runCli([
        'backfill',
        '--config',
        config,
        '--accounts',
        'demo',
        '--from',
        iso(m(70)),
        '--to',
        iso(m(40)),
        '--output',
        join(dir, 'range.om'),
      ]);
      expect(ranged.code, ranged.stderr).toBe(0);
      const last = await runCli(['backfill', '--config', config, '--gaps', '--output', join(dir, 'last.om')]);
      expect(last.stdout).toBe('backfill: no gap to fill\n');
    } finally {
      await sim.close();
    }
  }, 120_000);
});
