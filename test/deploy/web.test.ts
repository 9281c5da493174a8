/**
 * The chart's web config (values `web`): the file it generates is one the exporter loads and Debian's promtool
 * accepts (with certificates made by openssl where the chart would mount them); the Secret mounts are directories
 * (so a renewed certificate reaches the pod); the probes and the ServiceMonitor follow TLS and basic auth; the schema
 * refuses what the exporter would.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { silentLogger } from '../../src/log.js';
import { WebConfigSource } from '../../src/web/source.js';
import { makePki } from '../helpers/certs.js';
import { findTool } from '../helpers/tools.js';
import {
  chartValues,
  type Layer,
  layered,
  mergeValues,
  ROOT,
  readText,
  readYaml,
  renderedWebConfig,
  type Values,
} from './chart-helpers.js';
import { findHelms, renderManifest } from './helm.js';

const promtool = findTool('promtool');
const tlsValues = () =>
  mergeValues(chartValues(), readYaml('helm/cdn-exporter/ci/tls-values.yaml')) as Values;
const mtlsValues = () =>
  mergeValues(tlsValues(), {
    web: { tls: { clientAuthType: 'RequireAndVerifyClientCert', clientCA: true, minVersion: 'TLS13' } },
  }) as Values;
const authOnlyValues = () =>
  mergeValues(chartValues(), {
    web: {
      basicAuth: { users: { prometheus: '$2y$10$QqOjSlExvJm4IOQYWji6VOrfidVAup230n9czDRMrQqHsS2YAM7Ee' } },
    },
  }) as Values;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-chart-web-'));
  // As a cert-manager Secret mounted at the chart's tls directory: tls.crt, tls.key, ca.crt.
  makePki(dir).issue('tls');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the generated web-config.yml', () => {
  it.each([
    ['ci/tls-values.yaml', tlsValues, true],
    ['mutual TLS', mtlsValues, true],
    ['basic auth without TLS', authOnlyValues, false],
  ] as const)('%s: the exporter loads it and promtool check web-config accepts it', (name, values, tls) => {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.yml`);
    writeFileSync(file, stringify(renderedWebConfig(values(), dir)));
    const source = new WebConfigSource(file, silentLogger);
    const state = source.current();
    expect(Boolean(state.tls)).toBe(tls);
    expect([...state.config.users.keys()]).toEqual(['prometheus']);
    if (promtool) {
      const run = spawnSync(promtool, ['check', 'web-config', file], { encoding: 'utf8' });
      expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
      expect(`${run.stdout}${run.stderr}`).toContain('SUCCESS');
    }
  });

  it('has no web config at all by default (plain HTTP, as before)', () => {
    const values = chartValues();
    const web = values.web as {
      tls: { enabled: boolean };
      basicAuth: { users: object };
      existingConfigSecret: string;
    };
    expect(web.tls.enabled).toBe(false);
    expect(web.basicAuth.users).toEqual({});
    expect(web.existingConfigSecret).toBe('');
    expect(readText('helm/cdn-exporter/templates/_helpers.tpl')).toMatch(
      /define "cdn-exporter.webEnabled" -\}\}\n\{\{- if or \.Values\.web\.existingConfigSecret \.Values\.web\.tls\.enabled \.Values\.web\.basicAuth\.users -\}\}true/,
    );
  });
});

describe('templates', () => {
  const pod = readText('helm/cdn-exporter/templates/_pod.tpl');
  const helpers = readText('helm/cdn-exporter/templates/_helpers.tpl');

  it('mount the web config and the certificate Secrets as directories, so renewals reach the exporter', () => {
    expect(pod).toMatch(
      /- name: web-config\n\s+mountPath: \{\{ include "cdn-exporter.webConfigDir" \. \}\}\n\s+readOnly: true\n/,
    );
    expect(pod).toMatch(
      /- name: web-tls\n\s+mountPath: \{\{ include "cdn-exporter.tlsDir" \. \}\}\n\s+readOnly: true\n/,
    );
    expect(pod).toMatch(
      /secretName: \{\{ required "web.tls.existingSecret is required when web.tls.enabled"/,
    );
    expect(helpers).toMatch(/define "cdn-exporter.tlsDir" -\}\}\/etc\/cdn-exporter\/tls\{\{/);
  });

  it('pass --web.config.file at the mounted path, and --web.healthz-open when asked', () => {
    expect(helpers).toMatch(
      /- --web.config.file\n- \{\{ printf "%s\/%s" \(include "cdn-exporter.webConfigDir" \.\) \.Values\.web\.existingConfigSecretKey \| quote \}\}\n\{\{- if \.Values\.web\.healthzOpen \}\}\n- --web.healthz-open/,
    );
  });

  it('probe over HTTPS with TLS, and with TCP when kubelet cannot pass (client certificates required)', () => {
    expect(pod.match(/scheme: \{\{ include "cdn-exporter.webScheme" \. \}\}/g)).toHaveLength(2);
    expect(
      pod.match(/\{\{- if include "cdn-exporter.webProbeTcp" \. \}\}\n\s+tcpSocket:\n\s+port: http-metrics/g),
    ).toHaveLength(2);
    expect(helpers).toMatch(
      /has \.Values\.web\.tls\.clientAuthType \(list "RequireAnyClientCert" "RequireAndVerifyClientCert"\)/,
    );
  });
});

const TLS = 'helm/cdn-exporter/ci/tls-values.yaml';
const RELEASE = { name: 'cdn', namespace: 'monitoring' };

describe.each(findHelms())('as Helm $version renders it', ({ bin }) => {
  it.each([
    ['ci/tls-values.yaml', [TLS]],
    [
      'mutual TLS',
      [
        TLS,
        {
          web: { tls: { clientAuthType: 'RequireAndVerifyClientCert', clientCA: true, minVersion: 'TLS13' } },
        },
      ],
    ],
    [
      'basic auth without TLS',
      [
        'helm/cdn-exporter/ci/default-values.yaml',
        {
          web: {
            basicAuth: {
              users: { prometheus: '$2y$10$QqOjSlExvJm4IOQYWji6VOrfidVAup230n9czDRMrQqHsS2YAM7Ee' },
            },
          },
        },
      ],
    ],
  ] as Array<[string, Layer[]]>)(
    '%s: the web Secret holds the web-config.yml tested above',
    (_name, layers) => {
      const secret = renderManifest(bin, 'web-secret.yaml', layers, RELEASE) as {
        data: Record<string, string>;
      };
      const file = Buffer.from(secret.data['web-config.yml']!, 'base64').toString('utf8');
      expect(parse(file)).toEqual(renderedWebConfig(layered(...layers)));
    },
  );

  it('the ServiceMonitor scrapes with scheme https, tlsConfig and basicAuth from web.serviceMonitor', () => {
    const tlsConfig = { ca: { secret: { name: 'cdn-tls', key: 'ca.crt' } }, serverName: 'cdn-exporter' };
    const basicAuth = {
      username: { name: 'scrape', key: 'username' },
      password: { name: 'scrape', key: 'password' },
    };
    const endpoint = (over: Values) => {
      const layers: Layer[] = [
        'helm/cdn-exporter/ci/default-values.yaml',
        mergeValues({ serviceMonitor: { enabled: true } }, over) as Values,
      ];
      const sm = renderManifest(bin, 'servicemonitor.yaml', layers, RELEASE) as {
        spec: { endpoints: Array<Record<string, unknown>> };
      };
      return sm.spec.endpoints[0]!;
    };
    // TLS on: https, and what web.serviceMonitor says.
    const web = endpoint({
      web: { tls: { enabled: true, existingSecret: 'cdn-tls' }, serviceMonitor: { tlsConfig, basicAuth } },
    });
    expect(web.scheme).toBe('https');
    expect(web.tlsConfig).toEqual(tlsConfig);
    expect(web.basicAuth).toEqual(basicAuth);
    // TLS off: plain http and no tlsConfig, even when web.serviceMonitor has one.
    const plain = endpoint({ web: { serviceMonitor: { tlsConfig } } });
    expect(plain.scheme).toBe('http');
    expect(plain.tlsConfig).toBeUndefined();
    // serviceMonitor's own pass-through wins over the web block's.
    const own = { insecureSkipVerify: true };
    expect(
      endpoint({
        web: { tls: { enabled: true, existingSecret: 'cdn-tls' }, serviceMonitor: { tlsConfig } },
        serviceMonitor: { tlsConfig: own },
      }).tlsConfig,
    ).toEqual(own);
  });
});

describe('values.schema.json for web', () => {
  const schema = JSON.parse(readText('helm/cdn-exporter/values.schema.json')) as object;
  const validate = new Ajv({ allErrors: true, strict: true }).compile(schema);
  const errors = (over: unknown) =>
    validate(mergeValues(chartValues(), over)) ? '' : JSON.stringify(validate.errors);

  it('accepts the ci scenario and refuses what the exporter would refuse', () => {
    expect(errors(readYaml('helm/cdn-exporter/ci/tls-values.yaml'))).toBe('');
    expect(errors({ web: { tls: { enabled: true } } })).toContain('existingSecret');
    expect(errors({ web: { basicAuth: { users: { alice: 'plain-password' } } } })).toContain('pattern');
    expect(errors({ web: { headers: { 'Content-Type': 'text/plain' } } })).toContain('additional');
    expect(errors({ web: { headers: { 'X-Frame-Options': 'allow' } } })).toContain('enum');
    expect(errors({ web: { tls: { clientAuthType: 'Sometimes' } } })).toContain('enum');
  });
});

describe('the TLS compose example', () => {
  it('make-certs.sh and deploy/web-config.yml give a server the exporter loads and promtool accepts', () => {
    const at = mkdtempSync(join(tmpdir(), 'cdn-compose-tls-'));
    try {
      const tlsDir = join(at, 'tls');
      mkdirSync(tlsDir);
      const made = spawnSync('sh', [join(ROOT, 'deploy/tls/make-certs.sh'), tlsDir], { encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
      const file = join(at, 'web-config.yml');
      copyFileSync(join(ROOT, 'deploy/web-config.yml'), file);
      const state = new WebConfigSource(file, silentLogger).current();
      expect(state.config.tls?.certFile).toBe(join(tlsDir, 'server.crt'));
      expect([...state.config.users.keys()]).toEqual(['prometheus']);
      if (promtool) {
        const run = spawnSync(promtool, ['check', 'web-config', file], { encoding: 'utf8' });
        expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
      }
    } finally {
      rmSync(at, { recursive: true, force: true });
    }
  });

  it('the override mounts what the files name, and Prometheus scrapes with https, the CA and the password', () => {
    const override = readYaml('docker-compose.tls.yml') as {
      services: { exporter: { command: string[]; volumes: string[] }; prometheus: { volumes: string[] } };
    };
    const cmd = override.services.exporter.command;
    expect(cmd[cmd.indexOf('--web.config.file') + 1]).toBe('/etc/cdn-exporter/web/web-config.yml');
    expect(override.services.exporter.volumes).toContain('./deploy/tls:/etc/cdn-exporter/web/tls:ro');
    const prom = readYaml('deploy/prometheus-tls.yml') as { scrape_configs: Record<string, unknown>[] };
    const job = prom.scrape_configs.find((j) => j.job_name === 'cdn-exporter')!;
    expect(job).toMatchObject({
      scheme: 'https',
      tls_config: { ca_file: '/etc/prometheus/tls/ca.crt', server_name: 'exporter' },
      basic_auth: { username: 'prometheus', password: 'compose-demo-password' },
    });
    expect(override.services.prometheus.volumes).toContain(
      './deploy/tls/ca.crt:/etc/prometheus/tls/ca.crt:ro',
    );
  });
});
