/**
 * What `docker build` and `docker compose up` would trip over, checked without Docker: one port everywhere, every
 * path the Dockerfile, the compose file and Prometheus' config name exists, and the chart's copies of the rules
 * and dashboards are the project's own (scripts/sync-chart.mjs). And what the image is made of: it pulls nothing
 * but its base (no `# syntax=` frontend), pins tini, labels its base as built, and its runtime stage holds no
 * package manager, no dev dependency and no bench.
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

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  image: string;
  name: string;
  body: Instruction[];
}

/** The Dockerfile's instructions: comments and blank lines dropped, `\\`-continued lines joined (as Docker does). */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line) || (!pending && !line.trim())) continue;
    pending += pending ? ` ${line.trim()}` : line.trim();
    if (pending.endsWith('\\')) {
      pending = pending.slice(0, -1).trimEnd();
      continue;
    }
    const m = /^(\S+)\s+(.*)$/.exec(pending)!;
    out.push({ op: m[1]!.toUpperCase(), args: m[2]! });
    pending = '';
  }
  return out;
}

/** The stages: FROM's image and name, then the instructions up to the next FROM. */
function dockerStages(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const i of instructions(text)) {
    const from = i.op === 'FROM' ? /^(\S+)(?: AS (\w+))?$/i.exec(i.args) : null;
    if (from) stages.push({ image: from[1]!, name: from[2] ?? '', body: [] });
    else stages.at(-1)?.body.push(i);
  }
  return stages;
}

const stages = dockerStages(dockerfile);
const stage = (name: string) => stages.find((st) => st.name === name)!;
const runtime = stage('runtime');
const deps = stage('deps');

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

  it('builds in a build stage, production dependencies in a deps stage, and runs as user 1000 under tini', () => {
    expect(stages.map((st) => st.name)).toEqual(['build', 'deps', 'runtime']);
    // The node image's `node` user, by number (runAsNonRoot can verify it without runAsUser).
    expect(runtime.body).toContainEqual({ op: 'USER', args: '1000:1000' });
    expect(runtime.body).toContainEqual({ op: 'ENTRYPOINT', args: '["/usr/bin/tini", "--"]' });
    // Every ARG a stage reads is declared in that stage (one before the first FROM is not visible inside).
    for (const stage of stages) {
      const declared = new Set(stage.body.filter((i) => i.op === 'ARG').map((i) => i.args.split('=')[0]));
      for (const i of stage.body.filter((x) => x.op !== 'ARG')) {
        for (const m of i.args.matchAll(/\$\{(\w+)\}/g))
          expect(declared, `${stage.name}: ${i.op} ${i.args}`).toContain(m[1]);
      }
    }
    const labels = [...dockerfile.matchAll(/org\.opencontainers\.image\.(\w+(?:\.\w+)?)=/g)].map((m) => m[1]);
    expect(labels).toEqual(expect.arrayContaining(['title', 'version', 'licenses', 'base.name']));
    const version = JSON.parse(readText('package.json')).version as string;
    expect(runtime.body).toContainEqual({ op: 'ARG', args: `VERSION=${version}` });
  });

  it('pulls no image but its base: no `# syntax=` frontend, every stage from NODE_IMAGE, COPY --from only stages', () => {
    // A parser directive is a comment line before the first instruction; any `# syntax=` line is refused here.
    expect(dockerfile).not.toMatch(/^#\s*syntax\s*=/im);
    expect(stages.map((st) => st.image)).toEqual([`\${NODE_IMAGE}`, `\${NODE_IMAGE}`, `\${NODE_IMAGE}`]);
    const names = new Set(stages.map((st) => st.name));
    for (const stage of stages)
      for (const i of stage.body.filter((x) => x.op === 'COPY' && x.args.startsWith('--from=')))
        expect(names, i.args).toContain(/^--from=(\S+)/.exec(i.args)![1]);
  });

  it('a pinned Node 24 LTS bookworm-slim base by its full reference, which the base-image label gives as built', () => {
    const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
    expect(arg, 'a full reference to a pinned Node 24 LTS bookworm-slim tag').toMatch(
      /^docker\.io\/library\/node:24\.\d+\.\d+-bookworm-slim$/,
    );
    const label = /org\.opencontainers\.image\.base\.name="([^"]*)"/.exec(dockerfile)![1]!;
    // What `docker build --build-arg NODE_IMAGE=...` writes into the label: the reference as given, never prefixed.
    const expand = (value: string, args: Record<string, string>) =>
      value.replace(/\$\{(\w+)\}/g, (_, name: string) => args[name] ?? '');
    for (const image of [
      arg!,
      'registry.example/mirror/node:24.21.0-bookworm-slim',
      `docker.io/library/node@sha256:${'0'.repeat(64)}`,
    ])
      expect(expand(label, { NODE_IMAGE: image })).toBe(image);
  });

  it('installs tini pinned to its Debian bookworm version, and nothing unpinned', () => {
    const tini = runtime.body.find((i) => i.op === 'ARG' && i.args.startsWith('TINI_VERSION='));
    // `apt-cache policy tini` on bookworm: 0.19.0-1+b3.
    expect(tini?.args).toBe('TINI_VERSION=0.19.0-1+b3');
    const installs = stages.flatMap((st) =>
      st.body
        .filter((i) => i.op === 'RUN')
        .flatMap((i) => [...i.args.matchAll(/apt-get install ([^&]+)/g)].map((m) => m[1]!)),
    );
    expect(installs).toHaveLength(1);
    const packages = installs[0]!.split(/\s+/).filter((w) => w && !w.startsWith('-'));
    expect(packages).toEqual([`"tini=\${TINI_VERSION}"`]);
  });

  it('the runtime stage runs no npm and carries no package manager, no dev dependency and no bench', () => {
    const runs = runtime.body.filter((i) => i.op === 'RUN').map((i) => i.args);
    // No package manager is run (the paths rm removes name them).
    for (const run of runs)
      expect(run.replace(/rm -rf [^&]*/g, ''), run).not.toMatch(/\b(npm|npx|yarn|corepack|pnpm)\b/);
    const removed = runs.flatMap((r) =>
      [...r.matchAll(/rm -rf ([^&]*)/g)].flatMap((m) => m[1]!.split(/[\s\\]+/).filter(Boolean)),
    );
    expect(removed).toEqual(
      expect.arrayContaining([
        '/usr/local/lib/node_modules/npm',
        '/usr/local/bin/npm',
        '/usr/local/bin/npx',
        '/usr/local/lib/node_modules/corepack',
        '/usr/local/bin/corepack',
        '/opt/yarn-v*',
        '/usr/local/bin/yarn',
        '/usr/local/bin/yarnpkg',
      ]),
    );
    // What it copies: package.json and LICENSE from the context, node_modules from deps, dist/src from build.
    const copies = runtime.body.filter((i) => i.op === 'COPY').map((i) => i.args);
    expect(copies).toEqual([
      'package.json ./',
      '--from=deps /app/node_modules ./node_modules',
      '--from=build /app/dist/src ./dist/src',
      'LICENSE ./',
    ]);
    // deps installs the lockfile's production dependencies from package.json and the lockfile alone (no bench, no src).
    expect(deps.body.filter((i) => i.op === 'COPY').map((i) => i.args)).toEqual([
      'package.json package-lock.json ./',
    ]);
    expect(deps.body.filter((i) => i.op === 'RUN').map((i) => i.args)).toEqual([
      'npm ci --omit=dev --ignore-scripts --no-audit --no-fund',
    ]);
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
