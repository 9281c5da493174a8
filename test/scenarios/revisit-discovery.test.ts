/**
 * metrics.revisit with accounts_discovery: an account discovery stops keeps its windows awaiting a revisit (in the
 * state file's revisit part too), with its cursor and counters, while its series leave /metrics; when it comes
 * back they are revisited.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { perTest } from '../helpers/per-test.js';
import { runClock, trafficAccount } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const INTERVAL = 2 * MINUTE;

const started = perTest();

interface Saved {
  cursors: Record<string, string>;
  revisit?: { accounts: Record<string, { windows: unknown[] }> };
}

/** Real-time wait (bounded, generously: file I/O on a loaded machine) until the state file shows what `ok` wants. */
async function stateWhere(path: string, ok: (s: Saved) => boolean): Promise<Saved> {
  let saved: Saved = { cursors: {} };
  const until = Date.now() + 20_000;
  for (let i = 0; i < 100_000 && Date.now() < until; i++) {
    try {
      saved = JSON.parse(readFileSync(path, 'utf8')) as Saved;
      if (ok(saved)) return saved;
    } catch {
      // not written yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return saved;
}

describe('metrics.revisit with account discovery', () => {
  it('keeps the pending revisits of an account discovery stops, and reads them when it is back', async () => {
    const dir = started.folder('cdn-revisit-disc-');
    const stateFile = join(dir, 'state.json');
    const clock = new FakeClock(T0);
    const stack = await started.stack({
      clock,
      sim: { accounts: [...demoWorld(), trafficAccount('prod-a')] },
      config: {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
        metrics: { lookback: '30m', delay: '0m', window: '5m', revisit: '10m' },
        accounts_discovery: { enabled: true, interval: '2m', include: 'prod-.*|demo' },
        accounts: [],
        state_file: stateFile,
      },
    });
    await runClock(clock, 10_000, [stack]);
    const pending = (s: Saved, name: string) => s.revisit?.accounts[name]?.windows.length ?? 0;
    // The state file holds what a scrape showed (the cursors and the windows they cover): scrape first.
    await stack.exporter.store.refresh();
    let scrape = await stack.scrape();
    let saved = await stateWhere(stateFile, (s) => pending(s, 'prod-a') > 0 && pending(s, 'demo') > 0);
    expect(pending(saved, 'prod-a')).toBeGreaterThan(0);
    expect(pending(saved, 'demo')).toBeGreaterThan(0);
    expect(scrape.value('cdn_metrics_revisions_total', { account: 'prod-a', direction: 'none' })).toBe(0);

    stack.sim.setAccountStatus('prod-a', 'inactive');
    await runClock(clock, INTERVAL, [stack]);
    // Stopped: the state file still holds its windows awaiting a revisit, up to its cursor.
    await stack.exporter.store.refresh();
    await stack.scrape();
    saved = await stateWhere(stateFile, (s) => pending(s, 'prod-a') > 0 && !!s.cursors['prod-a']);
    expect(pending(saved, 'prod-a')).toBeGreaterThan(0);
    expect(pending(saved, 'demo')).toBeGreaterThan(0);
    const kept = Date.parse(saved.cursors['prod-a']!);
    await stack.exporter.store.refresh();
    scrape = await stack.scrape();
    expect(scrape.all('cdn_metrics_revisions_total').filter((x) => x.labels.account === 'prod-a')).toEqual(
      [],
    );
    expect(
      scrape.all('cdn_metrics_revisit_edge_requests_total').filter((x) => x.labels.account === 'prod-a'),
    ).toEqual([]);

    // Back: the windows it kept are revisited (they end at or before its cursor), and its counters continue.
    const mark = stack.sim.requestLog.length;
    stack.sim.setAccountStatus('prod-a', 'active');
    await runClock(clock, INTERVAL + 10 * MINUTE, [stack]);
    const again = stack.sim.requestLog
      .slice(mark)
      .filter((e) => e.api === 'metrics' && e.status === 200 && e.query.account?.[0] === 'prod-a')
      .map((e) => Date.parse(`${e.query.end![0]}Z`));
    expect(again.some((end) => end <= kept)).toBe(true);
    await stack.exporter.store.refresh();
    scrape = await stack.scrape();
    expect(
      scrape.value('cdn_metrics_revisions_total', { account: 'prod-a', direction: 'none' }),
    ).toBeGreaterThan(0);
  }, 120_000);
});
