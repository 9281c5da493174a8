/**
 * Exact as Prometheus sees it, through crashes and stops (docs/metrics.md, "How traffic is counted"): `cdn-exporter run` as
 * a process with a state file, killed (SIGKILL at seeded random moments of a catch-up whose applier queue is long)
 * or stopped (SIGTERM with windows in flight) and started again, several times, while a scraper records every
 * /metrics response it receives. Summing each counter's increases across all the scrapes, with resets as Prometheus
 * handles them, must give the simulator's ground truth from the first window to the last scraped cursor: a window
 * no scrape saw is read again by the next run (nothing lost), a window a scrape saw never is (nothing twice).
 * Every scrape that shows an account's counters shows its cursor too: the cursor the totals are checked against is
 * the last one scraped.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { mulberry32 } from '../../src/simulator/random.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import {
  EXIT_WAIT_MS,
  exitWithin,
  killAll,
  requireBuild,
  servingUrl,
  startCli,
} from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { expectExact, windowOf } from '../helpers/ground-truth.js';
import { stopAll, waitFor } from '../helpers/stack.js';

const TOKEN = 'exact-token-7f3a';
const ACCOUNTS = ['north', 'south'];
/** Enough resources that counting a window takes longer than fetching it: the applier's queue grows. */
const RESOURCES = 150;
const LOOKBACK_HOURS = 3;

function world(): SimAccount[] {
  return ACCOUNTS.map((name, a) => ({
    name,
    token: TOKEN,
    resources: Array.from({ length: RESOURCES }, (_, i) => ({
      id: String(10_000 * (a + 1) + i),
      name: `r${i}`,
      cname: `r${i}.${name}.example`,
    })),
    streams: [],
    recordings: [],
  }));
}

/**
 * What Prometheus makes of the counters it scraped: per series, the sum of increases between consecutive scrapes.
 * A value below the last one is a reset (Prometheus' rule) and nothing else is: Prometheus does not know where one
 * process ended and the next began (a restart continues the counters from the state file: no drop).
 */
class Increases {
  private readonly last = new Map<string, number>();
  private readonly sum = new Map<string, number>();
  scrapes = 0;
  /** Per account, the cursor the last recorded scrape showed (ms). */
  readonly cursors = new Map<string, number>();
  /** Counters that went down between two scrapes, with the run that served the lower value (the first 20). */
  readonly drops: string[] = [];
  /**
   * Scrapes that showed an account's traffic counters without its cursor (the first 20): the counters cannot be
   * read against the cursor they go with, only against an older one (issue 31: a restarted process showed the
   * counters its stop had saved, and no cursor until it counted a window itself).
   */
  readonly unanchored: string[] = [];

  record(run: number, text: string): void {
    this.scrapes++;
    const shown = new Set<string>();
    const counted = new Set<string>();
    for (const line of text.split('\n')) {
      if (line.startsWith('cdn_metrics_window_end_timestamp_seconds{')) {
        const account = /account="([^"]*)"/.exec(line)![1]!;
        this.cursors.set(account, Number(line.slice(line.lastIndexOf(' ') + 1)) * 1000);
        shown.add(account);
        continue;
      }
      if (!(line.startsWith('cdn_edge_') || line.startsWith('cdn_origin_'))) continue;
      const sp = line.lastIndexOf(' ');
      const key = line.slice(0, sp);
      if (!key.includes('_total{')) continue;
      counted.add(/account="([^"]*)"/.exec(key)![1]!);
      const value = Number(line.slice(sp + 1));
      const prev = this.last.get(key) ?? 0;
      if (value < prev && this.drops.length < 20)
        this.drops.push(`${key}: ${prev} -> ${value} in run ${run}`);
      this.sum.set(key, (this.sum.get(key) ?? 0) + (value >= prev ? value - prev : value));
      this.last.set(key, value);
    }
    for (const account of counted)
      if (!shown.has(account) && this.unanchored.length < 20)
        this.unanchored.push(`${account}: counters without a cursor in run ${run}`);
  }

  /** The summed increases as one scrape, to read like any other. */
  total(): Scrape {
    return Scrape.of([...this.sum].map(([k, v]) => `${k} ${v}`).join('\n'));
  }
}

