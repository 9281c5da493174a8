/**
 * Counters restored from the state file are series like any other: they continue when their resource comes back,
 * and a resource that vanished while the exporter was down loses them after `metrics.counter_retention`, as one
 * that vanishes while it runs does (docs/metrics.md). Restored, they used to be made outside the mapping's record,
 * so nothing ever removed them.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { perTest } from '../helpers/per-test.js';
import { runClock, scrapeNow } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);

const started = perTest();

function account(ids: readonly string[]): SimAccount {
  return {
    name: 'demo',
    token: 'demo-token',
    resources: ids.map((id) => ({ id, name: `r${id}`, cname: `r${id}.demo.example` })),
    streams: [],
    recordings: [],
  };
}

describe('counters restored from the state file', () => {
  it('continue for a resource that comes back; one gone while the exporter was down goes after counter_retention', async () => {
    const dir = started.folder('cdn-restored-');
    const clock = new FakeClock(T0);
    const config = {
      state_file: join(dir, 'state.json'),
      metrics: { lookback: '30m', delay: '0m', window: '5m', counter_retention: '1h' },
    };
    const before = await started.simulator({ seed: 5, clock, accounts: [account(['100', '200'])] });
    const one = await started.stack({ clock, simulator: before, config });
    await runClock(clock, 10_000, [one]);
    const first = await scrapeNow(one);
    const stays = first.value('cdn_edge_requests_total', { account: 'demo', resource: '100' })!;
    const gone = first.value('cdn_edge_requests_total', { account: 'demo', resource: '200' })!;
    expect(stays).toBeGreaterThan(0);
    expect(gone).toBeGreaterThan(0);
    await one.stop();

    // Resource 200 is deleted while no exporter runs: the next one finds it only in the state file.
    const after = await started.simulator({ seed: 5, clock, accounts: [account(['100'])] });
    const two = await started.stack({ clock, simulator: after, config });
    await runClock(clock, 10_000, [two]);
    let sc = await scrapeNow(two);
    // Restored at their values: no drop a scraper would read as a reset.
    expect(sc.value('cdn_edge_requests_total', { account: 'demo', resource: '100' })).toBe(stays);
    expect(sc.value('cdn_edge_requests_total', { account: 'demo', resource: '200' })).toBe(gone);

    await runClock(clock, 70 * MINUTE, [two], 60_000);
    sc = await scrapeNow(two);
    expect(sc.value('cdn_edge_requests_total', { account: 'demo', resource: '100' })).toBeGreaterThan(stays);
    const left = sc.samples.filter((x) => x.labels.resource === '200' && x.name.startsWith('cdn_'));
    expect(left.map((x) => x.name)).toEqual([]);
  }, 120_000);
});
