/**
 * `cdn-exporter backfill --output FILE.om` (the built CLI) for two hours of two accounts, turned into blocks by the
 * real `promtool tsdb create-blocks-from openmetrics` and served by a real Prometheus from that data directory
 * (docs/backfill.md, "Prometheus"): for every window, increase() of every counter series over that window, at its
 * end, is the simulator's truth for the window, exactly. ./promtool-week.test.ts does the same for 7 days.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder, runCli } from '../helpers/cli-process.js';
import { metricsRequests } from '../helpers/ground-truth.js';
import { findTool } from '../helpers/tools.js';
import { counterNames, expectEveryWindowExact, serveBlocks } from './blocks.js';
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
      const text = readFileSync(om, 'utf8');
      const file = readOm(text);
      expect(file.wellFormed).toBe(true);
      expect(file.types.get('cdn_edge_requests')).toBe('counter');
      expect(file.types.get('cdn_edge_cache_hit_ratio')).toBe('gauge');

      const prom = await serveBlocks({ promtool: promtool!, prometheus: prometheus! }, om, join(dir, 'data'));
      try {
        const range = { from, to, windowMs: WINDOW };
        const compared = await expectEveryWindowExact(prom, sim, ACCOUNTS, counterNames(text), range);
        expect(compared).toBeGreaterThan(12 * 100);
      } finally {
        await prom.stop();
      }
    } finally {
      await sim.close();
    }
  }, 120_000);
});
