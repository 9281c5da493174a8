/**
 * Issue 32's proof for a week: `cdn-exporter backfill --output FILE.om` (the built CLI) of 7 days of two accounts,
 * turned into blocks by the real `promtool tsdb create-blocks-from openmetrics` and served by a real Prometheus
 * from that data directory (docs/backfill.md, "Prometheus"): for every one of the 1,008 ten-minute windows, increase()
 * of every counter series (every metric, two resources per account) over the window, at its end, is the
 * simulator's truth for the window, exactly. The
 * backfill runs at the documented ceiling of `api.requests_per_second`, so what it costs is its own work; its time
 * and requests are printed (`backfill 7 days of 2 accounts: ...`).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { CEILINGS } from '../../src/config/schema.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { demoWorld } from '../../src/simulator/world.js';
import { cliTestFolder, runCli } from '../helpers/cli-process.js';
import { expectTiles, metricsRequests } from '../helpers/ground-truth.js';
import { findTool } from '../helpers/tools.js';
import { counterNames, expectEveryWindowExact, serveBlocks } from './blocks.js';
import { closedEnd, iso, simConfig } from './om.js';

const promtool = findTool('promtool');
const prometheus = findTool('prometheus');
const dir = cliTestFolder('cdn-backfill-week-');
const ACCOUNTS = ['demo', 'acme'];
const WINDOW = 10 * MINUTE;
const DAYS = 7;
const WINDOWS = (DAYS * 24 * 60 * MINUTE) / WINDOW;
const RESOURCES = 2;

describe.skipIf(!promtool || !prometheus)(
  'a week of backfill to OpenMetrics, promtool blocks, Prometheus',
  () => {
    it('gives, for every window of 7 days, increase() of every counter equal to the truth of that window', async () => {
      // The demo world's two accounts with two resources each: a week of every metric is still 300,000 samples and
      // 40 MB that promtool parses, which sets most of this test's time.
      const accounts = demoWorld().map((a) => ({ ...a, resources: a.resources.slice(0, RESOURCES) }));
      const sim: Simulator = await startSimulator({ seed: 32, accounts }, { host: '127.0.0.1', port: 0 });
      // metrics.delay is 5m by default: the range ends at a ten-minute mark at least that old.
      const to = closedEnd(6 * MINUTE);
      const from = to - DAYS * 24 * 60 * MINUTE;
      const config = simConfig(dir, sim.url, [
        `  requests_per_second: ${CEILINGS.requestsPerSecond}`,
        // Windows in flight per account: enough that the simulator's answers, not the round trips, set the pace.
        '  concurrency: 16',
      ]);
      const om = join(dir, 'week.om');
      try {
        const began = performance.now();
        const run = await runCli(
          ['backfill', '--config', config, '--from', iso(from), '--to', iso(to), '--output', om],
          {},
          150_000,
        );
        const wallMs = performance.now() - began;
        expect(run.stderr).not.toMatch(/"level":(40|50)/);
        expect(run.code, run.stderr).toBe(0);
        const done = run.stdout.split('\n').find((l) => l.startsWith('backfill done:')) ?? '';
        expect(done).toMatch(
          new RegExp(
            `^backfill done: ${2 * WINDOWS} windows \\(0 skipped\\), ${2 * WINDOWS} requests, \\d+ samples`,
          ),
        );
        // One request per window and account, the windows tiling the range: each once.
        let requests = 0;
        for (const account of ACCOUNTS) {
          const windows = metricsRequests(sim, account)
            .map((e) => e.window)
            .sort((a, b) => a[0] - b[0]);
          expectTiles(windows, from, to, account);
          expect(windows.length, account).toBe(WINDOWS);
          requests += windows.length;
        }
        // The figure issue 32 asks for: the backfill's time and requests for 7 days of two accounts.
        console.log(
          `backfill ${DAYS} days of ${ACCOUNTS.length} accounts (${RESOURCES} resources each): ${(wallMs / 1000).toFixed(1)} s wall (process start ` +
            `to exit), ${requests} metrics requests to the simulator, ${statSync(om).size} bytes; it printed: ${done}`,
        );

        const text = readFileSync(om, 'utf8');
        const names = counterNames(text);
        expect(names).toContain('cdn_edge_requests_total');
        const promStarted = performance.now();
        const prom = await serveBlocks(
          { promtool: promtool!, prometheus: prometheus! },
          om,
          join(dir, 'data'),
        );
        try {
          const blocksMs = performance.now() - promStarted;
          const compared = await expectEveryWindowExact(prom, sim, ACCOUNTS, names, {
            from,
            to,
            windowMs: WINDOW,
          });
          expect(compared).toBeGreaterThan(WINDOWS * 2 * RESOURCES * 10);
          console.log(
            `promtool blocks and Prometheus ready in ${(blocksMs / 1000).toFixed(1)} s; ${compared} values of ` +
              `${WINDOWS} windows compared in ${((performance.now() - promStarted - blocksMs) / 1000).toFixed(1)} s`,
          );
        } finally {
          await prom.stop();
        }
      } finally {
        await sim.close();
      }
    }, 360_000);
  },
);
