/**
 * The ranking of limits.top_resources survives a restart through its file beside the state file (issue 35): the
 * next process keeps the same top N from its first window.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { quiet, requestsLanded, type Stack, startStack } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

it('keeps the top N across a restart: the ranking file is written, and read before the first window', async () => {
  const clock = new FakeClock(T0);
  const dir = mkdtempSync(join(tmpdir(), 'cdn-top-restart-'));
  dirs.push(dir);
  const sim = await startSimulator({ seed: 3, clock });
  const config = {
    state_file: join(dir, 'state.json'),
    metrics: { window: '5m', delay: '0m', lookback: '30m' },
    limits: { top_resources: 2 },
  };
  let stack: Stack | undefined;
  try {
    stack = await startStack({ clock, simulator: sim, config });
    await clock.advance(10 * 60_000, () => requestsLanded(stack!));
    await quiet(stack);
    const before = await stack.scrape();
    const own = (s: typeof before) =>
      s
        .all('cdn_resource_info', { account: 'demo' })
        .map((x) => x.labels.resource)
        .sort();
    await stack.stop();
    const path = join(dir, 'state.ranking.json');
    expect(existsSync(path)).toBe(true);
    expect(Object.keys(JSON.parse(readFileSync(path, 'utf8')).accounts)).toEqual(['demo']);
    stack = await startStack({ clock, simulator: sim, config });
    await clock.advance(5 * 60_000, () => requestsLanded(stack!));
    await quiet(stack);
    const after = await stack.scrape();
    expect(own(after)).toEqual(own(before));
    expect(own(after)).toContain('__other__');
  } finally {
    await stack?.stop();
    await sim.close();
  }
}, 60_000);
