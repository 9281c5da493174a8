/**
 * The landing page's account rows and settings line as an SRE on call reads them, end to end against the
 * simulator (FakeClock shared by simulator and exporter): which shard this is and with what settings, a missing
 * token file named as a configuration problem, the last error with its time and count, and the self-refresh.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { configDuration, DOC_LINKS, REFRESH_SECONDS } from '../../src/server/landing.js';
import { accountsForShard } from '../../src/sharding.js';
import { startSimulator } from '../../src/simulator/server.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { pageText, tableRows } from '../helpers/landing-html.js';
import { e2eWorld, type RoundKey, RoundStepper } from '../helpers/poll-rounds.js';
import { type Stack, startStack } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function page(stack: Stack, query = ''): Promise<string> {
  const res = await fetch(`${stack.url}/${query}`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('landing page: settings line', () => {
  it('says which shard this is, how many accounts it polls, the API host without credentials, and the timings', async () => {
    const clock = new FakeClock(T0);
    const names = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'];
    const owned = accountsForShard(
      names.map((name) => ({ name })),
      1,
      3,
    ).length;
    const sim = await startSimulator({ seed: 7, clock });
    cleanups.push(() => sim.close());
    // Configured as a replica of a sharded release would be, with credentials in base_url.
    const withCreds = sim.url.replace('http://', 'http://monitor:hunter2-secret@');
    const replica = await startStack({
      clock,
      simulator: sim,
      config: {
        api: { base_url: withCreds, requests_per_second: 7 },
        metrics: { window: '5m', delay: '3m', lookback: '2h' },
        sharding: { shard: 1, shards: 3 },
        accounts: names.map((name) => ({ name })),
      },
    });
    cleanups.push(() => replica.stop());
    const html = await page(replica);
    const line = pageText(
      html.slice(
        html.indexOf('<p class="settings"'),
        html.indexOf('</p>', html.indexOf('<p class="settings"')),
      ),
    );
    const host = new URL(sim.url).host;
    expect(line).toBe(
      `shard 2 of 3 (SHARD=1, SHARDS=3) polls ${owned} of 8 accounts · API ${host} · ` +
        'window 5m, delay 3m, lookback 2h · 7 requests/s, concurrency 4',
    );
    expect(html).not.toContain('hunter2');
    expect(html).not.toContain('monitor:');
  });
});

describe('landing page: account rows', () => {
  it('a missing token file is a configuration problem on every API of the account, never "network:"', async () => {
    const clock = new FakeClock(T0);
    const stack = await startStack({
      clock,
      sim: { accounts: e2eWorld() },
      config: {
        metrics: { lookback: '10m', delay: '0m' },
        accounts: [
          { name: 'demo', dvr_streams: ['live/main'] },
          { name: 'acme', token_file: '/nonexistent/cdn-exporter/acme-token', dvr_streams: ['tv/channel1'] },
        ],
      },
    });
    cleanups.push(() => stack.stop());
    const steps = new RoundStepper(stack, clock);
    const keys: RoundKey[] = [
      ['metrics', 'acme'],
      ['dvr-net', 'acme'],
      ['dvr-net', 'demo'],
    ];
    const scrape = await steps.settled(keys);
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'acme' })).toBe(0);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'acme' })).toBe(0);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    // No request left: nothing was counted as an API request or error for acme's missing token.
    const rows = tableRows(await page(stack), 'accounts').filter((r) => r[0] === 'acme');
    expect(rows.map((r) => r[1])).toEqual(['metrics', 'dvr-net']);
    for (const r of rows) {
      expect(r[2], r[1]).toBe('down');
      const error = r[7]!;
      expect(error, r[1]).toContain(
        'configuration: token file /nonexistent/cdn-exporter/acme-token: does not exist',
      );
      expect(error, r[1]).not.toMatch(/network/);
    }
  });

  it('shows the window in use, and the last error with its time and how many times since the last success', async () => {
    const clock = new FakeClock(T0);
    const stack = await startStack({
      clock,
      sim: { accounts: e2eWorld() },
      config: { metrics: { lookback: '10m', delay: '0m', window: '5m' }, accounts: [{ name: 'demo' }] },
    });
    cleanups.push(() => stack.stop());
    const steps = new RoundStepper(stack, clock);
    const keys: RoundKey[] = [['metrics', 'demo']];
    await steps.settled(keys);
    // The first start catches up the lookback in one 10-minute window...
    let row = tableRows(await page(stack), 'accounts').find((r) => r[1] === 'metrics')!;
    expect(row[2]).toBe('up');
    expect(row[5]).toBe('10m');
    // ...then walks the steady 5-minute window: that is what the Window column shows, not the 10m allowed.
    await steps.step(5 * 60_000, keys);
    row = tableRows(await page(stack), 'accounts').find((r) => r[1] === 'metrics')!;
    expect(row[5]).toBe('5m');

    // Every request fails with 500 from now on: the row is down, the error has a time and a count.
    stack.sim.setFaults({ '500': 1 });
    const errors = () => stack.exporter.status().accounts[0]!.errorsSinceSuccess ?? 0;
    await clock.advance(5 * 60_000);
    for (let i = 0; i < 100 && errors() < 3; i++) await clock.advance(1000);
    const status = stack.exporter.status().accounts[0]!;
    expect(status.errorsSinceSuccess).toBeGreaterThanOrEqual(3);
    row = tableRows(await page(stack), 'accounts').find((r) => r[1] === 'metrics')!;
    expect(row[2]).toBe('down');
    const stamp = status.lastErrorAt!.toISOString().replace(/\.\d{3}Z$/, 'Z');
    expect(row[7]).toContain(stamp);
    expect(row[7]).toContain(`${status.errorsSinceSuccess}× since the last success`);
    expect(row[7]).toMatch(/\n500: /);
  });
});

describe('landing page: refresh and links', () => {
  it('reloads itself until ?refresh=off, which a link on the page sets and undoes', async () => {
    const stack = await startStack({ clock: new FakeClock(T0) });
    cleanups.push(() => stack.stop());
    const on = await page(stack);
    expect(on).toContain(`<meta http-equiv="refresh" content="${REFRESH_SECONDS}">`);
    expect(on).toContain('<a href="?refresh=off">stop reloading</a>');
    const off = await page(stack, '?refresh=off');
    expect(off).not.toContain('http-equiv="refresh"');
    expect(off).toContain('Reloading is off');
    expect(off).toContain('<a href="?">');
    // The runbook and the dashboards section of the docs (test/docs/links.test.ts checks where they lead).
    expect(on).toContain(`href="${DOC_LINKS.runbook}"`);
    expect(on).toContain(`href="${DOC_LINKS.dashboards}"`);
  });
});

describe('configDuration', () => {
  it('writes durations as the configuration does', () => {
    expect(configDuration(300_000)).toBe('5m');
    expect(configDuration(3_600_000)).toBe('1h');
    expect(configDuration(5_400_000)).toBe('1h30m');
    expect(configDuration(90_000)).toBe('1m30s');
    expect(configDuration(0)).toBe('0s');
    expect(configDuration(-1)).toBe('-');
  });
});
