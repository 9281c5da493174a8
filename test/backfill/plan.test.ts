/**
 * What `cdn-exporter backfill` accepts and refuses before it reads anything (src/config/flags.ts for the words,
 * src/backfill/plan.ts for the rest), each refusal naming the flag or key; and the window grid of a run.
 */
import { describe, expect, it } from 'vitest';
import { BackfillError, nextWindow, planBackfill, rangeRuns, windowsLeft } from '../../src/backfill/plan.js';
import { MINUTE } from '../../src/clock.js';
import { parseCommandLine, UsageError } from '../../src/config/index.js';
import { shardOf } from '../../src/sharding.js';
import { configFrom } from '../helpers/stack.js';

const NOW = Date.parse('2026-11-28T12:00:30Z');
const base = {
  api: { base_url: 'http://127.0.0.1:1', token: 't' },
  accounts: [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
  metrics: { delay: '5m', revisit: '1h' },
  state_file: '/var/lib/cdn/state.json',
};
const config = configFrom(base);

function plan(argv: string[], c = config) {
  const cl = parseCommandLine(['backfill', ...argv]);
  return planBackfill(cl.backfill!, c, NOW);
}

function refused(argv: string[], c = config): string {
  try {
    plan(argv, c);
  } catch (e) {
    expect(e).toBeInstanceOf(BackfillError);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
}

const range = ['--from', '2026-11-01T00:00:00Z', '--to', '2026-11-02T00:00:00Z'];

describe('backfill flags', () => {
  it('are read after the word backfill, with the common flags, and only there', () => {
    const cl = parseCommandLine([
      '--log.level=warn',
      'backfill',
      '--config',
      'c.yml',
      ...range,
      '--accounts',
      'b, a,',
      '--output',
      'x.om',
      '--window=5m',
      '--resume',
    ]);
    expect(cl).toMatchObject({ command: 'backfill', configFile: 'c.yml', logLevel: 'warn' });
    expect(cl.backfill).toEqual({
      from: '2026-11-01T00:00:00Z',
      to: '2026-11-02T00:00:00Z',
      accounts: ['b', 'a'],
      output: 'x.om',
      window: '5m',
      remoteWrite: false,
      gaps: false,
      resume: true,
    });
    expect(() => parseCommandLine(['run', '--from', 'x'])).toThrow(UsageError);
    expect(() => parseCommandLine(['backfill', 'now'])).toThrow(/unexpected argument "now" after backfill/);
    expect(() => parseCommandLine(['backfill', '--bogus'])).toThrow(/unknown flag --bogus/);
  });
});

describe('planBackfill', () => {
  it('takes a range of whole minutes, the configured accounts in configuration order, FILE.om.progress', () => {
    const p = plan([...range, '--accounts', 'c,a', '--output', '/tmp/x.om']);
    expect(p).toMatchObject({
      mode: 'range',
      from: Date.parse('2026-11-01T00:00:00Z'),
      to: Date.parse('2026-11-02T00:00:00Z'),
      windowMs: 10 * MINUTE,
      accounts: ['a', 'c'],
      output: { kind: 'file', path: '/tmp/x.om' },
      progressPath: '/tmp/x.om.progress',
    });
    expect(rangeRuns(p).map((r) => r.account)).toEqual(['a', 'c']);
    expect(plan([...range, '--output', 'x.om']).accounts).toEqual(['a', 'b', 'c']);
  });

  it('refuses a --to not final yet: now - metrics.delay - metrics.revisit is the edge', () => {
    // 12:00:30 - 5m - 1h = 10:55:30, floored to the minute: 10:55 is the last end allowed.
    expect(
      plan(['--from', '2026-11-28T10:00:00Z', '--to', '2026-11-28T10:55:00Z', '--output', 'x.om']).to,
    ).toBe(Date.parse('2026-11-28T10:55:00Z'));
    expect(
      refused(['--from', '2026-11-28T10:00:00Z', '--to', '2026-11-28T10:56:00Z', '--output', 'x.om']),
    ).toBe(
      '--to 2026-11-28T10:56:00.000Z is not final yet: it must be no later than now - metrics.delay - metrics.revisit (5m + 1h), 2026-11-28T10:55:00.000Z now',
    );
  });

  it.each([
    [['--from', '2026-11-01T00:00:30Z', '--to', '2026-11-02T00:00:00Z'], /--from: must be on a whole minute/],
    [
      ['--from', '2026-11-01T00:00:00', '--to', '2026-11-02T00:00:00Z'],
      /--from: expected a time with its zone/,
    ],
    [['--from', '2026-11-02T00:00:00Z', '--to', '2026-11-02T00:00:00Z'], /--from must be before --to/],
    [['--from', '2026-11-01T00:00:00Z'], /give --from and --to \(or --gaps\)/],
    [[...range, '--window', '0m'], /--window: must be whole minutes from 1m to 10m/],
    [[...range, '--window', '11m'], /--window: must be whole minutes from 1m to 10m/],
    [[...range, '--window', '90s'], /--window: must be whole minutes from 1m to 10m/],
    [[...range, '--accounts', 'a,zz,yy'], /^--accounts: "zz", "yy" are not in the configuration$/],
    [[...range, '--accounts', ','], /--accounts: name at least one account/],
    [['--gaps', ...range], /--gaps reads its spans from the state: it takes no --from or --to/],
  ])('refuses %j', (argv, message) => {
    expect(refused([...argv, '--output', 'x.om'])).toMatch(message);
  });

  it('takes --window at its edges, 1m and 10m', () => {
    expect(plan([...range, '--window', '1m', '--output', 'x.om']).windowMs).toBe(MINUTE);
    expect(plan([...range, '--window', '10m', '--output', 'x.om']).windowMs).toBe(10 * MINUTE);
  });

  it('wants exactly one of --output and --remote-write, and what each needs', () => {
    expect(refused(range)).toMatch(/give --output FILE.om or --remote-write/);
    expect(refused([...range, '--output', 'x.om', '--remote-write'])).toMatch(/exclude each other/);
    expect(refused([...range, '--remote-write'])).toMatch(
      /--remote-write: the configuration has no remote_write/,
    );
    expect(refused([...range, '--output', 'x.om', '--progress', 'p.json'])).toMatch(
      /--progress: only with --remote-write/,
    );
    const rw = configFrom({ ...base, remote_write: { url: 'http://127.0.0.1:2/api/v1/write' } });
    expect(plan([...range, '--remote-write'], rw).progressPath).toBe('/var/lib/cdn/state.backfill.json');
    expect(plan([...range, '--remote-write', '--progress', '/tmp/p.json'], rw).progressPath).toBe(
      '/tmp/p.json',
    );
    const noState = configFrom({ ...base, state_file: undefined });
    expect(refused(['--gaps', '--output', 'x.om'], noState)).toMatch(
      /--gaps: the configuration has no state_file/,
    );
  });

  it('without --accounts, takes the accounts of this shard, and says so when it owns none', () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const shard of [0, 1]) {
      const sharded = configFrom({
        ...base,
        accounts: names.map((name) => ({ name })),
        sharding: { shard, shards: 2 },
      });
      expect(plan([...range, '--output', 'x.om'], sharded).accounts).toEqual(
        names.filter((n) => shardOf(n, 2) === shard),
      );
    }
    const other = 1 - shardOf('a', 2);
    const none = configFrom({ ...base, accounts: [{ name: 'a' }], sharding: { shard: other, shards: 2 } });
    expect(refused([...range, '--output', 'x.om'], none)).toBe(
      `this shard (${other} of 2) owns none of the configured accounts: name them with --accounts`,
    );
    expect(plan([...range, '--accounts', 'a', '--output', 'x.om'], none).accounts).toEqual(['a']);
  });
});

describe('the window grid of a run', () => {
  const run = { account: 'a', start: 0, end: 25 * MINUTE };
  it('lays windows from the run start, the last one cut at the end', () => {
    const windows: [number, number][] = [];
    for (let at = 0; at < run.end; ) {
      const w = nextWindow(run, at, 10 * MINUTE);
      windows.push([w.start / MINUTE, w.end / MINUTE]);
      at = w.end;
    }
    expect(windows).toEqual([
      [0, 10],
      [10, 20],
      [20, 25],
    ]);
    expect(windowsLeft(run, 0, 10 * MINUTE)).toBe(3);
    expect(windowsLeft(run, 25 * MINUTE, 10 * MINUTE)).toBe(0);
  });

  it('goes back on the grid after a cursor inside a window (a split for a 504)', () => {
    expect(nextWindow(run, 5 * MINUTE, 10 * MINUTE)).toEqual({ start: 5 * MINUTE, end: 10 * MINUTE });
    expect(windowsLeft(run, 5 * MINUTE, 10 * MINUTE)).toBe(3);
  });
});
