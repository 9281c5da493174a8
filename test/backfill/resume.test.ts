/**
 * An interrupted backfill resumed (docs/backfill.md, "Interrupted"): the built CLI killed with SIGKILL mid-way (a
 * crash), resumed with --resume, stopped with SIGTERM mid-way, resumed again, writes the very same file as a
 * backfill that ran through; and the resumed runs continue where the progress stood, not from the start.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder, EXIT_WAIT_MS, exitWithin, runCli, startCli } from '../helpers/cli-process.js';
import { waitFor } from '../helpers/stack.js';
import { closedEnd, iso, simConfig } from './om.js';

const dir = cliTestFolder('cdn-backfill-resume-');
/** Windows of 2 minutes over an hour, two accounts: 60 windows. */
const WINDOWS = 60;

/** Windows done as the progress file says (a user can read it: JSON). */
function progressWindows(path: string): number {
  if (!existsSync(path)) return 0;
  try {
    const p = JSON.parse(readFileSync(path, 'utf8')) as { runs: { done?: { windows: number } }[] };
    return p.runs.reduce((n, r) => n + (r.done?.windows ?? 0), 0);
  } catch {
    return 0;
  }
}

function metricsRequests(sim: Simulator): number {
  return sim.requestLog.filter((e) => e.api === 'metrics').length;
}

describe('backfill --resume', () => {
  it('after SIGKILL and after SIGTERM, writes the same file as a backfill that ran through', async () => {
    const sim = await startSimulator({ seed: 34 }, { host: '127.0.0.1', port: 0 });
    try {
      // 4 requests per second per token: the runs take several seconds, checkpoints come every second.
      const config = simConfig(dir, sim.url, ['  requests_per_second: 4', '  concurrency: 2']);
      const to = closedEnd(6 * MINUTE);
      const args = (out: string) => [
        'backfill',
        '--config',
        config,
        '--from',
        iso(to - 60 * MINUTE),
        '--to',
        iso(to),
        '--window',
        '2m',
        '--output',
        out,
      ];
      const whole = join(dir, 'whole.om');
      const through = await runCli(args(whole), {}, 60_000);
      expect(through.code, through.stderr).toBe(0);
      expect(through.stdout).toMatch(`backfill done: ${WINDOWS} windows (0 skipped)`);

      const out = join(dir, 'resumed.om');
      const progress = `${out}.progress`;
      const first = startCli(args(out));
      await waitFor(() => progressWindows(progress) > 0, 30_000, 'a first checkpoint');
      first.child.kill('SIGKILL');
      await first.exited;
      const atKill = progressWindows(progress);
      expect(atKill, 'killed mid-way').toBeLessThan(WINDOWS);
      expect(existsSync(out), 'no .om before the end').toBe(false);
      // Without --resume, the progress is not overwritten.
      const refused = await runCli(args(out), {}, 20_000);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--resume to continue it/);

      const before = metricsRequests(sim);
      const second = startCli([...args(out), '--resume']);
      await waitFor(() => progressWindows(progress) > atKill, 30_000, 'a checkpoint past the kill');
      second.child.kill('SIGTERM');
      const stopped = await exitWithin(second, EXIT_WAIT_MS);
      expect(stopped?.code, second.stderr()).toBe(143);
      expect(second.stdout()).toMatch(/^backfill interrupted: /);
      expect(second.stderr()).toMatch(/run the same command with --resume to continue/);
      const atStop = progressWindows(progress);
      expect(atStop).toBeGreaterThan(atKill);
      expect(atStop).toBeLessThan(WINDOWS);

      const third = await runCli([...args(out), '--resume'], {}, 60_000);
      expect(third.code, third.stderr).toBe(0);
      expect(third.stdout).toMatch(`backfill done: ${WINDOWS} windows (0 skipped)`);
      // The resumed runs read from where the progress stood: fewer windows than a whole backfill between them.
      expect(metricsRequests(sim) - before).toBeLessThan(WINDOWS);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(whole, 'utf8'));
      expect(existsSync(progress), 'progress removed once done').toBe(false);
      expect(existsSync(`${out}.parts`), 'parts removed once done').toBe(false);
    } finally {
      await sim.close();
    }
  }, 120_000);
});
