/**
 * The chart, the Dockerfile and the compose stack name only configuration keys and flags the exporter knows: the
 * configuration they produce goes through the real loader (src/config) and their command lines through the real
 * flag parsers (src/config/flags.ts, src/simulator/options.ts).
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, loadConfig, parseCommandLine } from '../../src/config/index.js';
import { parseSimulatorArgs } from '../../src/simulator/options.js';
import {
  chartValues,
  ciValueFiles,
  isMap,
  mergeValues,
  PASSWORD_PATH,
  readText,
  readYaml,
  renderedConfig,
  STATE_PATH,
  TOKEN_PATH,
  type Values,
} from './chart-helpers.js';

const load = (config: unknown, env: Record<string, string> = {}) => {
  const text = stringify(config);
  return loadConfig({ file: 'config.yml', env, readFile: () => text });
};

const merged = (file: string) =>
  mergeValues(chartValues(), readYaml(`helm/cdn-exporter/ci/${file}`)) as Values;

/** Dotted key paths of a config document (list items as `[]`). */
function keyPaths(node: unknown, prefix = ''): string[] {
  if (Array.isArray(node)) return node.flatMap((item) => keyPaths(item, `${prefix}[]`));
  if (!isMap(node)) return [];
  return Object.entries(node).flatMap(([k, v]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    return [path, ...keyPaths(v, path)];
  });
}

function schemaKeyPaths(schema: Record<string, unknown>, prefix = ''): string[] {
  if (schema.type === 'array' && isMap(schema.items)) return schemaKeyPaths(schema.items, `${prefix}[]`);
  if (!isMap(schema.properties)) return [];
  return Object.entries(schema.properties).flatMap(([k, v]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    return [path, ...(isMap(v) ? schemaKeyPaths(v, path) : [])];
  });
}

/** The body of `{{- define "NAME" -}}...{{- end }}` in _helpers.tpl, for the one-line path helpers. */
function helper(name: string): string {
  const text = readText('helm/cdn-exporter/templates/_helpers.tpl');
  const m = new RegExp(`\\{\\{- define "${name}" -\\}\\}([^{]*)\\{\\{- end \\}\\}`).exec(text);
  if (!m) throw new Error(`no one-line helper ${name}`);
  return m[1]!;
}

