/**
 * The chart checked by the real Helm, both majors (Helm 4: HELM_BIN, Helm 3: HELM3_BIN; .ci/run fetches them with
 * .ci/fetch-helm.sh): `helm lint --strict` with values.yaml alone and with each ci/*-values.yaml; `helm template`
 * with each, every rendered manifest valid against its Kubernetes or prometheus-operator schema with no unknown
 * field (test/deploy/k8s-schema.ts); the refusals a user meets. And the NOTES Helm 4 prints after an install: the
 * curl commands it gives are run against the exporter's web server behind the web config the chart generates.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { WebConfigSource } from '../../src/web/source.js';
import { makePki } from '../helpers/certs.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { noteSkip } from '../helpers/skip-log.js';
import { ciValueFiles, type Layer, type Release, TLS_DIR } from './chart-helpers.js';
import { findHelms, helmNotes, helmTemplate, helmWithValues, renderManifest, runHelm } from './helm.js';
import { manifestErrors } from './k8s-schema.js';

const RELEASE: Release = { name: 'cdn', namespace: 'monitoring' };
const CHART = 'helm/cdn-exporter';
const CI = ciValueFiles().map((f) => `${CHART}/ci/${f}`);
const DEFAULT = `${CHART}/ci/default-values.yaml`;
const TLS = `${CHART}/ci/tls-values.yaml`;
const helms = findHelms();
/** What `helm template` is checked with: each ci values file, and a claim of its own for a Deployment's state. */
const SCENARIOS: Array<[string, Layer[]]> = [
  ...CI.map((file): [string, Layer[]] => [file, [file]]),
  ['persistence.enabled with one replica', [DEFAULT, { persistence: { enabled: true } }]],
];

