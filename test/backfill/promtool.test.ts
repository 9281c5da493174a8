/**
 * `cdn-exporter backfill --output FILE.om` (the built CLI) for two hours of two accounts, turned into blocks by the
 * real `promtool tsdb create-blocks-from openmetrics` and served by a real Prometheus from that data directory
 * (docs/backfill.md, "Prometheus"): for every window, increase() of every counter series over that window, at its
 * end, is the simulator's truth for the window, exactly.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder, runCli } from '../helpers/cli-process.js';
import { expectExact, metricsRequests } from '../helpers/ground-truth.js';
import { type PromSample, startPrometheus } from '../helpers/prometheus.js';
import { findTool } from '../helpers/tools.js';
import { closedEnd, iso, readOm, simConfig } from './om.js';

const promtool = findTool('promtool');
const prometheus = findTool('prometheus');
const dir = cliTestFolder('cdn-backfill-promtool-');
const ACCOUNTS = ['demo', 'acme'];
const WINDOW = 10 * MINUTE;

describe.skipIf(!promtool || !prometheus)('backfill to OpenMetrics, promtool blocks, Prometheus', () => {
  it('gives, for every window, increase() of every counter equal to the truth of that window', async () => {
    const sim: Simulator = await startSimulator({ seed: 32 }, { host: '127.0.0.1', port: 0 });
    // metrics.delay is 5m by default: the range ends at a ten-minute mark at least that old.
    const to = closedEnd(6 * MINUTE);
    const from = to - 2 * 60 * MINUTE;
    const config = simConfig(dir, sim.url, ['  requests_per_second: 20']);
    const om = join(dir, 'two-hours.om');
    try {
      const run = await runCli(
        ['backfill', '--config', config, '--from', iso(from), '--to', iso(to), '--output', om],
        {},
        60_000,
      );
      expect(run.stderr).not.toMatch(/"level":(40|50)/);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^backfill done: 24 windows \(0 skipped\), 24 requests, \d+ samples/);
      // One request per window and account, each window of the range once.
      for (const account of ACCOUNTS)
        expect(
          metricsRequests(sim, account)
            .map((e) => e.window[0])
            .sort((a, b) => a - b),
        ).toEqual(Array.from({ length: 12 }, (_, i) => from + i * WINDOW));
      const file = readOm(readFileSync(om, 'utf8'));
      expect(file.wellFormed).toBe(true);
      expect(file.types.get('cdn_edge_requests')).toBe('counter');
      expect(file.types.get('cdn_edge_cache_hit_ratio')).toBe('gauge');

      const blocks = join(dir, 'data');
      execFileSync(promtool!, ['tsdb', 'create-blocks-from', 'openmetrics', om, blocks], { stdio: 'pipe' });
      const prom = await startPrometheus({
        bin: prometheus!,
        target: '127.0.0.1:1',
        job: 'nothing',
        ruleFiles: [],
        storagePath: blocks,
      });
      try {
        let compared = 0;
        for (let start = from; start < to; start += WINDOW) {
          const end = start + WINDOW;
          // increase() drops the name: one query per counter family.
          const byName = new Map<string, PromSample[]>();
          for (const [family, type] of file.types) {
            if (type !== 'counter') continue;
            const name = `${family}_total`;
            const answer = await prom.query(`increase(${name}{job="cdn-exporter-settled"}[10m])`, end / 1000);
            expect(answer.status, answer.error).toBe('success');
            byName.set(name, answer.result);
          }
          const read = (name: string, labels: Record<string, string>) => {
            const hit = byName
              .get(name)
              ?.find((s) => Object.entries(labels).every(([k, v]) => s.metric[k] === v));
            return hit === undefined ? undefined : Number(hit.value[1]);
          };
          for (const account of ACCOUNTS) compared += expectExact(sim, read, account, [[start, end]]);
        }
        expect(compared).toBeGreaterThan(12 * 100);
      } finally {
        await prom.stop();
      }
    } finally {
      await sim.close();
    }
  }, 120_000);
});
