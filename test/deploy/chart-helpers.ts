/**
 * Helpers for the tests that stand in for `helm lint` / `helm template` (Helm is not on these machines): read the
 * chart's files, merge values the way Helm does, and build the exporter configuration the way the chart's
 * `cdn-exporter.config` template does.
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
