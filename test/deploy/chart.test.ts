/**
 * The chart's metadata, its values against values.schema.json (Helm validates the merged values with the same
 * draft-07 schema; ajv here names the path of each error), documented values, templates that only use values and
 * helpers that exist, balanced template blocks, the restricted security context; and what the real Helm renders
 * (test/deploy/helm.ts) for the values a user sets: the ConfigMap, the PrometheusRule, the ServiceMonitor and the
 * PodDisruptionBudget. test/deploy/helm.test.ts runs `helm lint` and checks every rendered manifest's schema.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { isMap as isYamlMap, type Pair, parse, parseDocument, stringify } from 'yaml';
import { PROJECT_URL, RUNBOOK_URL } from '../../src/server/landing.js';
import { findTool } from '../helpers/tools.js';
import {
  CHART,
  chartValues,
  ciValueFiles,
  isMap,
  jobSelector,
  type Layer,
  layered,
  mergeValues,
  type Release,
  RULES_JOB_MATCHER,
  readText,
  readYaml,
  renderedConfig,
  renderedRuleGroups,
  templateFiles,
  type Values,
} from './chart-helpers.js';
import { findHelms, helmTemplate, renderManifest } from './helm.js';

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

  it('names its Kubernetes floor, home and sources, the same project URL as package.json and the runbook links', () => {
    // policy/v1 PodDisruptionBudget: 1.21; the `-0` lets pre-release cluster versions (EKS, GKE) match.
    expect(chart.kubeVersion).toBe('>=1.21.0-0');
    expect(chart.home).toBe(PROJECT_URL);
    expect(chart.sources).toEqual([PROJECT_URL]);
    const meta = JSON.parse(readText('package.json')) as {
      homepage: string;
      repository: { type: string; url: string };
      bugs: { url: string };
    };
    expect(meta.homepage).toBe(`${PROJECT_URL}#readme`);
    expect(meta.repository).toEqual({ type: 'git', url: `git+${PROJECT_URL}.git` });
    expect(meta.bugs.url).toBe(`${PROJECT_URL}/issues`);
    // The chart's default runbook prefix is docs/alerts.md's, as the rule file's own runbook_url.
    expect((chartValues().prometheusRule as Values).runbookUrl).toBe(`${RUNBOOK_URL}#`);
    const rules = readText('rules/cdn-exporter.rules.yml');
    for (const m of rules.matchAll(/runbook_url: (\S+)/g))
      expect(m[1]!.startsWith(`${RUNBOOK_URL}#`)).toBe(true);
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
      'tls-values.yaml',
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
    [
      'a job selector that is not a PromQL matcher',
      { prometheusRule: { jobSelector: 'cdn-exporter' } },
      '/prometheusRule/jobSelector',
    ],
    [
      'a runbook URL without a scheme',
      { prometheusRule: { runbookUrl: 'wiki/x#' } },
      '/prometheusRule/runbookUrl',
    ],
    [
      'an alert disabled with a string',
      { prometheusRule: { disabled: { CdnApiDown: 'yes' } } },
      '/prometheusRule/disabled/CdnApiDown',
    ],
    [
      'a rule label that is not a string',
      { prometheusRule: { ruleLabels: { CdnApiDown: { severity: 1 } } } },
      '/prometheusRule/ruleLabels/CdnApiDown/severity',
    ],
    ['a scrape scheme other than http(s)', { serviceMonitor: { scheme: 'ftp' } }, '/serviceMonitor/scheme'],
    [
      'target labels that are not strings',
      { serviceMonitor: { targetLabels: [1] } },
      '/serviceMonitor/targetLabels/0',
    ],
    ['honorLabels as a string', { serviceMonitor: { honorLabels: 'true' } }, '/serviceMonitor/honorLabels'],
    [
      'basicAuth with an inline password',
      { serviceMonitor: { basicAuth: { password: 'x', user: 'y' } } },
      '/serviceMonitor/basicAuth',
    ],
    [
      'a PodDisruptionBudget minAvailable in words',
      { podDisruptionBudget: { enabled: true, minAvailable: 'half' } },
      '/podDisruptionBudget/minAvailable',
    ],
    [
      'a negative maxUnavailable',
      { podDisruptionBudget: { enabled: true, maxUnavailable: -1 } },
      '/podDisruptionBudget/maxUnavailable',
    ],
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

  it('says, wherever it offers PrometheusText1.0.0, the prometheus-operator and Prometheus it needs', () => {
    const scrapeProtocols = (schema.properties as Record<string, { properties: Record<string, unknown> }>)
      .serviceMonitor!.properties.scrapeProtocols as { items: { enum: string[] }; description: string };
    expect(scrapeProtocols.items.enum).toContain('PrometheusText1.0.0');
    const comment = /(# -- Exposition formats[\s\S]*?)\n {2}scrapeProtocols:/.exec(
      readText('helm/cdn-exporter/values.yaml'),
    )![1]!;
    const readme = readText('helm/cdn-exporter/README.md');
    for (const [where, text] of [
      ['values.yaml', comment],
      ['values.schema.json', scrapeProtocols.description],
      ['README.md', readme],
    ] as const) {
      expect(text.replace(/\s*#\s*/g, ' '), where).toMatch(
        /PrometheusText1\.0\.0`?,? (which )?needs prometheus-operator 0\.79\+[^.]*Prometheus 3\.0\+/,
      );
    }
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
        'PodDisruptionBudget',
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
    // Between the probe and httpGet: the web config's choice of a TCP probe (test/deploy/web.test.ts).
    expect(pod).toMatch(/livenessProbe:[\s\S]*?httpGet:\s+path: \/healthz\s+port: http-metrics/);
    expect(pod).toMatch(
      /readinessProbe:[\s\S]*?httpGet:\s+path: \{\{ include "cdn-exporter.readinessPath" \. \}\}\s+port: http-metrics/,
    );
    expect(readText('helm/cdn-exporter/templates/_helpers.tpl')).toMatch(/else -\}\}\/readyz\{\{/);
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

const RELEASE: Release = { name: 'cdn', namespace: 'monitoring' };
const DEFAULT = 'helm/cdn-exporter/ci/default-values.yaml';
const MONITORING_ON = 'helm/cdn-exporter/ci/monitoring-on-values.yaml';
const SHARDED = 'helm/cdn-exporter/ci/sharded-values.yaml';
type RuleGroups = ReturnType<typeof renderedRuleGroups>;

describe('the rule file', () => {
  it('selects the exporter job with exactly the matcher the PrometheusRule template replaces', () => {
    const rules = readText('helm/cdn-exporter/files/rules/cdn-exporter.rules.yml');
    const matchers = [...rules.matchAll(/\bjob\s*(=~|!~|!=|=)\s*"[^"]*"/g)].map((m) => m[0]);
    expect(matchers.length).toBeGreaterThanOrEqual(2);
    // Besides it, only the traffic selectors' exclusion of the settled series (docs/remote-write.md), which the
    // template leaves as it is.
    expect(new Set(matchers)).toEqual(new Set([RULES_JOB_MATCHER, 'job!~".*-settled"']));
  });
});

// What `helm template` renders with each Helm at hand (HELM_BIN: Helm 4, HELM3_BIN: Helm 3; test/deploy/helm.ts).
describe.each(findHelms())('the chart as Helm $version renders it', ({ bin }) => {
  const manifest = (file: string, ...layers: Layer[]) => renderManifest(bin, file, layers, RELEASE);
  /** spec.groups of the PrometheusRule Helm renders. */
  const ruleGroups = (...layers: Layer[]): RuleGroups =>
    (manifest('prometheusrule.yaml', ...layers) as { spec: { groups: RuleGroups } }).spec.groups;

  it.each(ciValueFiles())('ci/%s: config.yml of the ConfigMap is what the chart promises', (file) => {
    const layer = `helm/cdn-exporter/ci/${file}`;
    const map = manifest('configmap.yaml', layer) as { data: Record<string, string> };
    expect(parse(map.data['config.yml']!)).toEqual(renderedConfig(layered(layer)));
  });

  describe('PrometheusRule values (templates/prometheusrule.yaml)', () => {
    const alertsOf = (groups: RuleGroups) => groups.flatMap((g) => g.rules).filter((r) => r.alert);

    it('renders nothing unless enabled', () => {
      expect(manifest('prometheusrule.yaml', DEFAULT)).toBeUndefined();
    });

    it("by default: every alert, the job of the chart's own ServiceMonitor, the project's runbook", () => {
      const layers: Layer[] = [DEFAULT, { prometheusRule: { enabled: true } }];
      const groups = ruleGroups(...layers);
      const file = readYaml('rules/cdn-exporter.rules.yml') as { groups: Array<{ rules: object[] }> };
      expect(alertsOf(groups)).toHaveLength(
        file.groups.flatMap((g) => g.rules).filter((r) => 'alert' in r).length,
      );
      const down = alertsOf(groups).find((r) => r.alert === 'CdnExporterDown')!;
      expect(down.expr).toBe('up{job="cdn-cdn-exporter"} == 0');
      expect(down.annotations!.runbook_url).toBe(`${RUNBOOK_URL}#cdnexporterdown`);
      // Every other part of every rule is the rule file's.
      expect(groups).toEqual(renderedRuleGroups(layered(...layers), RELEASE));
      expect(jobSelector(layered(...layers), { name: 'cdn-exporter', namespace: 'x' })).toBe(
        'job="cdn-exporter"',
      );
    });

    it('monitoring-on: job from the jobLabel, own runbook, one alert off, labels added and overridden', () => {
      const groups = ruleGroups(MONITORING_ON);
      const alerts = alertsOf(groups);
      expect(alerts.map((a) => a.alert)).not.toContain('CdnEdgeCacheHitRatioDropped');
      expect(alerts.find((a) => a.alert === 'CdnExporterAbsent')!.expr).toBe(
        'absent(up{job="cdn-exporter"})',
      );
      for (const a of alerts) {
        expect(a.expr, a.alert).not.toContain('.*cdn-exporter.*');
        expect(a.annotations!.runbook_url).toBe(
          `https://wiki.example/runbooks/cdn-exporter/${a.alert.toLowerCase()}`,
        );
        expect(a.labels!.team).toBe('cdn');
      }
      expect(alerts.find((a) => a.alert === 'CdnApiDown')!.labels!.severity).toBe('critical');
      expect(alerts.find((a) => a.alert === 'CdnTrafficDataStale')!.labels!.severity).toBe('warning');
      expect(groups).toEqual(renderedRuleGroups(layered(MONITORING_ON), RELEASE));
    });

    it('a hand-written selector and extra annotations; a group whose alerts are all off is left out', () => {
      const layers: Layer[] = [
        MONITORING_ON,
        {
          prometheusRule: {
            jobSelector: 'job="kubernetes-pods", namespace=~"monitoring|cdn"',
            disabled: { CdnRecordingError: true },
            additionalRuleAnnotations: { dashboard: 'https://grafana.example/d/cdn-exporter' },
            // Every alert a ticket, CdnApiDown a page: per alert over all alerts over the rule's own.
            additionalRuleLabels: { severity: 'ticket' },
          },
        },
      ];
      const groups = ruleGroups(...layers);
      expect(groups.map((g) => g.name)).not.toContain('cdn-exporter.recordings');
      const down = alertsOf(groups).find((r) => r.alert === 'CdnExporterDown')!;
      expect(down.expr).toBe('up{job="kubernetes-pods", namespace=~"monitoring|cdn"} == 0');
      for (const a of alertsOf(groups)) {
        expect(a.annotations!.dashboard).toBe('https://grafana.example/d/cdn-exporter');
        expect(a.labels!.severity, a.alert).toBe(a.alert === 'CdnApiDown' ? 'critical' : 'ticket');
      }
      expect(groups).toEqual(renderedRuleGroups(layered(...layers), RELEASE));
    });

    it('a jobLabel the Service lacks is refused with a message', () => {
      const layers: Layer[] = [MONITORING_ON, { serviceMonitor: { jobLabel: 'no-such-label' } }];
      expect(() => helmTemplate(bin, layers, RELEASE)).toThrow(
        /serviceMonitor.jobLabel "no-such-label" is not a label of the Service/,
      );
      expect(() => jobSelector(layered(...layers), RELEASE)).toThrow(/is not a label of the Service/);
    });

    const promtool = findTool('promtool');
    it.skipIf(!promtool)('the rendered rules pass promtool check rules', () => {
      const dir = mkdtempSync(join(tmpdir(), 'cdn-exporter-chart-rules-'));
      try {
        const cases: Layer[][] = [
          [DEFAULT, { prometheusRule: { enabled: true } }],
          [MONITORING_ON],
          [MONITORING_ON, { prometheusRule: { jobSelector: 'job="a", namespace!~"b|c"' } }],
        ];
        cases.forEach((layers, i) => {
          const groups = ruleGroups(...layers);
          const file = join(dir, `rules-${i}.yml`);
          writeFileSync(file, stringify({ groups }));
          const out = execFileSync(promtool!, ['check', 'rules', file], { encoding: 'utf8' });
          expect(out).toContain(`SUCCESS: ${groups.flatMap((g) => g.rules).length} rules found`);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('ServiceMonitor values (templates/servicemonitor.yaml)', () => {
    type Monitor = { spec: Record<string, unknown> & { endpoints: Array<Record<string, unknown>> } };
    const monitor = (...layers: Layer[]) => manifest('servicemonitor.yaml', ...layers) as Monitor;

    it('by default: plain http, no jobLabel, targetLabels, tlsConfig or basicAuth', () => {
      const { spec } = monitor(DEFAULT, { serviceMonitor: { enabled: true } });
      expect(spec.jobLabel).toBeUndefined();
      expect(spec.targetLabels).toBeUndefined();
      expect(spec.scrapeProtocols).toBeUndefined();
      expect(spec.endpoints).toHaveLength(1);
      const endpoint = spec.endpoints[0]!;
      expect(endpoint).toMatchObject({
        port: 'http-metrics',
        path: '/metrics',
        scheme: 'http',
        honorLabels: false,
      });
      expect(endpoint.tlsConfig).toBeUndefined();
      expect(endpoint.basicAuth).toBeUndefined();
    });

    it('monitoring-on: jobLabel and targetLabels on the spec', () => {
      const { spec } = monitor(MONITORING_ON);
      expect(spec.jobLabel).toBe('app.kubernetes.io/name');
      expect(spec.targetLabels).toEqual(['team']);
    });

    it('asks for the protobuf format first when scrapeProtocols says so (created timestamps)', () => {
      const scrapeProtocols = ['PrometheusProto', 'OpenMetricsText1.0.0', 'PrometheusText0.0.4'];
      const layers: Layer[] = [MONITORING_ON, { serviceMonitor: { scrapeProtocols } }];
      expect(errorsOf(layered(...layers))).toBe('');
      expect(monitor(...layers).spec.scrapeProtocols).toEqual(scrapeProtocols);
      const unknown = [MONITORING_ON, { serviceMonitor: { scrapeProtocols: ['Protobuf'] } }];
      expect(errorsOf(layered(...unknown))).toContain('/serviceMonitor/scrapeProtocols/0');
      // Helm refuses it too, with the schema's path.
      expect(() => helmTemplate(bin, unknown, RELEASE)).toThrow(/scrapeProtocols/);
    });

    it('passes scheme, honorLabels, tlsConfig and basicAuth through as written', () => {
      const tlsConfig = {
        ca: { secret: { name: 'cdn-exporter-tls', key: 'ca.crt' } },
        serverName: 'cdn-exporter.monitoring.svc',
      };
      const basicAuth = {
        username: { name: 'cdn-exporter-scrape', key: 'username' },
        password: { name: 'cdn-exporter-scrape', key: 'password' },
      };
      const layers: Layer[] = [
        MONITORING_ON,
        { serviceMonitor: { scheme: 'https', honorLabels: true, tlsConfig, basicAuth } },
      ];
      expect(errorsOf(layered(...layers))).toBe('');
      const endpoint = monitor(...layers).spec.endpoints[0]!;
      expect(endpoint).toMatchObject({ scheme: 'https', honorLabels: true, tlsConfig, basicAuth });
    });
  });

  describe('PodDisruptionBudget (templates/poddisruptionbudget.yaml)', () => {
    type Pdb = { apiVersion: string; kind: string; spec: Record<string, unknown> };
    const pdb = (...layers: Layer[]) => manifest('poddisruptionbudget.yaml', ...layers) as Pdb | undefined;

    it('is off by default', () => {
      expect(pdb(DEFAULT)).toBeUndefined();
    });

    it('sharded: policy/v1, over the exporter pods, one shard at a time', () => {
      const sharded = pdb(SHARDED)!;
      expect(sharded.apiVersion).toBe('policy/v1');
      expect(sharded.kind).toBe('PodDisruptionBudget');
      expect(sharded.spec).toEqual({
        maxUnavailable: 1,
        selector: {
          matchLabels: { 'app.kubernetes.io/name': 'cdn-exporter', 'app.kubernetes.io/instance': 'cdn' },
        },
      });
    });

    it('minAvailable, when given, replaces maxUnavailable', () => {
      const layers: Layer[] = [DEFAULT, { podDisruptionBudget: { enabled: true, minAvailable: '50%' } }];
      expect(errorsOf(layered(...layers))).toBe('');
      const budget = pdb(...layers)!;
      expect(budget.spec.minAvailable).toBe('50%');
      expect(budget.spec.maxUnavailable).toBeUndefined();
    });
  });
});
