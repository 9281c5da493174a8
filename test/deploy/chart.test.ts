/**
 * What `helm lint` would catch, checked without Helm: the chart's metadata, its values against values.schema.json
 * (Helm validates the merged values with the same draft-07 schema), documented values, templates that only use
 * values and helpers that exist, balanced template blocks, and the restricted security context.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { isMap as isYamlMap, type Pair, parseDocument } from 'yaml';
import {
  CHART,
  chartValues,
  ciValueFiles,
  isMap,
  mergeValues,
  readText,
  readYaml,
  templateFiles,
  type Values,
} from './chart-helpers.js';

const schema = JSON.parse(readText('helm/cdn-exporter/values.schema.json')) as Record<string, unknown>;
const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);

function errorsOf(values: unknown): string {
  return validate(values)
    ? ''
    : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`).join('; ');
}

const ci = (name: string) => readYaml(`helm/cdn-exporter/ci/${name}`) as Values;

describe('Chart.yaml', () => {
  const chart = readYaml('helm/cdn-exporter/Chart.yaml') as Values;
  const pkg = JSON.parse(readText('package.json')) as { version: string; name: string };

  it('is a v2 application chart whose appVersion is the package version', () => {
    expect(chart.apiVersion).toBe('v2');
    expect(chart.name).toBe(pkg.name);
    expect(chart.type).toBe('application');
    expect(chart.appVersion).toBe(pkg.version);
    expect(String(chart.version)).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  });
});

describe('values.schema.json', () => {
  it('is a draft-07 schema', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
  });

  it('accepts values.yaml as shipped', () => {
    expect(errorsOf(chartValues())).toBe('');
  });

  it('has the five ci scenarios', () => {
    expect(ciValueFiles()).toEqual([
      'default-values.yaml',
      'existing-secret-values.yaml',
      'login-values.yaml',
      'monitoring-on-values.yaml',
      'sharded-values.yaml',
    ]);
  });

  it.each(ciValueFiles())('accepts values.yaml merged with ci/%s', (file) => {
    expect(errorsOf(mergeValues(chartValues(), ci(file)))).toBe('');
  });

  it('accepts what the exporter accepts: whole-number resource ids, and Helm globals when used as a subchart', () => {
    const values = mergeValues(mergeValues(chartValues(), ci('default-values.yaml')), {
      config: { metrics: { resources: ['12345', 67890] } },
      global: { imageRegistry: 'registry.example' },
    });
    expect(errorsOf(values)).toBe('');
  });

  // Each row: what a user might write over ci/default-values.yaml, and the path the schema must name.
  const bad: Array<[string, Values, string]> = [
    ['an unknown top-level key', { replicaCount: 2 }, '/'],
    ['a misspelt config key', { config: { api: { base_url: 'https://x', timout: '5s' } } }, '/config/api'],
    ['a token inline in the ConfigMap', { config: { api: { token: 'secret' } } }, '/config/api'],
    ['state_file in config (the chart owns it)', { config: { state_file: '/tmp/x' } }, '/config'],
    ['sharding in config (use sharding.replicas)', { config: { sharding: { shards: 2 } } }, '/config'],
    [
      'a base URL without a scheme',
      { config: { api: { base_url: 'api.cdn.example' } } },
      '/config/api/base_url',
    ],
    ['a duration without a unit', { config: { metrics: { window: '5' } } }, '/config/metrics/window'],
    ['an unknown breakdown', { config: { metrics: { breakdown: 'host' } } }, '/config/metrics/breakdown'],
    ['a rate of zero', { config: { api: { requests_per_second: 0 } } }, '/config/api/requests_per_second'],
    ['an account without a name', { config: { accounts: [{ recordings: true }] } }, '/config/accounts/0'],
    [
      'an account with an unknown key',
      { config: { accounts: [{ name: 'a', dvr: [] }] } },
      '/config/accounts/0',
    ],
    ['a privileged port', { port: 80 }, '/port'],
    ['a port given as a string', { port: '9877' }, '/port'],
    ['zero replicas', { sharding: { replicas: 0 } }, '/sharding/replicas'],
    ['fractional replicas', { sharding: { replicas: 1.5 } }, '/sharding/replicas'],
    ['an unknown log format', { logFormat: 'text' }, '/logFormat'],
    ['an unknown pull policy', { image: { pullPolicy: 'Sometimes' } }, '/image/pullPolicy'],
    ['a malformed digest', { image: { digest: 'latest' } }, '/image/digest'],
    ['root in the container', { securityContext: { runAsNonRoot: false } }, '/securityContext/runAsNonRoot'],
    ['privilege escalation', { securityContext: { allowPrivilegeEscalation: true } }, '/securityContext'],
    [
      'an existing Secret with an invalid name',
      { existingSecret: { name: 'Not_A_Name' } },
      '/existingSecret/name',
    ],
    [
      'a ServiceMonitor label that is not a string',
      { serviceMonitor: { labels: { release: 1 } } },
      '/serviceMonitor',
    ],
    ['a scrape interval without a unit', { serviceMonitor: { interval: '30' } }, '/serviceMonitor/interval'],
    ['an unknown service type', { service: { type: 'ExternalName' } }, '/service/type'],
    ['a persistence size without a unit we know', { persistence: { size: '1 GB' } }, '/persistence/size'],
    ['extra flags that are not strings', { extraArgs: [1] }, '/extraArgs/0'],
    ['a negative resource id', { config: { metrics: { resources: [-1] } } }, '/config/metrics/resources/0'],
  ];

  it.each(bad)('refuses %s', (_what, override, path) => {
    const values = mergeValues(mergeValues(chartValues(), ci('default-values.yaml')), override);
    const errors = errorsOf(values);
    expect(errors).not.toBe('');
    expect(errors).toContain(path === '/' ? '/ ' : path);
  });
});

describe('values.yaml', () => {
  it('documents every key with a comment (a documented block documents its contents)', () => {
    const doc = parseDocument(readFileSync(join(CHART, 'values.yaml'), 'utf8'));
    const undocumented: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (!isYamlMap(node)) return;
      node.items.forEach((pair: Pair, i) => {
        const key = `${path}${String((pair.key as { value?: unknown }).value)}`;
        const comment =
          (pair.key as { commentBefore?: string }).commentBefore ?? (i === 0 ? node.commentBefore : '');
        if (comment?.trim()) return;
        if (isYamlMap(pair.value) && pair.value.items.length > 0) walk(pair.value, `${key}.`);
        else undocumented.push(key);
      });
    };
    walk(doc.contents, '');
    expect(undocumented).toEqual([]);
  });

  it('ships a restricted security context (Pod Security Standard "restricted")', () => {
    const v = chartValues();
    const pod = v.podSecurityContext as Values;
    const container = v.securityContext as Values;
    expect(pod.runAsNonRoot).toBe(true);
    expect(pod.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(container).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('leaves ServiceMonitor, PrometheusRule and dashboards off by default', () => {
    const v = chartValues();
    for (const key of ['serviceMonitor', 'prometheusRule', 'dashboards']) {
      expect((v[key] as Values).enabled, key).toBe(false);
    }
    expect(v.dashboards).toMatchObject({ labelName: 'grafana_dashboard', labelValue: '1' });
  });
});

describe('templates', () => {
  const templates = templateFiles().map((file) => ({
    file,
    text: readText(`helm/cdn-exporter/templates/${file}`),
  }));
  /** Template actions without comments: `{{- if .x }}` -> `if .x`. */
  const actions = (text: string): string[] =>
    [
      ...text.replace(/\{\{-?\s*\/\*[\s\S]*?\*\/\s*-?\}\}/g, '').matchAll(/\{\{-?\s*([\s\S]*?)\s*-?\}\}/g),
    ].map((m) => m[1] ?? '');

  it('scrape each shard once: the ServiceMonitor leaves out the headless Service that selects the same pods', () => {
    const headless = readText('helm/cdn-exporter/templates/service-headless.yaml');
    const monitor = readText('helm/cdn-exporter/templates/servicemonitor.yaml');
    const service = readText('helm/cdn-exporter/templates/service.yaml');
    expect(headless).toMatch(/^ {4}cdn-exporter\/headless: "true"$/m);
    expect(service).not.toContain('cdn-exporter/headless');
    expect(monitor).toMatch(
      / {2}selector:\n(?: {4}.*\n)*? {4}matchExpressions:\n {6}- key: cdn-exporter\/headless\n {8}operator: DoesNotExist\n/,
    );
  });

  it('include the kinds the chart promises', () => {
    const kinds = templates.flatMap(({ text }) => [...text.matchAll(/^kind: (\w+)/gm)].map((m) => m[1]));
    expect(new Set(kinds)).toEqual(
      new Set([
        'Deployment',
        'StatefulSet',
        'Service',
        'ConfigMap',
        'Secret',
        'ServiceAccount',
        'ServiceMonitor',
        'PrometheusRule',
        'PersistentVolumeClaim',
      ]),
    );
  });

  it.each(templateFiles())('%s: every if/range/with/define has its end', (file) => {
    const text = readText(`helm/cdn-exporter/templates/${file}`);
    let depth = 0;
    for (const action of actions(text)) {
      if (/^(if|range|with|define|block)\b/.test(action)) depth++;
      else if (/^end\b/.test(action)) depth--;
      expect(depth, `${file}: an end without its block`).toBeGreaterThanOrEqual(0);
    }
    expect(depth, `${file}: a block without its end`).toBe(0);
  });

  it('use only values that values.yaml defines', () => {
    const values = chartValues();
    const missing: string[] = [];
    for (const { file, text } of templates) {
      for (const m of text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)) {
        let node: unknown = values;
        for (const key of m[1]!.slice(1).split('.')) {
          if (!isMap(node) || !(key in node)) {
            missing.push(`${file}: .Values${m[1]}`);
            break;
          }
          node = node[key];
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('include only helpers that are defined', () => {
    const all = templates.flatMap(({ text }) => actions(text));
    const defined = new Set(all.flatMap((a) => [...a.matchAll(/^define "([^"]+)"/g)].map((m) => m[1])));
    const used = new Set(all.flatMap((a) => [...a.matchAll(/include "([^"]+)"/g)].map((m) => m[1])));
    expect([...used].filter((name) => !defined.has(name))).toEqual([]);
  });

  it('probe /healthz and /readyz on the named port http-metrics, which the Service exposes', () => {
    const pod = readText('helm/cdn-exporter/templates/_pod.tpl');
    expect(pod).toMatch(/livenessProbe:\s+httpGet:\s+path: \/healthz\s+port: http-metrics/);
    expect(pod).toMatch(/readinessProbe:\s+httpGet:\s+path: \/readyz\s+port: http-metrics/);
    expect(readText('helm/cdn-exporter/templates/service.yaml')).toMatch(/- name: http-metrics\s/);
    expect(readText('helm/cdn-exporter/templates/servicemonitor.yaml')).toMatch(/- port: http-metrics\s/);
  });

  it('give each StatefulSet pod its ordinal as SHARD and the replica count as SHARDS', () => {
    const pod = readText('helm/cdn-exporter/templates/_pod.tpl');
    expect(pod).toMatch(
      /- name: SHARD\s+valueFrom:\s+fieldRef:\s+fieldPath: metadata\.labels\['apps\.kubernetes\.io\/pod-index'\]/,
    );
    expect(pod).toMatch(/- name: SHARDS\s+value: \{\{ \.Values\.sharding\.replicas/);
    expect(readText('helm/cdn-exporter/templates/statefulset.yaml')).toMatch(/semverCompare "<1\.28\.0-0"/);
  });

  it('print the password only into the login Secret; elsewhere it is only tested or hashed', () => {
    const uses = templates.flatMap(({ file, text }) =>
      actions(text)
        .filter((a) => /\.Values\.login\.password\b/.test(a))
        .map((action) => ({ file, action })),
    );
    expect(uses.some(({ file }) => file === 'login-secret.yaml')).toBe(true);
    for (const { file, action } of uses) {
      if (file === 'login-secret.yaml' && !/^(if|else)\b/.test(action)) expect(action).toMatch(/\| b64enc/);
      else expect(action, `${file}: ${action}`).toMatch(/^(if|else if|and)\b|\| sha256sum/);
    }
  });

  it('print the token only into the Secret; elsewhere it is only tested or hashed', () => {
    const uses = templates.flatMap(({ file, text }) =>
      actions(text)
        .filter((a) => /\.Values\.token\b/.test(a))
        .map((action) => ({ file, action })),
    );
    expect(uses.some(({ file }) => file === 'secret.yaml')).toBe(true);
    for (const { file, action } of uses) {
      if (file === 'secret.yaml' && !/^(if|else)\b/.test(action)) expect(action).toMatch(/\| b64enc/);
      else expect(action, `${file}: ${action}`).toMatch(/^(if|else if)\b|\| sha256sum/);
    }
  });
});
