/**
 * The settled writer's state file (src/settled/settled-state.ts; docs/remote-write.md, "Across restarts"): per
 * account the acknowledged cursor and the running totals there, beside `state_file`. What a restart reads back is
 * what was saved; a file a crash or a hand left damaged is refused at start with a message naming the file and what
 * to do, and an account part that cannot be true is dropped with a warning naming the account and the problem (its
 * series start again from a zero), never taken silently.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { SavedTotal } from '../../src/settled/running-totals.js';
import { type SavedSettled, SettledStateFile, settledStatePath } from '../../src/settled/settled-state.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';

const tests = perTest();
const T = Date.UTC(2026, 5, 1, 12, 0);
/** "Now" at load: half a minute past T, so T is the latest whole minute. */
const NOW = T + 30_000;

function file(): { path: string; state: SettledStateFile } {
  const path = join(tests.folder('cdn-settled-state-'), 'state.settled.json');
  return { path, state: new SettledStateFile(path) };
}

/** The loaded state with its totals as lists, to compare. */
function plain(s: SavedSettled | undefined): Record<string, { cursor: number; totals: SavedTotal[] }> {
  const out: Record<string, { cursor: number; totals: SavedTotal[] }> = {};
  for (const [account, part] of s?.accounts ?? [])
    out[account] = { cursor: part.cursor, totals: [...part.totals] };
  return out;
}

/** The warnings a load logged, as objects. */
function warnings(lines: string[]): { account?: string; problem?: string; file?: string; msg?: string }[] {
  return lines.map((l) => JSON.parse(l)).filter((r) => r.level === 40 || r.level === 'warn');
}

describe('settledStatePath', () => {
  it('puts the file beside state_file: state.json -> state.settled.json, a name without .json gets it added', () => {
    expect(settledStatePath('/var/lib/cdn/state.json')).toBe('/var/lib/cdn/state.settled.json');
    expect(settledStatePath('/var/lib/cdn/state')).toBe('/var/lib/cdn/state.settled.json');
    expect(settledStatePath('run.json')).toBe('run.settled.json');
    // Only a trailing .json is the extension.
    expect(settledStatePath('/x/state.json.bak')).toBe('/x/state.json.bak.settled.json');
  });
});

