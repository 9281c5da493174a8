/**
 * Helpers for the chart tests: read the chart's files, merge values the way Helm does, and say what the chart
 * promises to render (the exporter configuration, the web config, the alert rules), which the tests compare with
 * what the real Helm renders (test/deploy/helm.ts) and feed to the exporter's own loaders.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const ROOT = join(import.meta.dirname, '../..');
export const CHART = join(ROOT, 'helm/cdn-exporter');

export type Values = Record<string, unknown>;

export const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function readText(rel: string): string {
  return readFileSync(join(ROOT, rel), 'utf8');
}

export function readYaml(rel: string): unknown {
  return parse(readText(rel));
}

export function chartValues(): Values {
  return readYaml('helm/cdn-exporter/values.yaml') as Values;
}

/** `ci/<name>-values.yaml` files of the chart. */
export function ciValueFiles(): string[] {
  return readdirSync(join(CHART, 'ci'))
    .filter((f) => f.endsWith('-values.yaml'))
    .sort();
}

export function templateFiles(): string[] {
  return readdirSync(join(CHART, 'templates')).sort();
}

/** Helm's coalescing of a user's values over the chart's: maps merge key by key, a null deletes, the rest replaces. */
export function mergeValues(base: unknown, over: unknown): unknown {
  if (!isMap(base) || !isMap(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === null) delete out[key];
    else out[key] = mergeValues(base[key], value);
  }
  return out;
}

/**
 * A layer of values, as `helm -f` takes it: a file's path from the repository root (`helm/cdn-exporter/ci/...`),
 * or values of a test's own. Later layers win, as with repeated `-f`.
 */
export type Layer = string | Values;

/** The values the templates see for these layers: values.yaml, then each layer merged over it. */
export function layered(...layers: Layer[]): Values {
  return layers.reduce<Values>(
    (values, layer) => mergeValues(values, typeof layer === 'string' ? readYaml(layer) : layer) as Values,
    chartValues(),
  );
}

export const TOKEN_PATH = '/etc/cdn-exporter/secret/token';
export const STATE_PATH = '/var/lib/cdn-exporter/state.json';
export const PASSWORD_PATH = '/etc/cdn-exporter/login/password';

/** What templates/configmap.yaml renders into config.yml (see `cdn-exporter.config` in _helpers.tpl). */
export function renderedConfig(values: Values): Record<string, unknown> {
  const config = structuredClone(values.config) as Record<string, unknown>;
  const api = isMap(config.api) ? config.api : {};
  const secret = isMap(values.existingSecret) && values.existingSecret.name ? true : Boolean(values.token);
  if (secret) api.token_file = TOKEN_PATH;
  const login = isMap(values.login) ? values.login : {};
  const loginSecret =
    isMap(login.existingSecret) && login.existingSecret.name ? true : Boolean(login.password);
  if (!secret && login.username && loginSecret) {
    api.username = login.username;
    api.password_file = PASSWORD_PATH;
  }
  config.api = api;
  config.state_file = STATE_PATH;
  return config;
}

/** A release as `helm install NAME` makes it, for the names templates derive from it. */
export interface Release {
  name: string;
  namespace: string;
}

/** `cdn-exporter.fullname` of _helpers.tpl. */
export function fullname(values: Values, release: Release): string {
  if (typeof values.fullnameOverride === 'string' && values.fullnameOverride)
    return values.fullnameOverride.slice(0, 63).replace(/-+$/, '');
  const name =
    typeof values.nameOverride === 'string' && values.nameOverride ? values.nameOverride : 'cdn-exporter';
  const full = release.name.includes(name) ? release.name : `${release.name}-${name}`;
  return full.slice(0, 63).replace(/-+$/, '');
}

/** The Service's labels: `cdn-exporter.labels` of _helpers.tpl, then service.labels (templates/service.yaml). */
export function serviceLabels(values: Values, release: Release): Record<string, string> {
  const chart = readYaml('helm/cdn-exporter/Chart.yaml') as {
    name: string;
    version: string;
    appVersion: string;
  };
  const name =
    typeof values.nameOverride === 'string' && values.nameOverride ? values.nameOverride : chart.name;
  const service = isMap(values.service) && isMap(values.service.labels) ? values.service.labels : {};
  return {
    'helm.sh/chart': `${chart.name}-${chart.version}`,
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': release.name,
    'app.kubernetes.io/version': chart.appVersion,
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/part-of': 'cdn-exporter',
    ...(service as Record<string, string>),
  };
}

