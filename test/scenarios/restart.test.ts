/**
 * `state_file`: a restart resumes walking at the saved cursor. Two exporters in a row against one simulator must
 * count every minute exactly once between them, and the second must not ask again for what the first counted.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { Exporter } from '../../src/exporter/exporter.js';
import { silentLogger } from '../../src/log.js';
import {
  answeredWindows,
  cursorOf,
  expectExact,
  expectTiles,
  metricsRequests,
  type Range,
  type Reader,
  savedCursor,
} from '../helpers/ground-truth.js';
import { perTest } from '../helpers/per-test.js';
import { configFrom, waitFor } from '../helpers/stack.js';

const started = perTest();

/** Windows answered 200 more than once. */
function askedTwice(windows: readonly Range[]): Range[] {
  const seen = new Set<string>();
  const twice: Range[] = [];
  for (const w of windows) {
    const key = `${w[0]}-${w[1]}`;
    if (seen.has(key)) twice.push(w);
    seen.add(key);
  }
  return twice;
}

describe('state_file', () => {
  it('resumes at the saved cursor: two runs add up to the exact truth, nothing counted twice', async () => {
    const sim = await started.simulator({ seed: 11, slowMs: 300 });
    const dir = started.folder('cdn-restart-');
    const stateFile = join(dir, 'state', 'cursors.json');
    const config = {
      state_file: stateFile,
      // A low rate: 36 windows of catch-up take about 12 s, so the first run stops in the middle even when a busy
      // machine is slow to see that the first hour is counted.
      api: { requests_per_second: 3, concurrency: 2 },
      metrics: { lookback: '6h', delay: '0m', window: '5m' },
    };
    const first0 = floorMinute(Date.now() - 6 * 60 * MINUTE);
    const one = await started.stack({ simulator: sim, config });
    await waitFor(
      async () => cursorOf(await one.scrape(), 'demo') >= first0 + 60 * MINUTE,
      60_000,
      'an hour',
    );
    // A grace long enough for a busy machine: every window in flight is answered and counted before the stop.
    await one.stopExporter(30_000);
    // The /metrics text is rebuilt a turn after a change: what the stop counted last is in it once refreshed.
    await one.exporter.store.refresh();
    const scrape1 = await one.scrape();
    const cursor1 = cursorOf(scrape1, 'demo');
    await one.stop();

    // The state file holds the cursor /metrics showed when the first run stopped, in the middle of catch-up.
    expect(JSON.parse(readFileSync(stateFile, 'utf8')).version).toBe(1);
    expect(savedCursor(stateFile, 'demo')).toBe(cursor1);
    expect(cursor1).toBeLessThan(floorMinute(Date.now()) - 60 * MINUTE);
    const run1 = metricsRequests(sim, 'demo');
    const first = Math.min(...run1.map((e) => e.window[0]));
    expect(first - first0).toBeLessThanOrEqual(MINUTE);
    const counted1 = answeredWindows(sim, 'demo', cursor1);
    expectTiles(counted1, first, cursor1, 'first run');
    expect(scrape1.value('cdn_metrics_windows_total', { account: 'demo' })).toBe(counted1.length);

    const mark = sim.requestLog.length;
    const two = await started.stack({ simulator: sim, config });
    await waitFor(
      async () => cursorOf(await two.scrape(), 'demo') >= floorMinute(Date.now()) - 6 * MINUTE,
      60_000,
      'the second run caught up',
    );
    const scrape2 = await two.scrape();
    const cursor2 = cursorOf(scrape2, 'demo');
    await two.stopExporter();
    await two.exporter.store.refresh();
    expect(savedCursor(stateFile, 'demo')).toBe(cursorOf(await two.scrape(), 'demo'));

    // The second run began at the saved cursor, not at now - lookback. Its first windows go out side by side
    // (api.concurrency), so the simulator may log the second before the first: the earliest is what counts.
    const run2 = sim.requestLog
      .slice(mark)
      .filter((e) => e.api === 'metrics')
      .map((e) => Date.parse(`${e.query.start![0]}Z`));
    expect(Math.min(...run2)).toBe(cursor1);

    // The second run's counters continue the first's (the state file holds their values at its cursor): alone,
    // they are the exact truth from the first start to the second cursor, and none went down.
    const second: Reader = (name, labels) => scrape2.value(name, labels);
    expect(expectExact(sim, second, 'demo', [[first, cursor2]])).toBeGreaterThan(100);
    for (const s of scrape1.samples.filter((x) => x.name.endsWith('_total')))
      expect(scrape2.value(s.name, s.labels), `${s.name} went down`).toBeGreaterThanOrEqual(s.value);
    const windows1 = scrape1.value('cdn_metrics_windows_total', { account: 'demo' })!;
    const windows2 = scrape2.value('cdn_metrics_windows_total', { account: 'demo' })!;
    const counted = answeredWindows(sim, 'demo', cursor2);
    // No window the first run counted is asked again: a stop counts the windows in flight that finish within its
    // grace period, so the second run starts after every minute the first was answered in order. (One answered
    // after a window before it failed at the stop, a reset socket on a busy machine, is not counted and is asked
    // again: the cursor stays before the window that did not finish.)
    expect(askedTwice(answeredWindows(sim, 'demo', cursor1))).toEqual([]);
    expectTiles(counted, first, cursor2, 'both runs');
    expect(counted.filter(([s]) => s < cursor1)).toEqual(counted1);
    expect(windows1).toBe(counted1.length);
    expect(windows2).toBe(counted.length);
  }, 180_000);

  it('refuses to start on a state file it cannot read, naming the file', async () => {
    const dir = started.folder('cdn-restart-');
    const stateFile = join(dir, 'state.json');
    writeFileSync(stateFile, '{"version": 1, "cursors": {"demo": ');
    const exporter = new Exporter({
      config: configFrom({
        api: { base_url: 'http://127.0.0.1:9', token: 'demo-token' },
        accounts: [{ name: 'demo' }],
        state_file: stateFile,
      }),
      log: silentLogger,
      version: '0.0.0-test',
      defaultMetrics: false,
    });
    try {
      await expect(exporter.start()).rejects.toThrow(`state_file ${stateFile}: not valid JSON`);
      // The file is left as it was, for the operator to look at (the CLI exits here).
      expect(readFileSync(stateFile, 'utf8')).toBe('{"version": 1, "cursors": {"demo": ');
    } finally {
      await exporter.stop(100);
    }
  });
});

