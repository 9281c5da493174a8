/**
 * src/cli.ts, the entry point: it exports nothing, so it is run as built (dist/src/cli.js). It checks the Node
 * version (test/cli/node-floor.test.ts runs it on an older Node), restarts itself once with its memory settings
 * (test/cli/memory-tuning.test.ts reads the running process's /proc), then hands the arguments and the environment
 * to the command line. What this file checks: that restart is invisible to the command. Each start of the process
 * is seen through a preload (`--import`) that writes its pid, arguments and Node options on stderr; the command
 * gets the same arguments, spaces and all, and the same environment, and its exit code is the process's, whether
 * the process restarted or not.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { V8_FLAGS } from '../src/memory-tuning.js';
import { cliTestFolder, exitWithin, startCli } from './helpers/cli-process.js';

const dir = cliTestFolder('cli-entry-');

const MARK = 'START ';
const PRELOAD = `--import=data:text/javascript,${encodeURIComponent(
  `process.stderr.write(${JSON.stringify(MARK)} + JSON.stringify({ pid: process.pid, argv: process.argv.slice(2), ` +
    `execArgv: process.execArgv.filter((a) => !a.startsWith('--import')) }) + '\\n');`,
)}`;

interface Start {
  pid: number;
  argv: string[];
  execArgv: string[];
}

async function runSeen(args: string[], env: Record<string, string>) {
  const p = startCli(args, env, undefined, [PRELOAD]);
  const exit = await exitWithin(p, 20_000);
  const lines = p.stderr().split('\n');
  const starts = lines
    .filter((l) => l.startsWith(MARK))
    .map((l) => JSON.parse(l.slice(MARK.length)) as Start);
  const said = lines.filter((l) => l !== '' && !l.startsWith(MARK));
  return { code: exit?.code, starts, said, stdout: p.stdout() };
}

const missing = join(dir, 'a config file with spaces & "quotes".yml');
const CASES: Array<[string, string[], Record<string, string>, RegExp]> = [
  [
    'an argument with spaces and quotes',
    ['run', '--config', missing],
    {},
    new RegExp(`cannot read config file ${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ENOENT`),
  ],
  [
    'a value from the environment',
    ['run'],
    { CDN_API_URL: 'ftp://files.example', CDN_API_TOKEN: 'tok-cli-0123456789', CDN_ACCOUNTS: 'acme' },
    /api\.base_url: must be an http:\/\/ or https:\/\/ URL \(from CDN_API_URL\)/,
  ],
];

describe('the entry point restarts once, unseen by the command', () => {
  // The restart is Linux's only (src/memory-tuning.ts): elsewhere the process goes on as started.
  it.skipIf(process.platform !== 'linux').each(CASES)(
    '%s reaches the command after the restart, exit code 2 its own',
    async (_name, args, env, said) => {
      const r = await runSeen(args, env);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      // Two starts of one process: as started, then with the V8 flags added, the arguments unchanged.
      expect(r.starts).toHaveLength(2);
      const [first, second] = r.starts as [Start, Start];
      expect(second.pid).toBe(first.pid);
      expect(first.argv).toEqual(args);
      expect(second.argv).toEqual(args);
      expect(first.execArgv).toEqual([]);
      expect(second.execArgv).toEqual([...V8_FLAGS]);
      // The command's refusal, naming what was given, and no stack trace.
      const text = r.said.join('\n');
      expect(text).toMatch(/^cdn-exporter: invalid configuration/);
      expect(text).toMatch(said);
      expect(text).not.toMatch(/^\s+at /m);
      const unrestarted = await runSeen(args, { ...env, CDN_EXPORTER_TUNED: '0' });
      expect(unrestarted.starts).toHaveLength(1);
      expect({ code: unrestarted.code, said: unrestarted.said }).toEqual({ code: r.code, said: r.said });
    },
  );

  it('does not restart a short-lived command, and its output is the command’s alone', async () => {
    const r = await runSeen(['--version'], {});
    expect(r.code).toBe(0);
    expect(r.starts).toHaveLength(1);
    expect(r.stdout).toMatch(/^cdn-exporter \d+\.\d+\.\d+\S*\n$/);
  });
});
