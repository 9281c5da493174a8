/**
 * The Node.js floor, as a newcomer meets it. The project's npm scripts run their tools with the Node 24 that
 * `npm ci` installs (the `node` devDependency), so the README's commands work when the machine's own Node is
 * older; the installed exporter states its true floor in `engines` and, started on an older Node, exits 2 with
 * one line naming the version it needs.
 *
 * The process tests need a Node older than the floor (Debian's node 20 on the CI machine; OLDER_NODE_BIN names
 * another). They skip without one, and fail without one under REQUIRE_TOOLS=1.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { NODE_FLOOR, olderThan } from '../../src/node-floor.js';
import { CLI, killAll, requireBuild } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { findOlderNode } from '../helpers/tools.js';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  scripts: Record<string, string>;
};

const older = findOlderNode((v) => olderThan(v));

afterEach(killAll);

describe('the floor', () => {
  it('package.json engines states the floor the entry point checks', () => {
    expect(pkg.engines.node).toBe(`>=${NODE_FLOOR}`);
  });

  it('no production dependency needs a newer Node than the floor (undici 8 sets it)', () => {
    const floors: Record<string, string> = {};
    for (const dep of Object.keys(pkg.dependencies)) {
      const engines = (
        JSON.parse(readFileSync(join(ROOT, 'node_modules', dep, 'package.json'), 'utf8')) as {
          engines?: { node?: string };
        }
      ).engines?.node;
      const min = engines && /^>=\s*v?(\d+(?:\.\d+){0,2})$/.exec(engines.trim())?.[1];
      if (min) floors[dep] = min;
    }
    expect(Object.keys(floors)).toContain('undici');
    for (const [dep, min] of Object.entries(floors)) expect(olderThan(NODE_FLOOR, min), dep).toBe(false);
    // The floor is no lower than it must be: undici's own.
    expect(NODE_FLOOR).toBe(floors.undici);
  });

  it('compares versions part by part', () => {
    expect(olderThan('20.20.2')).toBe(true);
    expect(olderThan('v22.12.0')).toBe(true);
    expect(olderThan('22.18.9')).toBe(true);
    expect(olderThan(NODE_FLOOR)).toBe(false);
    expect(olderThan('22.20.0')).toBe(false);
    expect(olderThan('24.0.0')).toBe(false);
    expect(olderThan('100.0.0')).toBe(false);
  });

  it('the tests run on the Node the scripts install, the one .nvmrc and the image name', () => {
    const major = process.versions.node.split('.')[0];
    const nvmrc = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    const devNode = /^\^?~?(\d+)\./.exec(pkg.devDependencies.node ?? '')?.[1];
    const image = /^ARG NODE_IMAGE=(?:docker\.io\/library\/)?node:(\d+)\./m.exec(
      readFileSync(join(ROOT, 'Dockerfile'), 'utf8'),
    )?.[1];
    expect([nvmrc, devNode, image]).toEqual([major, major, major]);
    expect(olderThan(process.versions.node)).toBe(false);
  });
});

describe.skipIf(!older)('the built CLI on a Node older than the floor', () => {
  it.each([[['--version']], [['--help']], [['demo']], [['run', '--config', 'no-such.yml']]])(
    '%j exits 2 with one line naming the Node it needs, no stack trace',
    (args) => {
      requireBuild();
      let code = 0;
      let stdout = '';
      let stderr = '';
      try {
        stdout = execFileSync(older!.path, [CLI, ...args], {
          encoding: 'utf8',
          stdio: 'pipe',
          timeout: 15_000,
          env: { PATH: '/usr/bin:/bin' },
        });
      } catch (e) {
        const err = e as { status: number; stdout: string; stderr: string };
        code = err.status;
        stdout = err.stdout;
        stderr = err.stderr;
      }
      expect(code).toBe(2);
      expect(stdout).toBe('');
      const lines = stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`needs Node.js ${NODE_FLOOR} or newer`);
      expect(lines[0]).toContain(older!.version);
      expect(stderr).not.toMatch(/^\s+at /m);
    },
  );
});

describe.skipIf(!older)('`npm run demo` with npm on a Node older than the floor', () => {
  let work = '';
  let child: ChildProcess | undefined;
  afterAll(async () => {
    await stopGroup(child);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('builds and serves the demo on the Node the scripts install', { timeout: 90_000 }, async () => {
    // A copy of the sources, so this build writes its own dist/, not the one other tests run.
    work = mkdtempSync(join(tmpdir(), 'cdn-exporter-demo-'));
    for (const entry of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'bench']) {
      cpSync(join(ROOT, entry), join(work, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
    const npmCli = realpathSync(execFileSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).trim());
    // npm itself runs on the older Node, first on PATH, as on a machine where it is the only one.
    child = spawn(older!.path, [npmCli, 'run', 'demo', '--', '--web.listen-address', '127.0.0.1:0'], {
      cwd: work,
      detached: true,
      env: { PATH: `${dirname(older!.path)}:/usr/bin:/bin`, HOME: process.env.HOME ?? work },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    child.stdout!.resume();
    let metricsUrl: string | undefined;
    const until = Date.now() + 60_000;
    while (!metricsUrl && Date.now() < until && child.exitCode === null) {
      metricsUrl = /^ {2}Metrics\s+(http:\/\/\S+\/metrics)$/m.exec(err)?.[1];
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(metricsUrl, `no banner; stderr:\n${err.slice(-3000)}`).toBeDefined();
    const scrape = Scrape.of(
      await (await fetch(metricsUrl!, { signal: AbortSignal.timeout(10_000) })).text(),
    );
    const versions = scrape.all('nodejs_version_info', {}).map((s) => s.labels.version);
    expect(versions).toHaveLength(1);
    expect(olderThan(versions[0]!), `the demo ran on ${versions[0]}`).toBe(false);
    expect(err).not.toContain('TypeError');
    expect(await stopGroup(child)).toBe(true);
  });
});

/** SIGTERM to the process group (npm, its shell, the demo), SIGKILL if it is still there 10 s later. */
async function stopGroup(child: ChildProcess | undefined): Promise<boolean> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return true;
  const gone = new Promise<void>((resolve) => child.once('close', () => resolve()));
  process.kill(-child.pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), 10_000);
  });
  const inTime = await Promise.race([gone.then(() => true), late]);
  clearTimeout(timer);
  if (!inTime) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await gone;
  }
  return inTime;
}
