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
