/**
 * Issue 25, row 7: an inventory listing 100,000 accounts, of which `accounts_discovery.max_accounts` (10,000 by
 * default) are started, measured on the exporter process as a user runs it (`node dist/src/cli.js --config FILE`,
 * with the memory settings it gives itself) against a simulator in this process whose inventory answers the list.
 *
 * - stall: /healthz is asked every 20 ms from the inventory's round (its log line) until the 10,000 are started
 *   (the log line after the last); the row is the longest answer, beside the same filtering and sort of the list
 *   done in one block here, as discovery did before (the baseline). Target: 100 ms, the project's stall target.
 * - stop: after a minute of polling (the accounts' first windows waiting in the request gate, at 50 requests a
 *   second), the time from SIGTERM to the process's exit. Target: 5 s, the stop bound of the process tests.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { keeps, nameRefusal } from '../src/discovery/discovery.js';
import { startSimulator } from '../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../src/simulator/world.js';
import { fullGc, maxStall } from './measure.js';
import type { BenchRow } from './report.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const LISTED = 100_000;
const STARTED = 10_000;
const HOLD_MS = 60_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function discoveryBenchmarks(log: (line: string) => void): Promise<BenchRow[]> {
  const names = Array.from(
    { length: LISTED },
    (_, i) => `acct-${String((i * 7919) % LISTED).padStart(6, '0')}`,
  );
  fullGc(2);
  const include = /^(?:.*)$/;
  const oneBlock = await maxStall(async () => {
    const kept = names.filter((n) => keeps({ include }, n) && nameRefusal(n, 128) === undefined);
    kept.sort();
  });

  const sim = await startSimulator({ seed: 7 });
  sim.setInventoryBody(JSON.stringify(names.map((name, i) => ({ status: 'active', uid: `1-1-${i}`, name }))));
  const dir = mkdtempSync(join(tmpdir(), 'bench-discovery-'));
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'api:',
      `  base_url: ${sim.url}`,
      `  username: ${DEMO_USER}`,
      `  password: ${DEMO_PASSWORD}`,
      '  requests_per_second: 50',
      'accounts: []',
      'accounts_discovery:',
      '  enabled: true',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [CLI, '--config', config, '--web.listen-address', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let base: string | undefined;
  let listedAt: number | undefined;
  let startedAt: number | undefined;
  createInterface({ input: child.stderr! }).on('line', (line) => {
    let l: Record<string, unknown>;
    try {
      l = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (typeof l.address === 'string') base = `http://${l.address}`;
    if (l.msg === 'discovered accounts') listedAt ??= performance.now();
    if (l.msg === 'discovered accounts: polling started') startedAt ??= performance.now();
  });
  try {
    const t0 = performance.now();
    while (base === undefined || listedAt === undefined) {
      if (performance.now() - t0 > 120_000)
        throw new Error('the exporter did not list the inventory in 120 s');
      await sleep(20);
    }
    let worst = 0;
    let probes = 0;
    while (startedAt === undefined) {
      if (performance.now() - t0 > 300_000) throw new Error(`${STARTED} accounts not started in 300 s`);
      const t = performance.now();
      await fetch(`${base}/healthz`);
      worst = Math.max(worst, performance.now() - t);
      probes++;
      await sleep(20);
    }
    const startMs = startedAt - listedAt;
    await sleep(HOLD_MS);
    const s0 = performance.now();
    child.kill('SIGTERM');
    await exited;
    const stopMs = performance.now() - s0;
    log(
      `discovery: ${LISTED} listed, ${STARTED} started in ${startMs.toFixed(0)} ms; longest /healthz ` +
        `${worst.toFixed(0)} ms of ${probes} (the same filter and sort in one block: ${oneBlock.toFixed(0)} ms); ` +
        `SIGTERM to exit after ${HOLD_MS / 1000} s of polling: ${stopMs.toFixed(0)} ms`,
    );
    return [
      {
        name: `max stall, starting ${STARTED} of ${LISTED} listed accounts`,
        unit: 'ms',
        value: worst,
        baseline: oneBlock,
        target: { maxValue: 100 },
      },
      {
        name: `SIGTERM to exit, ${STARTED} accounts polled`,
        unit: 'ms',
        value: stopMs,
        target: { maxValue: 5000 },
      },
    ];
  } finally {
    child.kill('SIGKILL');
    await exited;
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
