/** Grafana provisioning: the datasource the dashboards default to, and the provider that loads them. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderAll } from '../../grafana/dashboards-src/index.js';

const GRAFANA = join(import.meta.dirname, '..', '..', 'grafana');

interface DatasourceFile {
  apiVersion: number;
  datasources: { uid: string; type: string; url: string; isDefault?: boolean }[];
}
interface ProviderFile {
  apiVersion: number;
  providers: { type: string; options: { path: string } }[];
}

describe('grafana provisioning', () => {
  const ds = parse(
    readFileSync(join(GRAFANA, 'provisioning/datasources/prometheus.yml'), 'utf8'),
  ) as DatasourceFile;
  const provider = parse(
    readFileSync(join(GRAFANA, 'provisioning/dashboards/cdn-exporter.yml'), 'utf8'),
  ) as ProviderFile;

  it('provisions Prometheus of the compose stack with uid prometheus', () => {
    expect(ds.apiVersion).toBe(1);
    expect(ds.datasources).toHaveLength(1);
    expect(ds.datasources[0]).toMatchObject({
      uid: 'prometheus',
      type: 'prometheus',
      url: 'http://prometheus:9090',
    });
  });

  it('dashboards default their datasource variable to the provisioned one', () => {
    for (const { text } of renderAll()) {
      const d = JSON.parse(text) as { templating: { list: { name: string; current?: { value: string } }[] } };
      const v = d.templating.list.find((x) => x.name === 'datasource');
      expect(v?.current?.value).toBe(ds.datasources[0]!.uid);
    }
  });

  it('loads the dashboards from /var/lib/grafana/dashboards', () => {
    expect(provider.apiVersion).toBe(1);
    expect(provider.providers).toHaveLength(1);
    expect(provider.providers[0]).toMatchObject({
      type: 'file',
      options: { path: '/var/lib/grafana/dashboards' },
    });
  });
});
