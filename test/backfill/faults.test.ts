/**
 * A backfill against a failing API (docs/backfill.md, "Failures"), run in-process through the command's own entry
 * (src/backfill/command.ts) with a short backoff: 5xx, resets, 429s and malformed answers are retried until every
 * window has its answer; a 504 reads the window in halves; a 422 skips the window (counted); what is written is
 * exact for every window answered. A token the API refuses stops the backfill with exit 1 and its progress kept;
 * with the token fixed, --resume finishes it, exact.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder } from '../helpers/cli-process.js';
import { expectExact, metricsRequests, type Range, usableAnswer } from '../helpers/ground-truth.js';
import { backfillInProcess, closedEnd, iso, type OmSample, readOm, simConfig } from './om.js';

const dir = cliTestFolder('cdn-backfill-faults-');

const backfill = (args: string[]) => backfillInProcess(args);

/** The windows the simulator answered usably for `account`, each once, in order. */
function answered(sim: Simulator, account: string): Range[] {
  const seen = new Map<number, Range>();
  for (const e of metricsRequests(sim, account)) if (usableAnswer(e)) seen.set(e.window[0], e.window);
  return [...seen.values()].sort((a, b) => a[0] - b[0]);
}

/**
 * Every counter of `account` moved, from each written window's end to the next, by exactly the truth of the next
 * window (the minutes of a skipped window in between are not counted by anyone).
 */
function expectWindowsExact(sim: Simulator, samples: readonly OmSample[], account: string, windows: Range[]) {
  const at = new Map<string, number>();
  for (const s of samples) if (s.labels.account === account) at.set(`${s.key}@${s.timestampMs}`, s.value);
  let checked = 0;
  windows.forEach(([start, end], i) => {
    const before = i === 0 ? undefined : windows[i - 1]![1];
    const read = (name: string, labels: Record<string, string>) => {
      const key = samples.find(
        (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      )?.key;
      if (key === undefined) return undefined;
      const now = at.get(`${key}@${end}`);
      const then = before === undefined ? 0 : (at.get(`${key}@${before}`) ?? 0);
      return now === undefined ? undefined : now - then;
    };
    checked += expectExact(sim, read, account, [[start, end]]);
  });
  return checked;
}

describe('backfill against a failing API', () => {
  it('retries what may pass, halves a window on 504, skips a 422 window, and is exact for the rest', async () => {
    const sim = await startSimulator(
      { seed: 36, faults: { '500': 0.1, '503': 0.05, reset: 0.05, '429': 0.04, malformed: 0.05 } },
      { host: '127.0.0.1', port: 0 },
    );
    try {
      const to = closedEnd(6 * MINUTE);
      const from = to - 60 * MINUTE;
      sim.timeoutWindowsLongerThan(5);
      sim.rejectWindows(from + 20 * MINUTE, from + 30 * MINUTE);
      const config = simConfig(dir, sim.url, ['  requests_per_second: 50']);
      const out = join(dir, 'faults.om');
      const r = await backfill(['--config', config, '--from', iso(from), '--to', iso(to), '--output', out]);
      expect(r.code, r.stderr).toBe(0);
      // 6 windows of 10 minutes per account: 5 read in two halves (504 above 5 minutes), the rejected one skipped
      // whole (the API checks 422 before 504).
      expect(r.stdout).toMatch(/^backfill done: 22 windows \(2 skipped\), \d+ requests/);
      const file = readOm(readFileSync(out, 'utf8'));
      expect(file.wellFormed).toBe(true);
      for (const account of ['demo', 'acme']) {
        const windows = answered(sim, account);
        expect(windows.map(([s, e]) => (e - s) / MINUTE)).toEqual(Array(10).fill(5));
        expect(windows.some(([s]) => s >= from + 20 * MINUTE && s < from + 30 * MINUTE)).toBe(false);
        expect(expectWindowsExact(sim, file.samples, account, windows)).toBeGreaterThan(500);
        // Nothing is written for the rejected minutes.
        expect(
          file.samples.some(
            (s) =>
              s.labels.account === account &&
              s.timestampMs > from + 20 * MINUTE &&
              s.timestampMs <= from + 30 * MINUTE,
          ),
        ).toBe(false);
      }
      const faults = new Set(sim.requestLog.map((e) => e.fault).filter(Boolean));
      for (const kind of ['500', '503', 'reset', '429', 'malformed']) expect(faults, kind).toContain(kind);
    } finally {
      await sim.close();
    }
  }, 60_000);

  it('stops with exit 1 when the API refuses a token, and --resume finishes once it is fixed', async () => {
    const sim = await startSimulator({ seed: 37 }, { host: '127.0.0.1', port: 0 });
    try {
      const to = closedEnd(6 * MINUTE);
      const from = to - 60 * MINUTE;
      sim.setToken('acme', 'acme-rotated');
      const config = simConfig(dir, sim.url, ['  requests_per_second: 50'], 'refused.yml');
      const out = join(dir, 'refused.om');
      const args = ['--config', config, '--from', iso(from), '--to', iso(to), '--output', out];
      const refused = await backfill(args);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(/^backfill stopped: /);
      expect(refused.stderr).toMatch(/account acme: the metrics API refuses the token \(403: .*--resume/);
      expect(refused.stderr).not.toMatch(/acme-token|acme-rotated/);
      expect(existsSync(`${out}.progress`)).toBe(true);
      expect(existsSync(out)).toBe(false);

      // The token fixed in the configuration (same flags): the backfill goes on from its progress.
      const fixed = readFileSync(config, 'utf8').replace('acme-token', 'acme-rotated');
      writeFileSync(config, fixed);
      const resumed = await backfill([...args, '--resume']);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/^backfill done: 12 windows \(0 skipped\)/);
      const file = readOm(readFileSync(out, 'utf8'));
      for (const account of ['demo', 'acme'])
        expect(expectWindowsExact(sim, file.samples, account, answered(sim, account))).toBeGreaterThan(500);
    } finally {
      await sim.close();
    }
  }, 60_000);
});
