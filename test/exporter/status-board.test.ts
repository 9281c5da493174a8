import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { StatusBoard } from '../../src/exporter/status-board.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T0 = Date.UTC(2026, 2, 3);

function board() {
  const registry = new Registry();
  const self = createSelfMetrics(registry, {
    version: 'test',
    apis: ['metrics', 'dvr-net', 'recorder-cloud'],
    defaultMetrics: false,
  });
  return { board: new StatusBoard(self, new FakeClock(T0), 'test'), registry };
}

describe('StatusBoard: accounts discovery starts and stops', () => {
  it('marks discovered rows, names a login cause only while down, and forgets a stopped account', async () => {
    const { board: b, registry } = board();
    let loginState: string | undefined = 'login refused';
    for (const account of ['listed', 'found']) {
      b.expect('metrics', account);
      b.expect('recorder-cloud', account);
    }
    b.note('found', { discovered: true, downCause: () => loginState });
    b.markStarted();
    b.round('recorder-cloud', 'found', false, 'auth: login refused for user "u"');
    b.round('recorder-cloud', 'listed', true, undefined);

    const rows = b.status().accounts;
    const found = rows.filter((r) => r.name === 'found');
    expect(found.map((r) => [r.api, r.discovered, r.cause])).toEqual([
      ['metrics', true, 'login refused'],
      ['recorder-cloud', true, 'login refused'],
    ]);
    expect(rows.filter((r) => r.name === 'listed').map((r) => [r.discovered, r.cause])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
    b.round('recorder-cloud', 'found', true, undefined);
    expect(b.status().accounts.find((r) => r.name === 'found' && r.api === 'recorder-cloud')?.cause).toBe(
      undefined,
    );
    loginState = undefined;
    expect(b.status().accounts.find((r) => r.name === 'found' && r.api === 'metrics')?.cause).toBe(undefined);

    expect(await registry.getSingleMetricAsString('cdn_up')).toContain('account="found"');
    b.removeAccount('found');
    expect(b.status().accounts.map((r) => r.name)).toEqual(['listed', 'listed']);
    expect(await registry.getSingleMetricAsString('cdn_up')).not.toContain('account="found"');
    expect(await registry.getSingleMetricAsString('cdn_up')).toContain('account="listed"');
  });
});

describe('StatusBoard: the problem tables of the API table', () => {
  it("lists each module's problems from every account's last round, and drops them with the account", () => {
    const { board: b } = board();
    const host = (account: string, h: string, alive: boolean, coverage: number) => ({
      account,
      stream: 'live/main',
      host: h,
      alive,
      enabled: true,
      coverage,
      largestGap: 0,
    });
    b.rows('dvr-net', 'acme', {
      health: [host('acme', 'h1', false, 1), host('acme', 'h2', true, 0.5), host('acme', 'h3', true, 0.95)],
      failed: new Map([['news/hd', { error: 'http 404', unknown: true }]]),
    });
    b.rows('dvr-net', 'beta', {
      health: [],
      failed: new Map([['tv/one', { error: 'timeout', unknown: false }]]),
    });
    b.rows('recorder-cloud', 'acme', [
      { account: 'acme', id: 'r1', status: 'error', sourcePath: '/live', resourceId: '7' },
      { account: 'acme', id: 'r2', status: 'progress' },
    ]);

    const { problems } = b.status();
    expect(problems.dvr).toEqual([
      { account: 'acme', stream: 'news/hd', problem: 'unknown stream (http 404)' },
      { account: 'beta', stream: 'tv/one', problem: 'poll failed: timeout' },
      { account: 'acme', stream: 'live/main', host: 'h1', problem: 'not alive' },
      { account: 'acme', stream: 'live/main', host: 'h2', problem: 'coverage 50%' },
    ]);
    expect(problems.recordings).toEqual([
      {
        account: 'acme',
        id: 'r1',
        sourcePath: '/live',
        sourceDomain: undefined,
        resourceId: '7',
        status: 'error',
        problem: 'recording in error',
      },
    ]);

    b.removeAccount('acme');
    expect(b.status().problems).toEqual({
      dvr: [{ account: 'beta', stream: 'tv/one', problem: 'poll failed: timeout' }],
      recordings: [],
    });
  });
});
