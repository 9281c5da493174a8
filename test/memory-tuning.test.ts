/**
 * src/memory-tuning.ts: how the entry point restarts itself with its memory settings. What is added for each
 * command, the user's own values kept, the older V8 and the container image are checked in
 * test/cli/memory-tuning.test.ts, the running process's /proc too; this file holds what the restart keeps of the
 * process as it was started, and the spellings of a setting the user already gave.
 */
import { describe, expect, it } from 'vitest';
import {
  MALLOC_SETTINGS,
  TUNED_MARK,
  type TuningInput,
  tunedRestart,
  V8_FLAGS,
} from '../src/memory-tuning.js';

const base: TuningInput = {
  argv: ['run', '--config', 'cdn.yml'],
  env: {},
  execArgv: [],
  platform: 'linux',
  canExec: true,
  v8: '13.6.233.17-node.53',
};

describe('tunedRestart', () => {
  it("keeps Node's own options first, in order, and adds only the missing flags after them", () => {
    const execArgv = ['--enable-source-maps', '--import', './preload.mjs'];
    expect(tunedRestart({ ...base, execArgv })?.execArgv).toEqual([...execArgv, ...V8_FLAGS]);
  });

  it('passes the whole environment on, drops unset variables, and marks the restarted process', () => {
    const env = { HOME: '/home/u', CDN_API_TOKEN: 'tok', EMPTY: '', GONE: undefined };
    const r = tunedRestart({ ...base, env });
    expect(r?.env).toEqual({
      HOME: '/home/u',
      CDN_API_TOKEN: 'tok',
      EMPTY: '',
      ...MALLOC_SETTINGS,
      [TUNED_MARK]: '1',
    });
    expect(Object.hasOwn(r!.env, 'GONE')).toBe(false);
    // The restarted process, with the mark, goes on as it is: one restart, never a loop.
    expect(tunedRestart({ ...base, env: r!.env, execArgv: r!.execArgv })).toBeUndefined();
  });

  it('is off when the mark is set to anything, the empty string included', () => {
    for (const value of ['', '0', '1', 'no'])
      expect(tunedRestart({ ...base, env: { [TUNED_MARK]: value } })).toBeUndefined();
  });

  it('with the malloc values set (as the image does) restarts only for the V8 flags, keeping the values', () => {
    const env = { MALLOC_ARENA_MAX: '4', MALLOC_MMAP_THRESHOLD_: '65536' };
    const r = tunedRestart({ ...base, env });
    expect(r?.env).toEqual({ ...env, [TUNED_MARK]: '1' });
    expect(r?.execArgv).toEqual(V8_FLAGS);
  });

  it('reads a flag the user gave in NODE_OPTIONS or on the command line, in any spelling V8 takes', () => {
    const env = { ...MALLOC_SETTINGS };
    const without = (given: string[]) => V8_FLAGS.filter((f) => !given.includes(f));
    expect(
      tunedRestart({ ...base, env: { ...env, NODE_OPTIONS: '--max_semi_space_size=32' } })?.execArgv,
    ).toEqual(without([V8_FLAGS[0]!]));
    expect(tunedRestart({ ...base, env, execArgv: ['--no-memory-saver-mode'] })?.execArgv).toEqual([
      '--no-memory-saver-mode',
      ...without([V8_FLAGS[1]!]),
    ]);
    expect(
      tunedRestart({
        ...base,
        env: { ...env, NODE_OPTIONS: '--heap-growing-percent=120 --memory_saver_mode' },
      })?.execArgv,
    ).toEqual([V8_FLAGS[0]]);
  });

  it('does not restart -h or a short-lived command anywhere on the line, after flags included', () => {
    for (const argv of [
      ['-h'],
      ['--log.level', 'debug', 'check-config'],
      ['run', '-h'],
      ['backfill', '--help'],
    ])
      expect(tunedRestart({ ...base, argv })).toBeUndefined();
  });

  it('gives an unreadable V8 version only the flag every V8 knows', () => {
    expect(tunedRestart({ ...base, v8: '' })?.execArgv).toEqual([V8_FLAGS[0]]);
    expect(tunedRestart({ ...base, v8: '12.4.254.21-node.33' })?.execArgv).toEqual([V8_FLAGS[0]]);
    expect(tunedRestart({ ...base, v8: '14.0.1' })?.execArgv).toEqual(V8_FLAGS);
  });
});