/** Scrapes `base()` every 50 ms until stopped; a scrape cut by a kill is simply not recorded (it was never seen). */
function scrapeLoop(base: () => string | undefined, run: () => number, into: Increases) {
  let stopped = false;
  const done = (async () => {
    for (let i = 0; i < 100_000 && !stopped; i++) {
      const url = base();
      const r = run();
      if (url) {
        try {
          // A kill ends a scrape in progress at once; the bound is only against a hang, and generous: on a loaded
          // machine a scrape during a catch-up can take seconds, and one cut short would be a scrape missed.
          const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) });
          const text = await res.text();
          if (res.status === 200) into.record(r, text);
        } catch {
          // the process died or is stopping: that scrape never happened for Prometheus either
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

let sim: Simulator;
let dir: string;
beforeAll(async () => {
  requireBuild();
  sim = await startSimulator({ seed: 16, accounts: world(), slowMs: 700 }, { host: '127.0.0.1', port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'cli-exact-'));
});
afterAll(() => stopAll({ sim, dir }));
afterEach(async () => {
  await killAll();
  sim.setFaults({});
});

// Bounded against a hang, generously: a process start on a loaded machine took over 10 s.
const START_WAIT_MS = 60_000;

function configFile(name: string): string {
  const path = join(dir, `${name}.yml`);
  writeFileSync(
    path,
    [
      'api:',
      `  base_url: ${sim.url}`,
      `  token: ${TOKEN}`,
      '  requests_per_second: 100',
      '  concurrency: 4',
      'metrics:',
      '  window: 10m',
      '  delay: 1m',
      `  lookback: ${LOOKBACK_HOURS}h`,
      'accounts:',
      ...ACCOUNTS.map((a) => `  - name: ${a}`),
      `state_file: ${join(dir, `${name}.state.json`)}`,
    ].join('\n'),
  );
  return path;
}

/** The start of the first window each account was asked for since `mark` (the first run's now - lookback). */
function firstStarts(mark: number): Map<string, number> {
  const out = new Map<string, number>();
  const since = sim.requestLog.slice(mark);
  for (const a of ACCOUNTS) {
    const starts = since
      .filter((e) => e.api === 'metrics' && e.query.account?.[0] === a && e.query.start)
      .map((e) => windowOf(e)[0]);
    out.set(a, Math.min(...starts));
  }
  return out;
}

describe('exact as Prometheus sees it, across restarts', () => {
  it.each([
    ['SIGKILL during a catch-up with a long applier queue', 'SIGKILL' as const, 1601],
    ['SIGTERM with windows in flight', 'SIGTERM' as const, 1602],
  ])(
    '%s, then a restart: the summed increases equal the ground truth',
    async (_what, signal, seed) => {
      const mark = sim.requestLog.length;
      const config = configFile(signal);
      const random = mulberry32(seed);
      const seen = new Increases();
      let base: string | undefined;
      let run = 0;
      const loop = scrapeLoop(
        () => base,
        () => run,
        seen,
      );
      try {
        // Slow answers keep windows in flight when the SIGTERM comes.
        if (signal === 'SIGTERM') sim.setFaults({ slow: 0.2 });
        for (run = 0; run < 4; run++) {
          const p = startCli(['--config', config, '--web.listen-address', '127.0.0.1:0']);
          base = await servingUrl(p, START_WAIT_MS);
          const scrapes = seen.scrapes;
          await waitFor(() => seen.scrapes > scrapes, 40_000, 'a first scrape of this run').catch(
            (err: unknown) => {
              throw new Error(`${String(err)}; stderr:\n${p.stderr().slice(-3000)}`);
            },
          );
          await new Promise((resolve) => setTimeout(resolve, 300 + Math.floor(random() * 1200)));
          p.child.kill(signal);
          const exit = await exitWithin(p, EXIT_WAIT_MS);
          expect(exit, `${signal} run ${run}: still running after ${EXIT_WAIT_MS} ms`).toBeDefined();
          if (signal === 'SIGTERM') expect(exit).toEqual({ code: 0, signal: null });
          base = undefined;
        }
        sim.setFaults({});
        // The last run catches up; its scrapes close the books.
        const p = startCli(['--config', config, '--web.listen-address', '127.0.0.1:0']);
        base = await servingUrl(p, START_WAIT_MS);
        const caughtUp = floorMinute(Date.now()) - 20 * MINUTE;
        await waitFor(
          () => ACCOUNTS.every((a) => (seen.cursors.get(a) ?? 0) >= caughtUp),
          240_000,
          'the last run to catch up',
        );
        await loop.stop();
        p.child.kill('SIGKILL');
      } finally {
        await loop.stop();
      }

      // A restart continues the counters from the state file, at or above anything a scrape saw: Prometheus
      // never sees a drop (it would count the lower value again as a reset).
      expect(seen.drops).toEqual([]);
      // One scrape is one moment: the counters with the cursor up to which they count.
      expect(seen.unanchored).toEqual([]);
      const total = seen.total();
      const firsts = firstStarts(mark);
      let checked = 0;
      for (const a of ACCOUNTS) {
        const first = firsts.get(a)!;
        const cursor = seen.cursors.get(a)!;
        expect(cursor - first).toBeGreaterThan((LOOKBACK_HOURS - 1) * 60 * MINUTE);
        checked += expectExact(sim, (name, labels) => total.value(name, labels), a, [[first, cursor]]);
      }
      expect(checked).toBeGreaterThan(1000);
    },
    // Four runs and a catch-up: bounded work, several times slower on a loaded machine.
    600_000,
  );
});
