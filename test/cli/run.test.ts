/**
 * `cdn-exporter` (run) as a process against a simulator started in the test: the environment quick start serves
 * cdn_ metrics; SIGTERM and SIGINT stop it with exit 0 (bounded: without waiting for a request hanging for a
 * minute) and leave the cursor in the state file; the token never appears in its log, its pages or its metrics.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import {
  type CliProcess,
  cliTestFolder,
  EXIT_WAIT_MS,
  exitWithin,
  servingUrl,
  startCli,
} from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { savedCursor } from '../helpers/ground-truth.js';
import { waitFor } from '../helpers/stack.js';

const TOKEN = 'demo-token';

const dir = cliTestFolder('cli-run-');
let sim: Simulator;
beforeAll(async () => {
  // A `slow` answer (set per test) takes a minute: longer than any shutdown may.
  sim = await startSimulator({ seed: 5, slowMs: 60_000 }, { host: '127.0.0.1', port: 0 });
});
afterAll(() => sim.close());
afterEach(() => sim.setFaults({}));

/** Waits until the metrics API has been polled successfully and returns the cursor (ms) then. */
async function waitForCursor(base: string, account: string): Promise<number> {
  let cursor = 0;
  await waitFor(
    async () => {
      const s = await Scrape.from(base);
      cursor = (s.value('cdn_metrics_window_end_timestamp_seconds', { account }) ?? 0) * 1000;
      return s.value('cdn_up', { api: 'metrics', account }) === 1 && cursor > 0;
    },
    15_000,
    `${account}'s first counted window`,
  );
  return cursor;
}

function stateConfig(name: string, account = '  - name: demo', extra = ''): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'api:',
      `  base_url: ${sim.url}`,
      `  token: ${TOKEN}`,
      '  requests_per_second: 20',
      'metrics:',
      '  window: 5m',
      '  delay: 1m',
      '  lookback: 30m',
      'accounts:',
      account,
      `state_file: ${join(dir, `${name}.state.json`)}`,
      extra,
    ].join('\n'),
  );
  return path;
}

function expectNoToken(p: CliProcess): void {
  expect(p.stderr()).not.toContain(TOKEN);
  expect(p.stdout()).not.toContain(TOKEN);
}

describe('run', () => {
  it('the environment quick start serves cdn_ metrics of the account, and never shows the token', async () => {
    const p = startCli(['--web.listen-address', '127.0.0.1:0', '--log.level', 'debug'], {
      CDN_API_URL: sim.url,
      CDN_API_TOKEN: TOKEN,
      CDN_ACCOUNTS: 'demo',
    });
    const base = await servingUrl(p);
    await waitForCursor(base, 'demo');
    const s = await Scrape.from(base);
    const resources = sim.accounts.find((a) => a.name === 'demo')!.resources;
    expect(s.all('cdn_resource_info', { account: 'demo' }).map((x) => x.labels.resource)).toEqual(
      expect.arrayContaining(resources.map((r) => r.id)),
    );
    expect(
      s.value('cdn_edge_requests_total', { account: 'demo', resource: resources[0]!.id }),
    ).toBeGreaterThan(0);
    expect(s.value('cdn_exporter_build_info')).toBe(1);
    // The process defaults are on outside tests.
    expect(s.all('process_cpu_seconds_total').length).toBe(1);
    for (const page of ['/metrics', '/', '/readyz', '/healthz'])
      expect(await (await fetch(`${base}${page}`)).text(), page).not.toContain(TOKEN);
    p.child.kill('SIGTERM');
    expect(await exitWithin(p, EXIT_WAIT_MS)).toEqual({ code: 0, signal: null });
    expectNoToken(p);
  });

  it('a refused token is logged as refused, never as itself', async () => {
    const wrong = 'wrong-Token-0c9d2e';
    const p = startCli(['--web.listen-address', '127.0.0.1:0', '--log.level', 'debug'], {
      CDN_API_URL: sim.url,
      CDN_API_TOKEN: wrong,
      CDN_ACCOUNTS: 'demo',
    });
    const base = await servingUrl(p);
    await p.textLine(/refuses the token/);
    expect((await Scrape.from(base)).value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(0);
    expect(await (await fetch(`${base}/`)).text()).not.toContain(wrong);
    expect(await (await fetch(`${base}/readyz`)).text()).not.toContain(wrong);
    p.child.kill('SIGTERM');
    expect(await exitWithin(p, EXIT_WAIT_MS)).toEqual({ code: 0, signal: null });
    expect(p.stderr()).not.toContain(wrong);
  });
});

describe('shutdown', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s exits 0 and the state file then holds the cursor',
    async (signal) => {
      const config = stateConfig(`${signal}.yml`);
      const p = startCli(['--config', config, '--web.listen-address', '127.0.0.1:0']);
      const base = await servingUrl(p);
      const cursor = await waitForCursor(base, 'demo');
      const sent = Date.now();
      p.child.kill(signal);
      const exit = await exitWithin(p, EXIT_WAIT_MS);
      expect(exit, `still running ${EXIT_WAIT_MS} ms after ${signal}`).toEqual({
        code: 0,
        signal: null,
      });
      // The saved cursor is the one served, or a later window end if one was counted in between; never ahead of
      // what the API could have answered (now - delay).
      const saved = savedCursor(`${config}.state.json`, 'demo')!;
      expect(saved).toBeGreaterThanOrEqual(cursor);
      expect(saved).toBeLessThanOrEqual(sent - 60_000);
      expect(saved % 60_000).toBe(0);
      expect(p.stderr()).toContain(`"signal":"${signal}"`);
      expectNoToken(p);
    },
    60_000,
  );

  it('SIGTERM with a request hanging in flight (for a minute) still exits 0, cursor saved', async () => {
    const config = stateConfig(
      'hanging.yml',
      '  - {name: demo, dvr_streams: [live/main]}',
      'dvr:\n  interval: 1s\n',
    );
    const p = startCli(['--config', config, '--web.listen-address', '127.0.0.1:0', '--log.format', 'logfmt']);
    // logfmt: address=127.0.0.1:PORT
    const line = await p.textLine(/msg="serving \/metrics/);
    const base = `http://${/address=(\S+)/.exec(line)![1]}`;
    const cursor = await waitForCursor(base, 'demo');
    // From now on every request hangs for a minute (a stuck upstream); wait until one is in flight.
    sim.setFaults({ slow: 1 });
    const before = sim.requestLog.length;
    await waitFor(
      () => sim.requestLog.slice(before).some((e) => e.fault === 'slow'),
      10_000,
      'a request to hang',
    );
    p.child.kill('SIGTERM');
    const exit = await exitWithin(p, EXIT_WAIT_MS);
    expect(exit, `still running ${EXIT_WAIT_MS} ms after SIGTERM`).toEqual({ code: 0, signal: null });
    expect(savedCursor(`${config}.state.json`, 'demo')).toBeGreaterThanOrEqual(cursor);
    expectNoToken(p);
  }, 60_000);
});
