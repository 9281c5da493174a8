/**
 * The long-running commands restart themselves once with glibc's malloc settings and a capped young generation
 * (src/memory-tuning.ts): what `cat /proc/PID/environ` and `/proc/PID/cmdline` show for a running exporter, and
 * what a user's own settings (or CDN_EXPORTER_TUNED=0) keep.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MALLOC_SETTINGS, SEMI_SPACE_MB, tunedRestart, V8_FLAGS } from '../../src/memory-tuning.js';
import { killAll, requireBuild, startCli } from '../helpers/cli-process.js';

beforeAll(requireBuild);
afterEach(killAll);

const base = { env: {}, execArgv: [], platform: 'linux', canExec: true, v8: '13.6.233.17-node.53' };

describe('memory tuning: what is added', () => {
  it('adds the malloc settings and the V8 memory flags to every long-running command', () => {
    const long = [
      ['run', '--config', 'c.yml'],
      ['--log.level', 'warn', 'demo'],
      ['--config', 'c.yml'],
      ['simulate'],
    ];
    for (const argv of long) {
      const r = tunedRestart({ ...base, argv });
      expect(r?.env).toMatchObject({ ...MALLOC_SETTINGS, CDN_EXPORTER_TUNED: '1' });
      expect(r?.execArgv).toEqual([
        `--max-semi-space-size=${SEMI_SPACE_MB}`,
        '--memory-saver-mode',
        '--heap-growing-percent=150',
      ]);
    }
    for (const argv of [['check-config', 'x'], ['--help'], ['demo', '--help'], ['--version']]) {
      expect(tunedRestart({ ...base, argv })).toBeUndefined();
    }
  });

  it("keeps the user's own values, and does nothing when everything is set or it is turned off", () => {
    const own = tunedRestart({
      ...base,
      argv: ['run'],
      env: { MALLOC_ARENA_MAX: '8', NODE_OPTIONS: '--max-semi-space-size=64', HOME: '/h' },
    });
    expect(own?.env).toMatchObject({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '32768', HOME: '/h' });
    expect(own?.execArgv).toEqual(['--memory-saver-mode', '--heap-growing-percent=150']);
    const all = { ...MALLOC_SETTINGS };
    const flags = ['--max-semi-space-size=8', '--no-memory-saver-mode', '--heap_growing_percent=50'];
    expect(tunedRestart({ ...base, argv: ['run'], env: all, execArgv: flags })).toBeUndefined();
    expect(tunedRestart({ ...base, argv: ['run'], env: { CDN_EXPORTER_TUNED: '0' } })).toBeUndefined();
    expect(tunedRestart({ ...base, argv: ['run'], platform: 'darwin' })).toBeUndefined();
    expect(tunedRestart({ ...base, argv: ['run'], canExec: false })).toBeUndefined();
  });

  it('gives a V8 older than 13 only the flag every V8 knows', () => {
    const r = tunedRestart({ ...base, argv: ['run'], v8: '12.4.254.21-node.33' });
    expect(r?.execArgv).toEqual([`--max-semi-space-size=${SEMI_SPACE_MB}`]);
  });
});

describe('memory tuning: the container image', () => {
  it('sets the same malloc values in its environment (the restart then only adds the Node flag)', () => {
    const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
    const set = Object.fromEntries(
      [...dockerfile.matchAll(/\b(MALLOC_\w+)=(\S+)/g)].map((m) => [m[1], m[2]]),
    );
    expect(set).toEqual(MALLOC_SETTINGS);
  });
});

describe.skipIf(process.platform !== 'linux')('memory tuning: the running process', () => {
  const procOf = (pid: number) => ({
    env: readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'),
    argv: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'),
  });

  it('runs as the same pid with the settings in its environment and command line', async () => {
    const p = startCli(['demo', '--web.listen-address', '127.0.0.1:0']);
    await p.textLine(/^ {2}Metrics\s+http:/, 20_000);
    const { env, argv } = procOf(p.child.pid!);
    expect(env).toEqual(expect.arrayContaining(['MALLOC_ARENA_MAX=2', 'MALLOC_MMAP_THRESHOLD_=32768']));
    expect(argv).toEqual(expect.arrayContaining([...V8_FLAGS, 'demo']));
  });

  it('leaves the process as started with CDN_EXPORTER_TUNED=0', async () => {
    const p = startCli(['demo', '--web.listen-address', '127.0.0.1:0'], { CDN_EXPORTER_TUNED: '0' });
    await p.textLine(/^ {2}Metrics\s+http:/, 20_000);
    const { env, argv } = procOf(p.child.pid!);
    expect(env.some((e) => e.startsWith('MALLOC_'))).toBe(false);
    expect(argv.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
  });
});