describe('settled state: saved and loaded', () => {
  it('gives back each account its cursor and every total with its last window end', async () => {
    const { state } = file();
    const acme: SavedTotal[] = [
      { key: 'cdn_edge_requests_total\u0000r1', total: 1234, lastMs: T - 5 * MINUTE },
      { key: 'cdn_edge_transferred_bytes_total\u0000r1', total: 9.5e12, lastMs: T },
      { key: 'zero', total: 0, lastMs: T - MINUTE },
    ];
    // An account name JSON must escape comes back as it was.
    const odd = 'o"dd\\name ü';
    await state.save({
      accounts: new Map([
        ['acme', { cursor: T, totals: acme }],
        [odd, { cursor: T - 10 * MINUTE, totals: [] }],
      ]),
    });
    const { log, lines } = captureLog();
    const loaded = await state.load(NOW, log);
    expect(plain(loaded)).toEqual({
      acme: { cursor: T, totals: acme },
      [odd]: { cursor: T - 10 * MINUTE, totals: [] },
    });
    expect(warnings(lines)).toEqual([]);
  });

  it('replaces the whole file at each save: an account no longer saved is gone', async () => {
    const { state } = file();
    const total = { key: 'k', total: 1, lastMs: T };
    await state.save({
      accounts: new Map([
        ['a', { cursor: T, totals: [total] }],
        ['b', { cursor: T, totals: [] }],
      ]),
    });
    await state.save({ accounts: new Map([['a', { cursor: T, totals: [{ ...total, total: 2 }] }]]) });
    const loaded = await state.load(NOW, captureLog().log);
    expect(plain(loaded)).toEqual({ a: { cursor: T, totals: [{ ...total, total: 2 }] } });
  });

  it('has no state without a file: undefined, nothing logged', async () => {
    const { state } = file();
    const { log, lines } = captureLog();
    expect(await state.load(NOW, log)).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it('leaves the previous file whole when a save fails part way, with no temporary file beside it', async () => {
    const { path, state } = file();
    await state.save({
      accounts: new Map([
        ['acme', { cursor: T - MINUTE, totals: [{ key: 'k', total: 5, lastMs: T - MINUTE }] }],
      ]),
    });
    // The totals are read as the file is written: one that fails midway stands for a write cut short.
    function* failing(): Generator<SavedTotal> {
      yield { key: 'k', total: 6, lastMs: T };
      throw new Error('disk full');
    }
    await expect(
      state.save({ accounts: new Map([['acme', { cursor: T, totals: failing() }]]) }),
    ).rejects.toThrow('disk full');
    expect(readdirSync(join(path, '..'))).toEqual(['state.settled.json']);
    const loaded = await state.load(NOW, captureLog().log);
    expect(plain(loaded)).toEqual({
      acme: { cursor: T - MINUTE, totals: [{ key: 'k', total: 5, lastMs: T - MINUTE }] },
    });
  });
});

describe('settled state: a damaged file is refused at start', () => {
  const cases: [string, string, RegExp][] = [
    [
      'cut short (not JSON)',
      '{"version":1,"accounts":{"acme":{"cursor":"2026-06',
      /not valid JSON; repair it, or move it away to start anew/,
    ],
    ['empty', '', /not valid JSON/],
    [
      'null',
      'null',
      /unknown format \(expected \{"version": 1, "accounts": \{\.\.\.\}\}\); move it away to start anew/,
    ],
    ['another version', '{"version":2,"accounts":{}}', /unknown format/],
    ['no accounts', '{"version":1}', /unknown format/],
    ['accounts null', '{"version":1,"accounts":null}', /unknown format/],
  ];
  for (const [what, text, message] of cases) {
    it(`${what}: the error names the file and what to do`, async () => {
      const { path, state } = file();
      writeFileSync(path, text);
      const load = state.load(NOW, captureLog().log);
      await expect(load).rejects.toThrow(message);
      await expect(state.load(NOW, captureLog().log)).rejects.toThrow(`settled state ${path}: `);
      // Refused, not replaced: the file stays as found for the operator to look at.
      expect(readFileSync(path, 'utf8')).toBe(text);
    });
  }

  it('an unreadable path: the error names the file and the cause', async () => {
    const { path, state } = file();
    mkdirSync(path);
    await expect(state.load(NOW, captureLog().log)).rejects.toThrow(
      new RegExp(`^settled state ${path}: .*EISDIR`),
    );
    expect(existsSync(path)).toBe(true);
  });
});

describe('settled state: an account part that cannot be true is dropped with a warning', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  const good = { cursor: iso(T), totals: [['k', 3, T / 1000]] };
  const cases: [string, unknown, string][] = [
    ['not an object', 7, 'not an object'],
    ['null', null, 'not an object'],
    ['a cursor that is no time', { cursor: 'yesterday', totals: [] }, 'cursor is not a time'],
    ['a cursor of another type', { cursor: T, totals: [] }, 'cursor is not a time'],
    ['a cursor off the minute', { cursor: iso(T - 1000), totals: [] }, 'cursor is not on a whole minute'],
    [
      'a cursor past the latest whole minute',
      { cursor: iso(T + MINUTE), totals: [] },
      'cursor is in the future',
    ],
    ['totals not a list', { cursor: iso(T), totals: {} }, 'totals is not a list'],
    ['a total of two', { cursor: iso(T), totals: [['k', 3]] }, 'a total is not [key, total, last]'],
    ['a key not text', { cursor: iso(T), totals: [[1, 3, T / 1000]] }, 'a total is not [key, total, last]'],
    [
      'a negative total',
      { cursor: iso(T), totals: [['k', -1, T / 1000]] },
      'a total is not a finite number >= 0',
    ],
    [
      'a total as text',
      { cursor: iso(T), totals: [['k', '3', T / 1000]] },
      'a total is not a finite number >= 0',
    ],
    ['a last time < 0', { cursor: iso(T), totals: [['k', 3, -60]] }, 'a total has a bad time'],
    [
      'a last time past ten minutes after the latest whole minute',
      { cursor: iso(T), totals: [['k', 3, (T + 10 * MINUTE) / 1000 + 1]] },
      'a total has a bad time',
    ],
  ];
  for (const [what, part, problem] of cases) {
    it(`${what}: "${problem}", the other accounts kept`, async () => {
      const { path, state } = file();
      writeFileSync(path, JSON.stringify({ version: 1, accounts: { bad: part, fine: good } }));
      const { log, lines } = captureLog();
      const loaded = await state.load(NOW, log);
      expect(plain(loaded)).toEqual({ fine: { cursor: T, totals: [{ key: 'k', total: 3, lastMs: T }] } });
      const warned = warnings(lines);
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ account: 'bad', problem, file: path });
      expect(warned[0]!.msg).toContain('its settled series start again from a zero');
    });
  }

  it('takes a cursor at the latest whole minute and a last time up to ten minutes after it (the edges)', async () => {
    const { path, state } = file();
    const last = (T + 10 * MINUTE) / 1000;
    writeFileSync(
      path,
      JSON.stringify({ version: 1, accounts: { edge: { cursor: iso(T), totals: [['k', 0, last]] } } }),
    );
    const { log, lines } = captureLog();
    expect(plain(await state.load(NOW, log))).toEqual({
      edge: { cursor: T, totals: [{ key: 'k', total: 0, lastMs: T + 10 * MINUTE }] },
    });
    expect(warnings(lines)).toEqual([]);
  });
});
