/**
 * The settled writer's own metric (src/settled/metrics.ts), as docs/metrics.md ("Remote write") lists it:
 * `cdn_exporter_remote_write_reads_total{account}`, a counter of the windows the writer read from the API itself,
 * on the exporter's registry and never prom-client's global one, its account's series removed with the account.
 */
import { register as globalRegistry, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createSettledMetrics } from '../../src/settled/metrics.js';

const NAME = 'cdn_exporter_remote_write_reads_total';

async function reads(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await registry.getSingleMetric(NAME)!.get()).values)
    out[String(v.labels.account)] = v.value;
  return out;
}

describe('settled writer metrics', () => {
  it('declare the documented counter with the one label account, on the registry given only', async () => {
    const registry = new Registry();
    const globalBefore = globalRegistry.getMetricsAsArray().map((m) => m.name);
    createSettledMetrics(registry);
    const json = await registry.getMetricsAsJSON();
    expect(json.map((m) => [m.name, m.type])).toEqual([[NAME, 'counter']]);
    // What docs/metrics.md says of it: the writer's own reads, why they happen, and what each costs.
    const help = json[0]!.help;
    for (const words of ['read from the API itself', 'after a restart', 'queue was full', 'one request'])
      expect(help).toContain(words);
    expect(globalRegistry.getMetricsAsArray().map((m) => m.name)).toEqual(globalBefore);
    expect(globalRegistry.getSingleMetric(NAME)).toBeUndefined();
  });

  it('counts each read per account, has no series for an account never read, and forgets an account', async () => {
    const registry = new Registry();
    const m = createSettledMetrics(registry);
    expect(await reads(registry)).toEqual({});
    m.readOwn('acme');
    m.readOwn('acme');
    m.readOwn('globex');
    expect(await reads(registry)).toEqual({ acme: 2, globex: 1 });
    const text = await registry.metrics();
    expect(text).toContain(`${NAME}{account="acme"} 2`);
    m.forget('acme');
    expect(await reads(registry)).toEqual({ globex: 1 });
    // Back again: it starts from its first read, as a new series.
    m.readOwn('acme');
    expect(await reads(registry)).toEqual({ acme: 1, globex: 1 });
  });
});
