/**
 * What `docker build` and `docker compose up` would trip over, checked without Docker: one port everywhere, every
 * path the Dockerfile, the compose file and Prometheus' config name exists, and the chart's copies of the rules
 * and dashboards are the project's own (scripts/sync-chart.mjs).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findTool } from '../helpers/tools.js';
import { chartValues, ROOT, readText, readYaml } from './chart-helpers.js';

const port = chartValues().port as number;

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  volumes?: string[];
  ports?: string[];
  healthcheck?: { disable?: boolean };
}
const compose = readYaml('docker-compose.yml') as { services: Record<string, Service> };
const dockerfile = readText('Dockerfile');

/** Host side of a compose bind mount (`./x:/y:ro`), or undefined for a named volume. */
function bind(volume: string): { host: string; target: string } | undefined {
  const [host, target] = volume.split(':');
  return host?.startsWith('./') && target ? { host: host.slice(2), target } : undefined;
}

describe('Dockerfile', () => {
  it('exposes, probes and serves the chart port', () => {
    expect(dockerfile).toMatch(new RegExp(`^EXPOSE ${port}$`, 'm'));
    expect(dockerfile).toMatch(
      new RegExp(`^HEALTHCHECK .*\\n?.*fetch\\('http://127\\.0\\.0\\.1:${port}/healthz'\\)`, 'm'),
    );
  });

  it('builds in a build stage and ships production dependencies and dist/src only, as user 1000 under tini', () => {
    const stages = [...dockerfile.matchAll(/^FROM (\S+)(?: AS (\w+))?$/gm)];
    expect(stages.map((m) => m[2])).toEqual(['build', 'runtime']);
    const nodeImage = /^ARG NODE_IMAGE=(node:(\d+)\.\d+\.\d+-bookworm-slim)$/m.exec(dockerfile);
    expect(nodeImage?.[2], 'a pinned Node 24 LTS bookworm-slim tag').toBe('24');
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    expect(runtime).toMatch(/npm ci --omit=dev/);
    expect(runtime).toMatch(/apt-get install -y --no-install-recommends tini/);
    // The node image's `node` user, by number (runAsNonRoot can verify it without runAsUser).
    expect(runtime).toMatch(/^USER 1000:1000$/m);
    // Every ARG a stage reads is declared in that stage (one before the first FROM is not visible inside).
    for (const used of new Set([...runtime.matchAll(/\$\{(\w+)\}/g)].map((m) => m[1]!))) {
      expect(runtime, `ARG ${used} in the runtime stage`).toMatch(new RegExp(`^ARG ${used}(=|$)`, 'm'));
    }
    expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist\/src \.\/dist\/src$/m);
    const labels = [...dockerfile.matchAll(/org\.opencontainers\.image\.(\w+)=/g)].map((m) => m[1]);
    expect(labels).toEqual(expect.arrayContaining(['title', 'version', 'licenses']));
    const version = JSON.parse(readText('package.json')).version as string;
    expect(dockerfile).toContain(`ARG VERSION=${version}`);
  });

  it('runs the package bin, whose source exists', () => {
    const pkg = JSON.parse(readText('package.json')) as { bin: Record<string, string> };
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(cmd[1]).toBe(pkg.bin['cdn-exporter']);
    expect(existsSync(join(ROOT, cmd[1]!.replace(/^dist\//, '').replace(/\.js$/, '.ts')))).toBe(true);
  });

  it('copies only paths that exist and that .dockerignore lets into the context', () => {
    const allowed = readText('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/\*\*$/, ''));
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(existsSync(join(ROOT, src)), src).toBe(true);
      expect(allowed, src).toContain(src);
    }
  });
});

describe('docker-compose.yml', () => {
  it('runs simulator, exporter, Prometheus and Grafana', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['exporter', 'grafana', 'prometheus', 'simulator']);
    expect(compose.services.simulator?.healthcheck?.disable).toBe(true);
  });

  it('publishes the exporter on the chart port, which Prometheus scrapes', () => {
    expect(compose.services.exporter?.ports).toEqual([`${port}:${port}`]);
    const prom = readYaml('deploy/prometheus.yml') as {
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    };
    const job = prom.scrape_configs.find((j) => j.job_name === 'cdn-exporter');
    expect(job?.static_configs.flatMap((s) => s.targets)).toEqual([`exporter:${port}`]);
  });

  it('mounts only files and folders that exist', () => {
    const binds = Object.values(compose.services).flatMap((s) =>
      (s.volumes ?? []).map(bind).filter((b) => b),
    );
    expect(binds.length).toBeGreaterThan(0);
    for (const b of binds) expect(existsSync(join(ROOT, b!.host)), b!.host).toBe(true);
  });

  it('gives Prometheus the project rule file it is told to load', () => {
    const prom = readYaml('deploy/prometheus.yml') as { rule_files: string[] };
    const binds = (compose.services.prometheus?.volumes ?? []).map(bind).filter((b) => b);
    expect(prom.rule_files.length).toBeGreaterThan(0);
    for (const file of prom.rule_files) {
      const b = binds.find((x) => file.startsWith(`${x!.target}/`));
      expect(b, file).toBeDefined();
      expect(`${b!.host}${file.slice(b!.target.length)}`).toBe('rules/cdn-exporter.rules.yml');
      expect(existsSync(join(ROOT, 'rules/cdn-exporter.rules.yml'))).toBe(true);
    }
  });

  it('gives Prometheus a config that promtool accepts, with the rule file it loads', (ctx) => {
    const promtool = findTool('promtool');
    if (!promtool) return ctx.skip();
    const dir = mkdtempSync(join(tmpdir(), 'prom-config-'));
    try {
      // The container's rule path, pointed back at the repository's file.
      const config = readText('deploy/prometheus.yml').replace(
        '/etc/prometheus/rules/',
        `${join(ROOT, 'rules')}/`,
      );
      writeFileSync(join(dir, 'prometheus.yml'), config);
      const out = execFileSync(promtool, ['check', 'config', join(dir, 'prometheus.yml')], {
        encoding: 'utf8',
      });
      expect(out).toMatch(/SUCCESS: 1 rule files found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("points Grafana's provisioning at the mounted dashboards and at the compose Prometheus", () => {
    const binds = (compose.services.grafana?.volumes ?? []).map(bind).filter((b) => b);
    const provisioning = binds.find((b) => b!.host === 'grafana/provisioning');
    expect(provisioning?.target).toBe('/etc/grafana/provisioning');
    const dashboardsMount = binds.find((b) => b!.host === 'grafana/dashboards');
    expect(dashboardsMount).toBeDefined();
    const yamls = (dir: string) =>
      existsSync(join(ROOT, dir))
        ? readdirSync(join(ROOT, dir))
            .filter((f) => /\.ya?ml$/.test(f))
            .map((f) => readYaml(`${dir}/${f}`) as Record<string, unknown>)
        : [];
    const providers = yamls('grafana/provisioning/dashboards').flatMap(
      (d) => (d.providers ?? []) as Array<{ options?: { path?: string } }>,
    );
    expect(providers.length, 'a dashboard provider in grafana/provisioning/dashboards').toBeGreaterThan(0);
    for (const p of providers) expect(p.options?.path?.startsWith(dashboardsMount!.target)).toBe(true);
    const sources = yamls('grafana/provisioning/datasources').flatMap(
      (d) => (d.datasources ?? []) as Array<{ type?: string; url?: string }>,
    );
    const prometheus = sources.filter((s) => s.type === 'prometheus');
    expect(prometheus.length, 'a Prometheus datasource in grafana/provisioning/datasources').toBeGreaterThan(
      0,
    );
    for (const s of prometheus) expect(s.url).toBe('http://prometheus:9090');
  });
});

describe('the chart copies of rules and dashboards (npm run chart:sync)', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const files = (dir: string) =>
    existsSync(join(ROOT, dir))
      ? readdirSync(join(ROOT, dir))
          .filter((f) => f.endsWith('.json'))
          .sort()
      : [];

  it('are identical to rules/ and grafana/dashboards/', () => {
    const rule = 'cdn-exporter.rules.yml';
    expect(readText(`helm/cdn-exporter/files/rules/${rule}`), 'run npm run chart:sync').toBe(
      readText(`rules/${rule}`),
    );
    const sources = files('grafana/dashboards');
    expect(sources.length, 'dashboards in grafana/dashboards').toBeGreaterThan(0);
    expect(files('helm/cdn-exporter/files/dashboards'), 'run npm run chart:sync').toEqual(sources);
    for (const f of sources) {
      expect(readText(`helm/cdn-exporter/files/dashboards/${f}`), `${f}: run npm run chart:sync`).toBe(
        readText(`grafana/dashboards/${f}`),
      );
    }
  });

  it('are kept by the sync script: copies, removes stale ones, and --check fails on a difference', () => {
    const root = mkdtempSync(join(tmpdir(), 'sync-chart-'));
    dirs.push(root);
    for (const d of ['scripts', 'rules', 'grafana/dashboards', 'helm/cdn-exporter/files/dashboards']) {
      mkdirSync(join(root, d), { recursive: true });
    }
    writeFileSync(join(root, 'scripts/sync-chart.mjs'), readFileSync(join(ROOT, 'scripts/sync-chart.mjs')));
    writeFileSync(join(root, 'rules/cdn-exporter.rules.yml'), 'groups: []\n');
    writeFileSync(join(root, 'grafana/dashboards/a.json'), '{"title":"a"}\n');
    writeFileSync(join(root, 'helm/cdn-exporter/files/dashboards/old.json'), '{}\n');
    const run = (...args: string[]) => {
      try {
        execFileSync(process.execPath, [join(root, 'scripts/sync-chart.mjs'), ...args], { stdio: 'pipe' });
        return { code: 0, stderr: '' };
      } catch (e) {
        const err = e as { status: number; stderr: Buffer };
        return { code: err.status, stderr: err.stderr.toString() };
      }
    };
    const check = run('--check');
    expect(check.code).toBe(1);
    expect(check.stderr).toContain('helm/cdn-exporter/files/dashboards/old.json');
    expect(run().code).toBe(0);
    expect(readdirSync(join(root, 'helm/cdn-exporter/files/dashboards'))).toEqual(['a.json']);
    expect(readFileSync(join(root, 'helm/cdn-exporter/files/rules/cdn-exporter.rules.yml'), 'utf8')).toBe(
      'groups: []\n',
    );
    expect(run('--check').code).toBe(0);
    writeFileSync(join(root, 'grafana/dashboards/a.json'), '{"title":"b"}\n');
    const changed = run('--check');
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('files/dashboards/a.json');
  });
});
