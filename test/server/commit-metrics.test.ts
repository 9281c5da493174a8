/**
 * The contract's commit per account as gauges (src/server/commit-metrics.ts; docs/metrics.md "Cost"):
 * `cdn_commit_transfer_bytes{account}` and `cdn_commit_bandwidth_bits_per_second{account}`, on the registry given
 * and never prom-client's global one. An account without a commit of a kind has no series of
 * it (never a 0), and an exporter without any commit exposes neither family.
 */
import { register as globalRegistry, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CommitMetrics } from '../../src/server/commit-metrics.js';

const TRANSFER = 'cdn_commit_transfer_bytes';
const BANDWIDTH = 'cdn_commit_bandwidth_bits_per_second';

async function values(registry: Registry, name: string): Promise<Record<string, number> | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) out[String(v.labels.account)] = v.value;
  return out;
}

describe('CommitMetrics', () => {
  it('registers nothing until an account has a commit, and nothing in the global registry ever', async () => {
    const registry = new Registry();
    const globalBefore = globalRegistry.getMetricsAsArray().length;
    const commits = new CommitMetrics(registry);
    commits.set('acme', undefined);
    commits.set('acme', {});
    commits.remove('acme');
    expect(registry.getMetricsAsArray()).toEqual([]);
    commits.set('acme', { monthlyTransferBytes: 50e12 });
    expect(await values(registry, TRANSFER)).toEqual({ acme: 50e12 });
    // The kind nobody has stays unregistered.
    expect(registry.getSingleMetric(BANDWIDTH)).toBeUndefined();
    expect(globalRegistry.getMetricsAsArray().length).toBe(globalBefore);
  });

  it('has the contract names, type gauge, the one label account, and help naming the setting', async () => {
    const registry = new Registry();
    new CommitMetrics(registry).set('acme', { monthlyTransferBytes: 1e12, bandwidthP95BitsPerSecond: 2e9 });
    const json = await registry.getMetricsAsJSON();
    expect(json.map((m) => [m.name, m.type]).sort()).toEqual([
      [BANDWIDTH, 'gauge'],
      [TRANSFER, 'gauge'],
    ]);
    for (const m of json) expect(m.values.map((v) => Object.keys(v.labels))).toEqual([['account']]);
    expect(json.find((m) => m.name === TRANSFER)!.help).toContain('commit.monthly_transfer');
    expect(json.find((m) => m.name === BANDWIDTH)!.help).toContain('commit.bandwidth_p95');
  });

  it('keeps each account its own values; a kind dropped from a commit loses its series, not set to 0', async () => {
    const registry = new Registry();
    const commits = new CommitMetrics(registry);
    commits.set('acme', { monthlyTransferBytes: 50e12, bandwidthP95BitsPerSecond: 2e9 });
    commits.set('globex', { bandwidthP95BitsPerSecond: 5e8 });
    expect(await values(registry, TRANSFER)).toEqual({ acme: 50e12 });
    expect(await values(registry, BANDWIDTH)).toEqual({ acme: 2e9, globex: 5e8 });

    // A reload without acme's bandwidth commit: its series goes, globex's stays.
    commits.set('acme', { monthlyTransferBytes: 60e12 });
    expect(await values(registry, TRANSFER)).toEqual({ acme: 60e12 });
    expect(await values(registry, BANDWIDTH)).toEqual({ globex: 5e8 });
  });

  it('removes an account that is no longer polled from both families', async () => {
    const registry = new Registry();
    const commits = new CommitMetrics(registry);
    commits.set('acme', { monthlyTransferBytes: 1, bandwidthP95BitsPerSecond: 2 });
    commits.set('globex', { monthlyTransferBytes: 3, bandwidthP95BitsPerSecond: 4 });
    commits.remove('acme');
    expect(await values(registry, TRANSFER)).toEqual({ globex: 3 });
    expect(await values(registry, BANDWIDTH)).toEqual({ globex: 4 });
    expect(await registry.metrics()).not.toContain('acme');
  });
});