describe('the chart renders a configuration the exporter accepts', () => {
  it('keeps the paths the test mirrors equal to the chart helpers', () => {
    expect(helper('cdn-exporter.tokenPath')).toBe(TOKEN_PATH);
    expect(helper('cdn-exporter.statePath')).toBe(STATE_PATH);
    expect(helper('cdn-exporter.passwordPath')).toBe(PASSWORD_PATH);
    expect(TOKEN_PATH.startsWith(`${helper('cdn-exporter.tokenDir')}/`)).toBe(true);
    expect(STATE_PATH.startsWith(`${helper('cdn-exporter.stateDir')}/`)).toBe(true);
  });

  it.each(ciValueFiles())('ci/%s', (file) => {
    const values = merged(file);
    const replicas = (values.sharding as { replicas: number }).replicas;
    // Every pod of the StatefulSet gets SHARD from its pod index and SHARDS from sharding.replicas.
    for (let shard = 0; shard < replicas; shard++) {
      const env: Record<string, string> =
        replicas > 1 ? { SHARD: String(shard), SHARDS: String(replicas) } : {};
      const config = load(renderedConfig(values), env);
      expect(config.sharding).toEqual({ shard, shards: replicas });
      expect(config.stateFile).toBe(STATE_PATH);
      if (values.login && (values.login as { username?: string }).username) {
        // A login: the username in the ConfigMap, the password only as a mounted file.
        expect(config.api.username).toBe((values.login as { username: string }).username);
        expect(config.api.passwordFile).toBe(PASSWORD_PATH);
        expect(config.api.password).toBeUndefined();
      } else expect(config.api.tokenFile).toBe(TOKEN_PATH);
      expect(config.api.token).toBeUndefined();
      const accounts = (values.config as { accounts: Array<{ name: string }> }).accounts;
      expect(config.accounts.map((a) => a.name)).toEqual(accounts.map((a) => a.name));
    }
  });

  it('exercises every config key the chart schema allows against the loader', () => {
    const schema = JSON.parse(readText('helm/cdn-exporter/values.schema.json')) as {
      properties: { config: Record<string, unknown> };
    };
    const allowed = new Set(schemaKeyPaths(schema.properties.config));
    // As rendered: api.token_file is set by the chart (and allowed in values); state_file only by the chart.
    const used = new Set(ciValueFiles().flatMap((f) => keyPaths(renderedConfig(merged(f)))));
    used.delete('state_file');
    expect([...allowed].filter((k) => !used.has(k))).toEqual([]);
    expect([...used].filter((k) => !allowed.has(k))).toEqual([]);
  });

  it('values.yaml alone lists no account: the exporter refuses it, as the chart does', () => {
    expect(readText('helm/cdn-exporter/templates/_helpers.tpl')).toMatch(/fail "config\.accounts:/);
    const values = mergeValues(chartValues(), { token: 't' }) as Values;
    expect(() => load(renderedConfig(values))).toThrow(ConfigError);
    expect(() => load(renderedConfig(values))).toThrow(/accounts/);
  });

  it('keys the chart schema refuses are ones the chart sets itself or that would leak the token', () => {
    // The loader accepts them; the chart's schema keeps them out of values (see chart.test.ts).
    const base = renderedConfig(merged('default-values.yaml'));
    expect(() => load({ ...base, sharding: { shard: 0, shards: 1 } })).not.toThrow();
    const misspelt = { ...base, metrics: { windw: '5m' } };
    expect(() => load(misspelt)).toThrow(/metrics\.windw: unknown key/);
  });
});

describe('the compose stack', () => {
  it('its exporter config loads with the real loader, tokens from files mounted from deploy/tokens', () => {
    const config = load(readYaml('deploy/cdn-exporter.yml'));
    expect(config.api.baseUrl).toBe('http://simulator:8080');
    expect(config.accounts.map((a) => a.name)).toEqual(['demo', 'acme']);
    const compose = readYaml('docker-compose.yml') as { services: Record<string, { volumes?: string[] }> };
    const mounts = (compose.services.exporter?.volumes ?? []).map((v) => v.split(':'));
    const tokenFiles = [
      config.api.tokenFile,
      config.api.passwordFile,
      ...config.accounts.flatMap((a) => [a.tokenFile, a.passwordFile]),
    ].filter((p): p is string => p !== undefined);
    expect(tokenFiles.length).toBeGreaterThan(0);
    for (const path of tokenFiles) {
      const mount = mounts.find(([, target]) => target && path.startsWith(`${target}/`));
      expect(mount, path).toBeDefined();
      const hostFile = `${mount![0]!.replace(/^\.\//, '')}${path.slice(mount![1]!.length)}`;
      expect(readText(hostFile).trim(), hostFile).not.toBe('');
    }
    const stateMount = mounts.find(([, target]) => target && config.stateFile?.startsWith(`${target}/`));
    expect(stateMount, 'state_file is on a volume').toBeDefined();
  });
});

/** Command lines after `node dist/src/cli.js`. */
function cliArgs(argv: string[]): string[] {
  expect(argv.slice(0, 2)).toEqual(['node', 'dist/src/cli.js']);
  return argv.slice(2);
}

/** The chart's `cdn-exporter.args` helper, rendered for `values` (the few expressions it contains). */
function chartArgs(values: Values): string[] {
  const text = readText('helm/cdn-exporter/templates/_helpers.tpl');
  const body = /\{\{- define "cdn-exporter\.args" -\}\}\n([\s\S]*?)\{\{- range \.Values\.extraArgs \}\}/.exec(
    text,
  )?.[1];
  expect(body, 'the args helper').toBeDefined();
  const rendered = body!
    .replace('{{ include "cdn-exporter.configPath" . }}', helper('cdn-exporter.configPath'))
    .replace('{{ printf ":%d" (int .Values.port) | quote }}', `:${values.port}`)
    .replace(/\{\{ \.Values\.(\w+) \}\}/g, (_, key: string) => String(values[key]));
  expect(rendered).not.toContain('{{');
  return [
    ...rendered.matchAll(/^- (.+)$/gm),
    ...(values.extraArgs as string[]).map((a) => [`- ${a}`, a]),
  ].map((m) => m[1]!);
}

describe('command lines', () => {
  const port = chartValues().port as number;

  it('the chart runs `run --config` on the configured port with known flags', () => {
    const values = mergeValues(chartValues(), { extraArgs: ['--log.level', 'debug'] }) as Values;
    const cl = parseCommandLine(cliArgs(chartArgs(values)));
    expect(cl.command).toBe('run');
    expect(cl.configFile).toBe(helper('cdn-exporter.configPath'));
    expect(cl.listen.port).toBe(port);
    expect(cl.logFormat).toBe(values.logFormat);
    expect(cl.logLevel).toBe('debug');
  });

  it('every --flag in the templates is one the exporter knows', () => {
    const templates = ['_helpers.tpl', '_pod.tpl'].map((f) => readText(`helm/cdn-exporter/templates/${f}`));
    const flags = new Set(
      templates.flatMap((t) => [...t.matchAll(/^\s*- (--[a-z][a-z.-]*)/gm)].map((m) => m[1]!)),
    );
    expect(flags.size).toBeGreaterThan(0);
    for (const flag of flags) {
      let error = '';
      try {
        parseCommandLine([flag, flag === '--web.listen-address' ? ':1' : 'info']);
      } catch (e) {
        error = (e as Error).message;
      }
      expect(error, flag).not.toMatch(/unknown flag/);
    }
  });

  it('the Dockerfile runs the exporter on the chart port', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(readText('Dockerfile'))?.[1];
    const cl = parseCommandLine(cliArgs(JSON.parse(cmd!) as string[]));
    expect(cl.command).toBe('run');
    expect(cl.listen.port).toBe(port);
  });

  it('the compose services use flags the exporter and the simulator know', () => {
    const compose = readYaml('docker-compose.yml') as { services: Record<string, { command?: string[] }> };
    const exporter = parseCommandLine(cliArgs(compose.services.exporter!.command!));
    expect(exporter.command).toBe('run');
    expect(exporter.configFile).toBe('/etc/cdn-exporter/config.yml');
    expect(exporter.listen.port).toBe(port);

    const simulate = parseCommandLine(cliArgs(compose.services.simulator!.command!));
    expect(simulate.command).toBe('simulate');
    const sim = parseSimulatorArgs(simulate.rest);
    // Reachable from the other containers, on the port the exporter's config points at.
    expect(sim.listen.host).toBe('0.0.0.0');
    const baseUrl = new URL(load(readYaml('deploy/cdn-exporter.yml')).api.baseUrl);
    expect(Number(baseUrl.port)).toBe(sim.listen.port);
    expect(baseUrl.hostname).toBe('simulator');
  });
});
