/**
 * A production install, as the Dockerfile's runtime stage and `npm install -g` do it: pack the project from a
 * clean copy of its sources (what a fresh checkout packs, not whatever dist/ holds here), install the tarball with
 * production dependencies only into an empty project, run that install's `cdn-exporter demo` and scrape it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, readText } from './chart-helpers.js';

const run = promisify(execFile);
const pkg = JSON.parse(readText('package.json')) as { name: string; version: string };

let work = '';
let app = '';
let child: ChildProcess | undefined;

/** A port that was free a moment ago (the demo's flag names the exporter's port; 0 would leave us guessing). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
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

  app = join(work, 'app');
  cpSync(tarball, join(app, 'pkg.tgz'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'install-test', private: true }));
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', './pkg.tgz'], {
    cwd: app,
  });
}, 120_000);

afterAll(async () => {
  if (child) await stop(child);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('production install of the packed tarball', () => {
  it('installs the exporter without dev dependencies', () => {
    const modules = join(app, 'node_modules');
    expect(existsSync(join(modules, pkg.name, 'dist/src/cli.js'))).toBe(true);
    expect(existsSync(join(modules, '.bin/cdn-exporter'))).toBe(true);
    for (const dep of ['prom-client', 'express', 'yaml', 'zod'])
      expect(existsSync(join(modules, dep)), dep).toBe(true);
    for (const dev of ['vitest', 'typescript', '@biomejs/biome', 'ajv']) {
      expect(existsSync(join(modules, dev)), dev).toBe(false);
    }
    // Sources, tests and build configuration stay out of the tarball.
    for (const absent of ['src', 'test', 'tsconfig.json', 'helm']) {
      expect(existsSync(join(modules, pkg.name, absent)), absent).toBe(false);
    }
  });

  it('runs `cdn-exporter demo` and serves cdn_ metrics on /metrics', { timeout: 120_000 }, async () => {
    const port = await freePort();
    let output = '';
    child = spawn(
      join(app, 'node_modules/.bin/cdn-exporter'),
      ['demo', '--web.listen-address', `127.0.0.1:${port}`, '--log.format', 'logfmt'],
      { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let spawnError = '';
    child.on('error', (e) => {
      spawnError = e.message;
    });
    child.stdout?.on('data', (b: Buffer) => {
      output += b.toString();
    });
    child.stderr?.on('data', (b: Buffer) => {
      output += b.toString();
    });

    const base = `http://127.0.0.1:${port}`;
    let body = '';
    // Bounded: up to 90 s for the demo to start and finish its first polls.
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline && child.exitCode === null && !spawnError) {
      try {
        const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) });
        body = await res.text();
        if (/^cdn_up\{[^}]*\} 1$/m.test(body) && /^cdn_edge_requests_total\{/m.test(body)) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(spawnError, 'cdn-exporter could not be started').toBe('');
    expect(child.exitCode, `the demo exited early:\n${output.slice(-2000)}`).toBeNull();
    expect(body, output.slice(-2000)).toMatch(
      new RegExp(`^cdn_exporter_build_info\\{[^}]*version="${pkg.version}"`, 'm'),
    );
    expect(body).toMatch(/^cdn_up\{[^}]*\} 1$/m);
    expect(body).toMatch(/^cdn_edge_requests_total\{[^}]*account="[^"]+"[^}]*\} \d/m);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    await stop(child);
    expect(
      child.signalCode === 'SIGTERM' || child.exitCode === 0,
      `exit ${child.exitCode} ${child.signalCode}`,
    ).toBe(true);
  });
});
