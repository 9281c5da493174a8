/**
 * A production install, as the Dockerfile's deps stage does it: pack the project from a clean copy of its
 * sources (what a fresh checkout packs, not whatever dist/ holds here), then in an empty project that depends on
 * the tarball, lock it (`npm install --package-lock-only`) and install it with `npm ci --omit=dev`. That install's
 * `cdn-exporter` (run) is started against a simulator running as its own process (the project's built
 * `dist/src/cli.js simulate`) and scraped: no runtime dependency hides in devDependencies.
 *
 * The simulator comes from this checkout's dist/, as the test/cli tests use it: `npm test` builds before vitest;
 * alone, build first with `npx tsc -p tsconfig.build.json`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Scrape } from '../helpers/exposition.js';
import { ROOT, readText } from './chart-helpers.js';

const run = promisify(execFile);
const pkg = JSON.parse(readText('package.json')) as {
  name: string;
  version: string;
  devDependencies: Record<string, string>;
};
const SIMULATOR_CLI = join(ROOT, 'dist/src/cli.js');
/** npm without the network chatter: no audit, no funding notes, the cache before the registry. */
const NPM_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline'];

let work = '';
let app = '';

interface Proc {
  child: ChildProcess;
  output(): string;
  /** The first JSON log line on stderr for which `match` is true; fails after `timeoutMs` or when the process exits. */
  logLine(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: Proc[] = [];

/**
 * Starts a process with a minimal environment (this Node first on PATH, plus `env`), never the runner's own, so
 * a CDN_* variable of the developer's shell cannot leak in.
 */
function start(command: string, args: string[], env: Record<string, string>, cwd: string): Proc {
  const child = spawn(command, args, {
    cwd,
    env: { PATH: [dirname(process.execPath), process.env.PATH ?? '/usr/bin:/bin'].join(delimiter), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let spawnError = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (e) => {
      spawnError = e.message;
      done = true;
      resolve({ code: null, signal: null });
    });
    child.once('close', (code, signal) => {
      done = true;
      resolve({ code, signal });
    });
  });
  const proc: Proc = {
    child,
    exited,
    output: () => `${spawnError}${out}${err}`,
    async logLine(match, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        for (const line of err.split('\n')) {
          if (!line.startsWith('{')) continue;
          try {
            const parsed = JSON.parse(line) as Record<string, unknown>;
            if (match(parsed)) return parsed;
          } catch {
            // a line still being written
          }
        }
        if (done) throw new Error(`${command} exited before the log line: ${spawnError}\n${err}`);
        if (Date.now() > until)
          throw new Error(`no such log line of ${command} within ${timeoutMs} ms:\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  started.push(proc);
  return proc;
}

/** SIGTERM, then the exit awaited; SIGKILL only if it is still running 10 s later. */
async function stop(proc: Proc): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const { child } = proc;
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const exit = await proc.exited;
  clearTimeout(timer);
  return exit;
}

beforeAll(async () => {
  if (!existsSync(SIMULATOR_CLI)) {
    throw new Error(
      `${SIMULATOR_CLI} is missing: build first with npx tsc -p tsconfig.build.json (npm test does)`,
    );
  }
  work = mkdtempSync(join(tmpdir(), 'cdn-exporter-install-'));
  const src = join(work, 'src-copy');
  for (const entry of [
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
    'src',
    'bench',
  ]) {
    cpSync(join(ROOT, entry), join(src, entry), { recursive: true });
  }
  for (const doc of ['README.md', 'CHANGELOG.md', 'LICENSE']) {
    if (existsSync(join(ROOT, doc))) cpSync(join(ROOT, doc), join(src, doc));
  }
  // The build tools only; the packed tarball holds no node_modules.
  symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');
  // `prepack` builds dist/ in the copy.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: src });
  const tarball = join(work, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);

  // An empty project whose one dependency is the tarball; locked, then installed the reproducible way.
  app = join(work, 'app');
  cpSync(tarball, join(app, 'pkg.tgz'));
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'install-test', private: true, dependencies: { [pkg.name]: 'file:pkg.tgz' } }),
  );
  await run('npm', ['install', '--package-lock-only', '--omit=dev', ...NPM_FLAGS], { cwd: app });
  await run('npm', ['ci', '--omit=dev', ...NPM_FLAGS], { cwd: app });
}, 180_000);

afterAll(async () => {
  await Promise.all(started.map(stop));
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('production install of the packed tarball', () => {
  it('`npm ci --omit=dev` installs the exporter from the lockfile, without dev dependencies', () => {
    const modules = join(app, 'node_modules');
    // `npm ci` installed from the lockfile (it leaves its hidden lockfile behind).
    const lock = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    expect(existsSync(join(modules, '.package-lock.json'))).toBe(true);
    expect(Object.keys(lock.packages)).toContain(`node_modules/${pkg.name}`);
    expect(existsSync(join(modules, pkg.name, 'dist/src/cli.js'))).toBe(true);
    // Big traffic answers are parsed in this worker; without it they would block the event loop.
    expect(existsSync(join(modules, pkg.name, 'dist/src/offloop/worker.js'))).toBe(true);
    expect(existsSync(join(modules, '.bin/cdn-exporter'))).toBe(true);
    for (const dep of ['prom-client', 'express', 'yaml', 'zod'])
      expect(existsSync(join(modules, dep)), dep).toBe(true);
    // Every devDependency that the project's own lockfile marks dev-only (npm drops the mark from one a runtime
    // dependency needs too: @types/node, which protobufjs depends on).
    const projectLock = JSON.parse(readText('package-lock.json')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.keys(pkg.devDependencies).filter(
      (dev) => projectLock.packages[`node_modules/${dev}`]?.dev === true,
    );
    expect(devOnly).toContain('typescript');
    for (const dev of devOnly) {
      expect(existsSync(join(modules, dev)), dev).toBe(false);
      expect(Object.keys(lock.packages), dev).not.toContain(`node_modules/${dev}`);
    }
    // Sources, tests and build configuration stay out of the tarball.
    for (const absent of ['src', 'test', 'tsconfig.json', 'helm']) {
      expect(existsSync(join(modules, pkg.name, absent)), absent).toBe(false);
    }
  });

  it('the installed `cdn-exporter`, against a simulator process, serves cdn_up 1 and traffic counters, never the token', {
    timeout: 120_000,
  }, async () => {
    const sim = start(process.execPath, [SIMULATOR_CLI, 'simulate', '--port', '0', '--seed', '7'], {}, ROOT);
    const simLine = await sim.logLine((l) => typeof l.url === 'string' && Array.isArray(l.accounts), 20_000);
    const simUrl = String(simLine.url);
    expect(simUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    const { account, token } = (simLine.accounts as Array<{ account: string; token: string }>)[0]!;
    expect(token.length).toBeGreaterThan(0);

    const exporter = start(
      join(app, 'node_modules/.bin/cdn-exporter'),
      ['run', '--web.listen-address', '127.0.0.1:0'],
      { CDN_API_URL: simUrl, CDN_API_TOKEN: token, CDN_ACCOUNTS: account },
      app,
    );
    const address = String((await exporter.logLine((l) => typeof l.address === 'string', 30_000)).address);
    expect(address).toMatch(/^127\.0\.0\.1:[1-9]\d*$/);
    const base = `http://${address}`;

    let body = '';
    let scrape = Scrape.of('');
    // Bounded: up to 60 s for the first polls to be counted.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && exporter.child.exitCode === null) {
      try {
        const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) });
        body = await res.text();
        scrape = Scrape.of(body);
        if (
          scrape.value('cdn_up', { api: 'metrics', account }) === 1 &&
          scrape.all('cdn_edge_requests_total', { account }).some((s) => s.value > 0)
        )
          break;
      } catch {
        // not answering yet
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(
      exporter.child.exitCode,
      `the exporter exited early:\n${exporter.output().slice(-2000)}`,
    ).toBeNull();
    expect(scrape.value('cdn_up', { api: 'metrics', account }), exporter.output().slice(-2000)).toBe(1);
    expect(scrape.all('cdn_edge_requests_total', { account }).some((s) => s.value > 0)).toBe(true);
    expect(body).toMatch(new RegExp(`^cdn_exporter_build_info\\{[^}]*version="${pkg.version}"`, 'm'));
    expect(body).not.toContain(token);
    expect((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);

    expect(await stop(exporter)).toEqual({ code: 0, signal: null });
    expect(exporter.output()).not.toContain(token);
    expect(await stop(sim)).toEqual({ code: 0, signal: null });
  });
});