describe('the strict schema check (test/deploy/k8s-schema.ts)', () => {
  const deployment = () => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'x', labels: { 'any/label': 'is fine' }, annotations: { note: 'so is this' } },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: { containers: [{ name: 'x', image: 'x', livenessProbe: { httpGet: { path: '/', port: 1 } } }] },
      },
    },
  });

  it('accepts a valid manifest, free-form maps (labels, annotations) included', () => {
    expect(manifestErrors(deployment())).toEqual([]);
  });

  it('names an unknown field, a field one level off, and a wrong type, each with its path', () => {
    const doc = deployment();
    (doc.spec.template.spec.containers[0]!.livenessProbe as Record<string, unknown>).httpGett = {};
    (doc.spec as Record<string, unknown>).containers = [];
    (doc.spec as Record<string, unknown>).replicas = 'two';
    expect(manifestErrors(doc).sort()).toEqual([
      '/spec/containers: unknown field',
      '/spec/template/spec/containers/0/livenessProbe/httpGett: unknown field',
      'data/spec/replicas must be integer',
    ]);
  });

  it('checks the prometheus-operator kinds as strictly', () => {
    const monitor = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: 'x' },
      spec: {
        selector: {},
        scrapeProtocols: ['Protobuf'],
        endpoints: [
          { port: 'http-metrics', tlsconfig: {}, basicAuth: { username: { name: 'a', key: 'b' } } },
        ],
      },
    };
    const errors = manifestErrors(monitor);
    expect(errors).toContain('/spec/endpoints/0/tlsconfig: unknown field');
    expect(errors.join('\n')).toMatch(
      /data\/spec\/scrapeProtocols\/0 must be equal to one of the allowed values/,
    );
    expect(errors).toHaveLength(2);
  });

  it('refuses a kind it has no schema for', () => {
    expect(manifestErrors({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toEqual([
      'v1/Pod: no schema for this kind',
    ]);
  });
});

describe.each(helms)('Helm $version', ({ bin }) => {
  it.each([CHART, ...CI])('lint --strict passes with %s', (values) => {
    const run = runHelm(bin, ['lint', '--strict', CHART, ...(values === CHART ? [] : ['-f', values])]);
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('template with values.yaml alone fails: it lists no account, on purpose', () => {
    expect(() => helmTemplate(bin, [], RELEASE)).toThrow(
      /config\.accounts: list at least one account to poll/,
    );
  });

  it.each(SCENARIOS)('template with %s: every manifest passes its schema strictly', (_name, layers) => {
    const docs = helmTemplate(bin, layers, RELEASE);
    expect(docs.length).toBeGreaterThanOrEqual(4);
    const errors = docs.flatMap(({ source, doc }) => manifestErrors(doc).map((e) => `${source}: ${e}`));
    expect(errors).toEqual([]);
  });

  it('those values together render every kind the chart makes', () => {
    const kinds = new Set(
      SCENARIOS.flatMap(([, layers]) => helmTemplate(bin, layers, RELEASE).map((r) => r.doc.kind)),
    );
    expect(kinds).toEqual(
      new Set([
        'ConfigMap',
        'Deployment',
        'PersistentVolumeClaim',
        'PodDisruptionBudget',
        'PrometheusRule',
        'Secret',
        'Service',
        'ServiceAccount',
        'ServiceMonitor',
        'StatefulSet',
      ]),
    );
  });

  it('a ServiceMonitor in another namespace, with TLS and basic auth, passes its schema too', () => {
    const monitor = renderManifest(
      bin,
      'servicemonitor.yaml',
      [TLS, { serviceMonitor: { namespace: 'prom' } }],
      RELEASE,
    );
    expect((monitor!.metadata as { namespace: string }).namespace).toBe('prom');
    expect(manifestErrors(monitor!)).toEqual([]);
  });

  it('refuses sharding on a Kubernetes older than 1.28, and what the schema refuses', () => {
    expect(() =>
      helmTemplate(bin, [`${CHART}/ci/sharded-values.yaml`], RELEASE, ['--kube-version', '1.27.0']),
    ).toThrow(/sharding.replicas > 1 needs Kubernetes >= 1.28/);
    const run = helmWithValues(
      bin,
      ['template', 'cdn', CHART],
      [DEFAULT, { config: { api: { token: 'x' } } }],
    );
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/values don't meet the specifications of the schema/);
  });
});

const helm4 = helms.find((h) => h.major === 4);
/** The curl commands of the NOTES, without the pipe into grep. */
const curls = (notes: string) => [...notes.matchAll(/^ {2}(curl [^|\n]*?)(?: \|.*)?$/gm)].map((m) => m[1]!);

describe.skipIf(!helm4)('NOTES.txt as Helm 4 prints it after install --dry-run=client', () => {
  const notes = (...layers: Layer[]) => helmNotes(helm4!, layers, RELEASE);

  it('plain HTTP: curl of /metrics and /readyz through the port-forward, no TLS or auth flags', () => {
    const text = notes(DEFAULT);
    expect(text).toContain('kubectl -n monitoring port-forward svc/cdn-cdn-exporter 9877');
    expect(curls(text)).toEqual([
      'curl -s http://127.0.0.1:9877/metrics',
      'curl -s http://127.0.0.1:9877/readyz',
    ]);
    expect(text).not.toContain('The curl flags');
  });

  it('ci/tls-values.yaml: https with -k, and -u with the web user; each flag explained', () => {
    const text = notes(TLS);
    expect(curls(text)).toEqual([
      'curl -sk -u prometheus https://127.0.0.1:9877/metrics',
      'curl -sk -u prometheus https://127.0.0.1:9877/readyz',
    ]);
    expect(text).toMatch(/^ {2}-k: the certificate names the Service, not 127\.0\.0\.1/m);
    expect(text).toMatch(/^ {2}-u: curl asks for the password of web user prometheus/m);
  });

  it('a client certificate required: --cert and --key, and which CA signs it', () => {
    const text = notes(TLS, {
      web: { tls: { clientAuthType: 'RequireAndVerifyClientCert', clientCA: true } },
    });
    expect(curls(text)[0]).toBe(
      'curl -sk --cert client.crt --key client.key -u prometheus https://127.0.0.1:9877/metrics',
    );
    expect(text).toContain('wants a client certificate signed by ca.crt of Secret cdn-exporter-tls.');
    // A client certificate only asked for, not required: curl needs none.
    const optional = notes(TLS, {
      web: { tls: { clientAuthType: 'VerifyClientCertIfGiven', clientCA: true } },
    });
    expect(curls(optional)[0]).toBe('curl -sk -u prometheus https://127.0.0.1:9877/metrics');
  });

  it("the web config in the user's own Secret: -u USER, since the chart does not know its users", () => {
    const text = notes(DEFAULT, { web: { existingConfigSecret: 'my-web-config' } });
    expect(curls(text)[0]).toBe('curl -s -u USER http://127.0.0.1:9877/metrics');
    expect(text).toMatch(/-u USER: a user of basic_auth_users in Secret my-web-config/);
  });

  it('a ServiceMonitor in another namespace warns that the operator reads the TLS and basic-auth Secrets there', () => {
    const text = notes(TLS, { serviceMonitor: { namespace: 'prom' } });
    expect(text).toMatch(
      /^WARNING: the ServiceMonitor is in namespace prom, the release in monitoring\. prometheus-operator\nreads the Secrets and ConfigMaps of its tlsConfig and basicAuth from the ServiceMonitor's namespace: create\nSecret cdn-exporter-tls, Secret cdn-exporter-scrape in prom too/m,
    );
    // serviceMonitor's own tlsConfig and basicAuth: their Secrets and ConfigMaps, each named once.
    const own = notes(TLS, {
      serviceMonitor: {
        namespace: 'prom',
        tlsConfig: {
          ca: { configMap: { name: 'ca-bundle', key: 'ca.crt' } },
          cert: { secret: { name: 'scrape-client', key: 'tls.crt' } },
          keySecret: { name: 'scrape-client', key: 'tls.key' },
        },
        basicAuth: { username: { name: 'auth', key: 'u' }, password: { name: 'auth', key: 'p' } },
      },
    });
    expect(own).toContain('create\nConfigMap ca-bundle, Secret scrape-client, Secret auth in prom too');
  });

  it('no such warning in the release namespace, nor for a ServiceMonitor that names no Secret', () => {
    expect(notes(TLS, { serviceMonitor: { namespace: 'monitoring' } })).not.toContain('WARNING');
    expect(notes(DEFAULT, { serviceMonitor: { enabled: true, namespace: 'prom' } })).not.toContain('WARNING');
  });
});

/** Runs `command` with sh in a session of its own (no terminal: curl reads the password it asks for from stdin). */
function shell(
  command: string,
  cwd: string,
  input: string,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
    child.stdin.end(input);
  });
}

function hasCurl(): boolean {
  try {
    execFileSync('sh', ['-c', 'command -v curl'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const curlAtHand = hasCurl();
if (helm4 && !curlAtHand)
  noteSkip('curl not found (apt-get install curl): the NOTES curl commands are not run');

describe.skipIf(!helm4 || !curlAtHand)(
  'the NOTES curl commands, run against the exporter behind the chart web config',
  () => {
    /** The password of ci/tls-values.yaml's user prometheus (its comment says how the hash was made). */
    const PASSWORD = 'ci-only-password';
    let dir = '';
    let server: WebServer | undefined;
    let port = 0;

    /** Serves the exporter app with the web config Helm renders for `layers`, its TLS files in `dir`. */
    async function serve(layers: Layer[]): Promise<void> {
      const secret = renderManifest(helm4!.bin, 'web-secret.yaml', layers, RELEASE) as {
        data: Record<string, string>;
      };
      const config = Buffer.from(secret.data['web-config.yml']!, 'base64').toString('utf8');
      const file = join(dir, 'web-config.yml');
      writeFileSync(file, config.split(TLS_DIR).join(dir));
      server = await startWebServer({
        app: exporterApp(silentLogger),
        listen: { host: '127.0.0.1', port: 0 },
        source: new WebConfigSource(file, silentLogger),
        openPaths: new Set(['/healthz']),
        log: silentLogger,
      });
      port = (server.server.address() as AddressInfo).port;
    }

    /** The NOTES' curl commands for `layers`, pointed at the test's port instead of the port-forward's. */
    const commands = (layers: Layer[]) =>
      curls(helmNotes(helm4!, layers, RELEASE)).map((c) => c.replace('127.0.0.1:9877', `127.0.0.1:${port}`));

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'cdn-chart-notes-'));
      // What the chart mounts at its TLS directory (a cert-manager Secret): tls.crt, tls.key, ca.crt; and a client's.
      const pki = makePki(dir);
      pki.issue('tls');
      pki.issue('client', { client: true });
    });
    afterAll(async () => {
      await server?.close(0);
      server = undefined;
      rmSync(dir, { recursive: true, force: true });
    });

    it('ci/tls-values.yaml: they get the metrics and readiness; without -u or -k they do not', async () => {
      await serve([TLS]);
      try {
        const [metrics, readyz] = commands([TLS]);
        const got = await shell(metrics!, dir, `${PASSWORD}\n`);
        expect(got.code).toBe(0);
        expect(got.stdout).toMatch(/^# TYPE cdn_edge_requests_total counter$/m);
        expect((await shell(readyz!, dir, `${PASSWORD}\n`)).stdout).toBe('ready\n');
        // Each flag is needed: without the password the exporter refuses, without -k curl does.
        const noAuth = await shell(metrics!.replace(' -u prometheus', ''), dir, '');
        expect(noAuth.stdout).not.toContain('cdn_edge_requests_total');
        expect((await shell(metrics!.replace('curl -sk', 'curl -s'), dir, `${PASSWORD}\n`)).code).toBe(60);
      } finally {
        await server?.close(0);
        server = undefined;
      }
    });

    it('mutual TLS: with the client certificate of --cert and --key', async () => {
      const layers: Layer[] = [
        TLS,
        { web: { tls: { clientAuthType: 'RequireAndVerifyClientCert', clientCA: true } } },
      ];
      await serve(layers);
      try {
        const [metrics] = commands(layers);
        expect(metrics).toContain('--cert client.crt --key client.key');
        const got = await shell(metrics!, dir, `${PASSWORD}\n`);
        expect(got.code).toBe(0);
        expect(got.stdout).toMatch(/^# TYPE cdn_edge_requests_total counter$/m);
        const noCert = await shell(
          metrics!.replace(' --cert client.crt --key client.key', ''),
          dir,
          `${PASSWORD}\n`,
        );
        expect(noCert.code).not.toBe(0);
      } finally {
        await server?.close(0);
        server = undefined;
      }
    });
  },
);
