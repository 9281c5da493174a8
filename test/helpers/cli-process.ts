/**
 * Running the built command line (`node dist/src/cli.js`) as a child process, as a user would. The build is not
 * made here: `npm test` builds before vitest; alone, run `npx tsc -p tsconfig.build.json` first (a stale dist/
 * tests stale code).
 *
 * Children get a minimal environment (PATH plus what the test passes), never the test runner's own, so a CDN_*
 * variable of the developer's shell cannot leak in. Every child started is killed by `killAll` (afterEach).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll } from 'vitest';

export const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

export function requireBuild(): void {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: build first with npx tsc -p tsconfig.build.json (npm test does)`);
  }
}

/**
 * Call at the top of a CLI test file: its tests need the build (checked before them), every process they start is
 * killed after each of them, and they share the temporary folder returned (made now, its name starting with
 * `prefix`), removed after them all.
 */
export function cliTestFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  beforeAll(requireBuild);
  afterEach(killAll);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit; never rejects. */
  exited: Promise<Exit>;
  /** The first JSON log line on stderr for which `match` is true; fails after `timeoutMs` or when the child exits. */
  logLine(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** The first stderr line matching `re`, as text. */
  textLine(re: RegExp, timeoutMs?: number): Promise<string>;
}

/** The URL the process serves /metrics on, from its "serving" log line (port 0 resolved to the one it bound). */
export async function servingUrl(p: CliProcess, timeoutMs?: number): Promise<string> {
  const line = await p.logLine((l) => typeof l.address === 'string', timeoutMs);
  return `http://${String(line.address)}`;
}

const running = new Set<ChildProcess>();

export function startCli(
  args: string[],
  env: Record<string, string> = {},
  cwd?: string,
  /** Node's own options, before the script (e.g. `--import` of a preload). */
  nodeArgs: string[] = [],
): CliProcess {
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.on('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });

  async function firstLine(
    pick: (line: string) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<string> {
    const until = Date.now() + timeoutMs;
    for (let i = 0; i < 100_000; i++) {
      const found = err.split('\n').find(pick);
      if (found !== undefined) return found;
      if (done) throw new Error(`process exited before ${what}; stderr:\n${err}`);
      if (Date.now() > until) throw new Error(`no ${what} within ${timeoutMs} ms; stderr:\n${err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no ${what}`);
  }

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    logLine: async (match, timeoutMs = 30_000) =>
      JSON.parse(
        await firstLine(
          (line) => {
            if (!line.startsWith('{')) return false;
            try {
              return match(JSON.parse(line) as Record<string, unknown>);
            } catch {
              return false;
            }
          },
          timeoutMs,
          'matching JSON log line',
        ),
      ) as Record<string, unknown>,
    textLine: (re, timeoutMs = 30_000) =>
      firstLine((line) => re.test(line), timeoutMs, `line matching ${re}`),
  };
}

/** Runs a command to its end (bounded); for commands that exit by themselves. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<Exit & { stdout: string; stderr: string }> {
  const p = startCli(args, env);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  const exit = await p.exited;
  clearTimeout(timer);
  return { ...exit, stdout: p.stdout(), stderr: p.stderr() };
}

/**
 * How long a test waits for a signalled process to exit: a hang detector, not the shutdown bound. The bound (about
 * 4.5 s, src/commands.ts) is a time the process keeps on its own timers, which a loaded machine stretches; `npm run
 * bench` measures it (the process suites' "SIGTERM to exit" rows). A test shows the bound holds by what does not
 * happen: the process exits while a request it made is held far longer than this by the simulator.
 */
export const EXIT_WAIT_MS = 20_000;

/** Resolves with the exit, or with undefined when the process is still running after `ms`. */
export async function exitWithin(p: CliProcess, ms: number): Promise<Exit | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Kills every child still running (by its own pid) and waits for them to go. */
export async function killAll(): Promise<void> {
  const children = [...running];
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) {
            resolve();
            return;
          }
          c.once('close', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
}