/** `cdn-exporter.jobSelector` of _helpers.tpl; throws the template's `fail` message. */
export function jobSelector(values: Values, release: Release): string {
  const rule = values.prometheusRule as Values;
  const monitor = values.serviceMonitor as Values;
  if (rule.jobSelector) return String(rule.jobSelector);
  if (monitor.jobLabel) {
    const job = serviceLabels(values, release)[String(monitor.jobLabel)];
    if (!job)
      throw new Error(
        `serviceMonitor.jobLabel "${String(monitor.jobLabel)}" is not a label of the Service: add it to service.labels, or set prometheusRule.jobSelector`,
      );
    return `job=${JSON.stringify(job)}`;
  }
  return `job=${JSON.stringify(fullname(values, release))}`;
}

/** The job matcher of the project's rule file, which templates/prometheusrule.yaml replaces. */
export const RULES_JOB_MATCHER = 'job=~".*cdn-exporter.*"';

interface Rule {
  /** Absent on a recording rule (then `record` is set). */
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/**
 * What templates/prometheusrule.yaml renders under `spec.groups`: the chart's copy of the rule file with
 * prometheusRule's values applied rule by rule (Sprig's `merge`: the first dictionary wins).
 */
export function renderedRuleGroups(
  values: Values,
  release: Release,
): Array<{ name: string; interval?: string; rules: Rule[] }> {
  const file = readYaml('helm/cdn-exporter/files/rules/cdn-exporter.rules.yml') as {
    groups: Array<{ name: string; interval?: string; rules: Rule[] }>;
  };
  const v = values.prometheusRule as {
    runbookUrl: string;
    disabled: Record<string, boolean>;
    additionalRuleLabels: Record<string, string>;
    ruleLabels: Record<string, Record<string, string>>;
    additionalRuleAnnotations: Record<string, string>;
  };
  const selector = jobSelector(values, release);
  const groups: Array<{ name: string; interval?: string; rules: Rule[] }> = [];
  for (const group of file.groups) {
    const kept = group.rules
      .filter((rule) => 'record' in rule || !v.disabled[rule.alert])
      .map((rule) =>
        'record' in rule
          ? rule
          : {
              ...rule,
              expr: rule.expr.split(RULES_JOB_MATCHER).join(selector),
              labels: { ...rule.labels, ...v.additionalRuleLabels, ...v.ruleLabels[rule.alert] },
              annotations: {
                ...rule.annotations,
                ...v.additionalRuleAnnotations,
                runbook_url: `${v.runbookUrl}${rule.alert.toLowerCase()}`,
              },
            },
      );
    // Recording rules keep their group's evaluation interval.
    if (kept.length > 0)
      groups.push(
        group.interval
          ? { name: group.name, interval: group.interval, rules: kept }
          : { name: group.name, rules: kept },
      );
  }
  return groups;
}

/** Where the chart mounts the certificate Secret (`cdn-exporter.tlsDir`). */
export const TLS_DIR = '/etc/cdn-exporter/tls';

/**
 * What templates/web-secret.yaml renders into web-config.yml (see `cdn-exporter.webConfig` in _helpers.tpl);
 * `tlsDir` stands for the mount path, so a test can point it at certificates it made.
 */
export function renderedWebConfig(values: Values, tlsDir = TLS_DIR): Record<string, unknown> {
  const web = values.web as {
    tls: { enabled: boolean; clientAuthType: string; clientCA: boolean; minVersion: string };
    basicAuth: { users: Record<string, string> };
    http2: boolean;
    headers: Record<string, string>;
  };
  const out: Record<string, unknown> = {};
  if (web.tls.enabled) {
    const tls: Record<string, unknown> = {
      cert_file: `${tlsDir}/tls.crt`,
      key_file: `${tlsDir}/tls.key`,
      min_version: web.tls.minVersion,
    };
    if (web.tls.clientAuthType !== 'NoClientCert') tls.client_auth_type = web.tls.clientAuthType;
    if (web.tls.clientCA) tls.client_ca_file = `${tlsDir}/ca.crt`;
    out.tls_server_config = tls;
  }
  const http: Record<string, unknown> = { http2: web.http2 };
  if (Object.keys(web.headers).length > 0) http.headers = web.headers;
  out.http_server_config = http;
  if (Object.keys(web.basicAuth.users).length > 0) out.basic_auth_users = web.basicAuth.users;
  return out;
}
