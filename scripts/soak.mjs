#!/usr/bin/env node
/**
 * `npm run soak -- --runs N [--seed S] [--steps M]`: N generated fault schedules (test/scenarios/fault-schedules.test.ts),
 * then the figures: draws, simulated days, fault steps and injected faults, crashes, failures. A failure prints its
 * seed and shrunk schedule (fast-check) above the figures; add it to REGRESSIONS in that file under a name.
 * Without --seed a new seed each time (printed), so successive soaks explore new draws.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100' },
    seed: { type: 'string' },
    steps: { type: 'string', default: '40' },
  },
});
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const steps = Number(values.steps);
for (const [name, n] of [
  ['--runs', runs],
  ['--seed', seed],
  ['--steps', steps],
]) {
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`${name}: expected a whole number, got ${JSON.stringify(values[name.slice(2)])}\n`);
    process.exit(2);
  }
}
const dir = mkdtempSync(join(tmpdir(), 'cdn-soak-'));
const figures = join(dir, 'figures.jsonl');
process.stdout.write(`soak: ${runs} draws, seed ${seed}, up to ${steps} steps each\n`);
const began = Date.now();
const run = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', 'test/scenarios/fault-schedules.test.ts', '-t', 'draws'],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      SCHEDULE_RUNS: String(runs),
      SCHEDULE_SEED: String(seed),
      SCHEDULE_STEPS: String(steps),
      SCHEDULE_FIGURES: figures,
    },
  },
);
let lines = [];
try {
  lines = readFileSync(figures, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
} catch {
  // no draw finished
}
rmSync(dir, { recursive: true, force: true });
const sum = (key) => lines.reduce((n, l) => n + l[key], 0);
const days = sum('simulatedMs') / 86_400_000;
process.stdout.write(
  [
    '',
    `seed                  ${seed}`,
    `draws                 ${lines.length} (shrinking steps included)`,
    `simulated days        ${days.toFixed(2)}`,
    `fault steps drawn     ${sum('faultSteps')}`,
    `faults injected       ${sum('faults')}`,
    `crashes drawn         ${sum('crashes')}`,
    `failed draws          ${lines.filter((l) => l.failed).length}`,
    `counter values checked ${sum('checked')}`,
    `wall time             ${((Date.now() - began) / 1000).toFixed(0)} s`,
    '',
  ].join('\n'),
);
process.exit(run.status ?? 1);
