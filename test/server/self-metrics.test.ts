/**
 * The exporter's own metrics (src/server/self-metrics.ts) against the contract: each family createSelfMetrics
 * registers has the type and labels docs/metrics.md ("The exporter itself") gives it, and the labels of the
 * catalogue of names (test/helpers/metric-catalogue.ts); the secret-label counter follows the masks made in label
 * values since the start; a failed poll keeps the last success time; removing an account removes its series of
 * every refusal reason and nothing of other accounts; the queue length read given at creation. Names on the given
 * registry only, the recorded requests and the defaults: test/server/units.test.ts.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SECRETS } from '../../src/redact.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { REFUSAL_REASONS } from '../../src/store/limits.js';
import { readDoc, section, tableRow } from '../helpers/markdown.js';
import { CATALOGUE } from '../helpers/metric-catalogue.js';

function make(opts: { queueLength?: () => number } = {}) {
  const registry = new Registry();
  const m = createSelfMetrics(registry, {
    version: '1.2.3',
    apis: ['metrics'],
    defaultMetrics: false,
    ...opts,
  });
  return { registry, m };
}

async function sample(registry: Registry, name: string, labels: Record<string, string> = {}) {
  const metric = registry.getSingleMetric(name);
  const values = (await metric!.get()).values;
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

describe('createSelfMetrics', () => {
  const registered: string[] = [];
  afterEach(() => {
    for (const s of registered.splice(0)) SECRETS.remove(s);
  });

  it('registers each family with the type and labels docs/metrics.md and the catalogue give it', async () => {
    const { registry, m } = make();
    // Children for the labelled families, so that their label names show.
    m.setPollResult('metrics', 'acme', true, 1000);
    m.observeRequest('metrics', 200, 0.1);
    m.seriesRefused.inc({ account: 'acme', reason: 'max_series' });
    const doc = section(readDoc('docs/metrics.md'), '## The exporter itself').join('\n');
    const families = await registry.getMetricsAsJSON();
    expect(families.length).toBeGreaterThan(0);
    for (const f of families) {
      const row = tableRow(doc, f.name);
      expect(row, `${f.name} in docs/metrics.md`).toBeDefined();
      const [, , type, labels] = row!;
      expect(f.type, f.name).toBe(type);
      const documented = labels === '' ? [] : labels!.split(', ');
      expect(documented, f.name).toEqual([...(CATALOGUE[f.name] ?? [])]);
      for (const v of f.values) {
        const names = Object.keys(v.labels).filter((l) => l !== 'le');
        expect(names.sort(), f.name).toEqual([...documented].sort());
      }
    }
  });

  it('says always 1 for the build, with the version given', async () => {
    const { registry } = make();
    expect(await sample(registry, 'cdn_exporter_build_info', { version: '1.2.3' })).toBe(1);
  });

  it('counts the label values masked for a secret since it was made, not those before', async () => {
    const secret = 'tok-self-metrics-4b7e21';
    SECRETS.add(secret);
    registered.push(secret);
    SECRETS.redact(`resource ${secret}`, 'label');
    const { registry } = make();
    expect(await sample(registry, 'cdn_exporter_secret_label_values_total')).toBe(0);
    SECRETS.redact(`name ${secret}`, 'label');
    SECRETS.redact(`id ${secret}`, 'label');
    // A mask in a log line or a page is not a label value.
    SECRETS.redact(`error ${secret}`, 'error');
    expect(await sample(registry, 'cdn_exporter_secret_label_values_total')).toBe(2);
    expect(await sample(registry, 'cdn_exporter_secret_label_values_total')).toBe(2);
  });

  it('keeps the last success time through a failed poll, and sets up to 0', async () => {
    const { registry, m } = make();
    m.setPollResult('dvr-net', 'acme', true, 1_767_225_600_500);
    m.setPollResult('dvr-net', 'acme', false, 1_767_225_660_000);
    const labels = { api: 'dvr-net', account: 'acme' };
    expect(await sample(registry, 'cdn_up', labels)).toBe(0);
    expect(await sample(registry, 'cdn_exporter_last_success_timestamp_seconds', labels)).toBe(
      1_767_225_600.5,
    );
  });

  it('removes an account of every refusal reason and keeps other accounts and the per-API counters', async () => {
    const { registry, m } = make();
    for (const account of ['acme', 'globex'])
      for (const reason of REFUSAL_REASONS) m.seriesRefused.inc({ account, reason });
    m.setPollResult('metrics', 'globex', true, 1000);
    m.observeRequest('metrics', 503, 1);
    m.stateSaveFailures.inc();
    m.removeAccount('metrics', 'acme');
    const text = await registry.metrics();
    expect(text).not.toContain('account="acme"');
    for (const reason of REFUSAL_REASONS)
      expect(await sample(registry, 'cdn_series_refused_total', { account: 'globex', reason })).toBe(1);
    expect(await sample(registry, 'cdn_api_requests_total', { api: 'metrics', code: '503' })).toBe(1);
    expect(await sample(registry, 'cdn_exporter_state_save_failures_total')).toBe(1);
  });

  it('reads the queue length given at creation at each scrape, until another source is set', async () => {
    let n = 4;
    const { registry, m } = make({ queueLength: () => n });
    expect(await sample(registry, 'cdn_api_queue_length')).toBe(4);
    n = 9;
    expect(await sample(registry, 'cdn_api_queue_length')).toBe(9);
    m.trackQueueLength(() => 1);
    expect(await sample(registry, 'cdn_api_queue_length')).toBe(1);
  });
});
