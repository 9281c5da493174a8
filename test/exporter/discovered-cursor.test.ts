/**
 * `state_file` with account discovery: an account stopped at run time keeps, in the state file, the cursor the last
 * scrape that showed its series saw. The windows it counted after that scrape were never shown (its series went
 * with it), so no later scrape may save them, and when it comes back it asks for them again.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { walkers } from '../helpers/ground-truth.js';
import { quiet, type Stack, startStack } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const INTERVAL = 10 * MINUTE;

let stacks: Stack[] = [];
let dir: string | undefined;
afterEach(async () => {
  for (const s of stacks) await s.stop();
  stacks = [];
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function account(name: string): SimAccount {
  const base = demoWorld()[1]!;
  return { ...base, name, token: `${name}-token`, streams: [], recordings: [] };
}

/** Moves the clock in steps of a second (the request gate paces on it), letting the exporters finish each step. */
async function run(clock: FakeClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 1000) {
    await clock.advance(1000);
    for (const s of stacks) await quiet(s);
  }
}

async function scrape(s: Stack): Promise<Scrape> {
  await s.exporter.store.refresh();
  return s.scrape();
}

function savedCursor(path: string, account: string): number | undefined {
  const state = JSON.parse(readFileSync(path, 'utf8')) as { cursors: Record<string, string> };
  const at = state.cursors[account];
  return at === undefined ? undefined : Date.parse(at);
}

describe('state_file with a discovered account stopped and back', () => {
  it('keeps the cursor its last scrape saw, and the account resumes there', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdn-discovered-cursor-'));
    const stateFile = join(dir, 'state.json');
    const clock = new FakeClock(T0);
    const s = await startStack({
      clock,
      sim: { accounts: [...demoWorld(), account('prod-a')] },
      config: {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
        metrics: { lookback: '30m', delay: '0m', window: '5m' },
        accounts_discovery: { enabled: true, interval: '10m', include: 'prod-.*' },
        accounts: [],
        state_file: stateFile,
      },
    });
    stacks.push(s);
    await run(clock, 10_000);
    let sc = await scrape(s);
    expect(sc.all('cdn_up').map((x) => x.labels.account)).toContain('prod-a');
    const seen = savedCursor(stateFile, 'prod-a')!;
    expect(seen).toBeGreaterThan(T0 - 30 * MINUTE);
    const walker = walkers(s.exporter).get('prod-a')!;

    // Deactivated: polled on, unscraped, until the next discovery round stops it and removes its series.
    s.sim.setAccountStatus('prod-a', 'inactive');
    await run(clock, INTERVAL);
    expect(walker.current.cursor, 'windows were counted after the last scrape').toBeGreaterThan(seen);
    sc = await scrape(s);
    expect(sc.all('cdn_edge_requests_total').filter((x) => x.labels.account === 'prod-a')).toEqual([]);
    await scrape(s);
    expect(savedCursor(stateFile, 'prod-a')).toBe(seen);

    // Back: it asks again for the windows no scrape showed, from the saved cursor.
    const mark = s.sim.requestLog.length;
    s.sim.setAccountStatus('prod-a', 'active');
    await run(clock, INTERVAL);
    const again = s.sim.requestLog
      .slice(mark)
      .filter((e) => e.api === 'metrics' && e.status === 200 && e.query.account?.[0] === 'prod-a')
      .map((e) => [Date.parse(`${e.query.start![0]}Z`), Date.parse(`${e.query.end![0]}Z`)] as const);
    expect(again.length).toBeGreaterThan(0);
    expect(Math.min(...again.map(([start]) => start))).toBe(seen);
  }, 60_000);
});
