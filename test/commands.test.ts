/**
 * src/commands.ts: runCommandLine, the command line as the entry point hands it over (arguments and environment),
 * run to its exit code: 0 for help and a good check-config, 2 for a bad command line or configuration (the reason
 * on stderr, the key named), 1 for a failure at start. The built command's flags, check-config's secrets and
 * the web config are checked in test/cli/commands.test.ts and test/web/cli.test.ts; here in-process, with
 * process.exit observed (not run) and stdout and stderr read: which help each command gets, the simulator's own
 * usage errors, that the environment is the one given (not the process's) and the host name is remote_write's
 * instance; through the built command only the exit 1 of a start that fails, which goes through a listening server.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { backfillUsage } from '../src/backfill/usage.js';
import { packageVersion, runCommandLine } from '../src/commands.js';
import { checkConfigReport, loadConfig, usage } from '../src/config/index.js';
import { demoUsage } from '../src/demo.js';
import { simulatorUsage } from '../src/simulator/options.js';
import { exitWithin, killAll, requireBuild, startCli } from './helpers/cli-process.js';

const dir = mkdtempSync(join(tmpdir(), 'commands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const TOKEN = 'tok-Commands-4f8a1c';

/** runCommandLine(argv, env) to its exit: the code given to process.exit, and what was written meanwhile. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  let out = '';
  let err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  }) as typeof process.stdout.write);
  vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    err += String(chunk);
    return true;
  }) as typeof process.stderr.write);
  const code = await new Promise<number>((resolve) => {
    vi.spyOn(process, 'exit').mockImplementation(((c?: number) => {
      resolve(c ?? 0);
    }) as typeof process.exit);
    runCommandLine(argv, env);
  });
  vi.restoreAllMocks();
  return { code, out, err };
}

function file(name: string, doc: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, stringify(doc));
  return path;
}

describe('packageVersion', () => {
  it("is the repository's package.json version, from the sources as from the build", () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(packageVersion()).toBe(pkg.version);
  });
});

describe('help', () => {
  it.each([
    [['--help'], usage()],
    [['-h'], usage()],
    [['run', '--help'], usage()],
    [['check-config', '-h'], usage()],
    [['demo', '--help'], demoUsage()],
    [['--log.level', 'warn', 'demo', '-h'], demoUsage()],
    [['backfill', '--help'], backfillUsage()],
    [['simulate', '--help'], simulatorUsage()],
  ])('%j prints its own command’s help on stdout and exits 0', async (argv, text) => {
    expect(await run(argv)).toEqual({ code: 0, out: text, err: '' });
  });
});

describe('a command line that cannot run: exit 2', () => {
  it('names the problem, then a blank line and the usage, on stderr only', async () => {
    const r = await run(['--no-such-flag']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^cdn-exporter: .*--no-such-flag.*\n\n/);
    expect(r.err.endsWith(`\n\n${usage()}`)).toBe(true);
  });

  it("a bad simulator flag gets the simulator's usage, prefixed with the command", async () => {
    const r = await run(['simulate', '--no-such-flag']);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^cdn-exporter simulate: .*--no-such-flag/);
    expect(r.err.endsWith(`\n\n${simulatorUsage()}`)).toBe(true);
  });
});

describe('check-config', () => {
  it('reads the environment it is given, not the process’s', async () => {
    const env = { CDN_API_URL: 'https://env.cdn.example', CDN_API_TOKEN: TOKEN, CDN_ACCOUNTS: 'acme,beta' };
    const r = await run(['check-config'], env);
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(r.out).toBe(checkConfigReport(loadConfig({ env })));
    const printed = parse(r.out) as { api: { base_url: string }; accounts: { name: string }[] };
    expect(printed.api.base_url).toBe('https://env.cdn.example');
    expect(printed.accounts.map((a) => a.name)).toEqual(['acme', 'beta']);
    expect(r.out).not.toContain(TOKEN);
    // Given none, nothing to load, though the process's own environment holds a whole configuration.
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const none = await run(['check-config'], {});
    vi.unstubAllEnvs();
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/^cdn-exporter: /);
    expect(none.err).toContain('CDN_API_URL');
  });

  it("gives remote_write the machine's host name as instance when the file leaves it out", async () => {
    const path = file('rw.yaml', {
      api: { base_url: 'https://api.cdn.example', token_file: '/run/secrets/cdn' },
      accounts: [{ name: 'acme' }],
      state_file: join(dir, 'state.json'),
      remote_write: { url: 'https://mimir.example/api/v1/push' },
    });
    const r = await run(['check-config', '--config', path]);
    expect(r.code).toBe(0);
    expect((parse(r.out) as { remote_write: { instance: string } }).remote_write.instance).toBe(hostname());
  });

  it('refuses a bad file with exit 2, one reason per key on stderr, nothing on stdout', async () => {
    const path = file('bad.yaml', {
      api: { base_url: 'https://api.cdn.example', token: TOKEN },
      metrics: { window: '15m' },
      accounts: [{ name: 'acme' }, { name: 'acme' }],
    });
    const r = await run(['check-config', '--config', path]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^cdn-exporter: invalid configuration/);
    expect(r.err).toContain('metrics.window: must be between 1m and 10m, got 15m');
    expect(r.err).toContain('accounts[1].name: duplicate account "acme"');
    expect(r.err).not.toContain(TOKEN);
  });
});

describe('a start that fails: exit 1 (the built command)', () => {
  let taken: Server | undefined;
  afterEach(async () => {
    await killAll();
    await new Promise<void>((r) => (taken ? taken.close(() => r()) : r()));
    taken = undefined;
  });

  it('run on an address in use exits 1 with one line saying so', async () => {
    requireBuild();
    taken = createServer();
    await new Promise<void>((r) => taken!.listen(0, '127.0.0.1', r));
    const { port } = taken.address() as { port: number };
    const p = startCli(['run', '--web.listen-address', `127.0.0.1:${port}`], {
      // A URL nothing listens on: the start fails before any request.
      CDN_API_URL: 'http://127.0.0.1:9/',
      CDN_API_TOKEN: TOKEN,
      CDN_ACCOUNTS: 'acme',
    });
    const exit = await exitWithin(p, 20_000);
    expect(exit?.code).toBe(1);
    const lines = p
      .stderr()
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('{'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cdn-exporter: .*EADDRINUSE/);
    expect(p.stderr()).not.toContain(TOKEN);
  });
});