describe('state_file with cursors that cannot be trusted', () => {
  it('walks from the catch-up limit, not from 1990, and from lookback, not 2099; says so on the page and keeps the file', async () => {
    const sim = await started.simulator({ seed: 11, slowMs: 300 });
    const dir = started.folder('cdn-restart-');
    const stateFile = join(dir, 'state.json');
    const text = JSON.stringify({
      version: 1,
      cursors: { demo: '1990-01-01T00:00:00.000Z', acme: '2099-01-01T00:00:00.000Z' },
    });
    writeFileSync(stateFile, text);
    const now = Date.now();
    const stack = await started.stack({
      simulator: sim,
      config: {
        state_file: stateFile,
        metrics: { delay: '0m', window: '5m', lookback: '30m', max_catch_up: '1h' },
        accounts: [{ name: 'demo' }, { name: 'acme', token: 'acme-token' }],
      },
    });
    const limit = floorMinute(now - 60 * MINUTE);
    // Each account's first window counted (they are counted in order): the first asked for is in the log. demo
    // shows its cursor from the start (the catch-up limit, or the minute after: the one it resumed at); it has
    // counted a window once the cursor is past that.
    await waitFor(
      async () => {
        const s = await stack.scrape();
        return cursorOf(s, 'demo') > limit + MINUTE && cursorOf(s, 'acme') > 0;
      },
      10_000,
      'both accounts walking',
    );
    const firstStart = (account: string) =>
      Math.min(...metricsRequests(sim, account).map((e) => Date.parse(`${e.query.start![0]}Z`)));
    // demo: moved up to now - max_catch_up (the start may fall in the next minute while the test runs).
    expect(firstStart('demo')).toBeGreaterThanOrEqual(limit);
    expect(firstStart('demo')).toBeLessThanOrEqual(limit + MINUTE);
    // acme: the future cursor is ignored; it starts from now - lookback.
    expect(firstStart('acme')).toBeGreaterThanOrEqual(floorMinute(now - 30 * MINUTE));
    expect(firstStart('acme')).toBeLessThanOrEqual(floorMinute(now - 30 * MINUTE) + MINUTE);

    const scrape = await stack.scrape();
    const skipped = scrape.value('cdn_metrics_skipped_seconds_total', {
      account: 'demo',
      reason: 'catch_up_limit',
    });
    expect(skipped).toBe((firstStart('demo') - Date.UTC(1990, 0, 1)) / 1000);
    // The span is listed beside the state file for `backfill --gaps` (docs/backfill.md), and only it.
    const gapsFile = join(dir, 'state.gaps.json');
    const listed = () => {
      try {
        return (JSON.parse(readFileSync(gapsFile, 'utf8')) as { spans: Record<string, string>[] }).spans;
      } catch {
        return [];
      }
    };
    await waitFor(() => listed().length > 0, 10_000, 'the gaps file');
    expect(listed()).toEqual([
      {
        account: 'demo',
        start: '1990-01-01T00:00:00.000Z',
        end: new Date(firstStart('demo')).toISOString(),
        reason: 'catch_up_limit',
      },
    ]);
    const page = await (await fetch(`${stack.url}/`)).text();
    expect(page).toContain('Problems found at start');
    expect(page).toContain('cursor of account &#34;acme&#34; is in the future (2099-01-01T00:00Z');
    expect(page).toContain(
      'cursor of account &#34;demo&#34; (1990-01-01T00:00Z) is older than metrics.max_catch_up',
    );
    const kept = readdirSync(dir).filter((f) => f.startsWith('state.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(dir, kept[0]!), 'utf8')).toBe(text);
  }, 30_000);
});
