/**
 * What a restart finds after a crash (issues 21 and 25): a temporary file of a write that was cut, revisit windows
 * of an account without a cursor, records that are not counts, and the counter part, checked before anything of
 * them is used; each refusal is logged and said on the page (LoadedState.problems), never taken silently.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateFile } from '../../src/state-file/state-file.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function fresh(): string {
  dir = mkdtempSync(join(tmpdir(), 'cdn-checkpoint-'));
  return join(dir, 'state.json');
}

const record = (values: number[]) => Buffer.from(new Float64Array(values).buffer).toString('base64');
const iso = (ms: number) => new Date(ms).toISOString();

describe('state file after a crash', () => {
  it('removes the temporary file a killed process left, says so, and loads the file itself', async () => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    // A write cut by SIGKILL: its temporary file (another process id) was never renamed over the file.
    const leftover = `${path}.4242.tmp`;
    writeFileSync(leftover, '{"version": 1, "cursors": {"acme": "2026-06');
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY }, log);
    expect(loaded.cursors).toEqual(new Map([['acme', T]]));
    expect(loaded.existed).toBe(true);
    expect(existsSync(leftover)).toBe(false);
    expect(readdirSync(dir!)).toEqual(['state.json']);
    expect(lines.some((l) => l.includes(`removed ${leftover}`))).toBe(true);
  });

  it('drops revisit windows of an account without a cursor, and records that are not counts, by name', async () => {
    const path = fresh();
    const series = [[0, '1001'] as [number, ...string[]], [0, '1002'] as [number, ...string[]]];
    const window = (counted: string) => ({ start: iso(T - 10 * MINUTE), end: iso(T - 5 * MINUTE), counted });
    const nan = Buffer.alloc(16, 0xff).toString('base64');
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        cursors: { acme: iso(T), other: iso(T) },
        revisit: {
          version: 1,
          families: ['cdn_edge_requests_total'],
          accounts: {
            acme: { series, windows: [window(record([4, 2]))] },
            other: { series, windows: [window(nan)] },
            stranger: { series, windows: [window(record([1, 1]))] },
          },
        },
      }),
    );
    const { log } = captureLog();
    const loaded = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY }, log);
    expect(Object.keys(loaded.revisits!.accounts)).toEqual(['acme']);
    const line = (account: string) => loaded.problems.find((p) => p.includes(`account "${account}"`)) ?? '';
    expect(line('other')).toContain('a count that is not a number >= 0');
    expect(line('stranger')).toContain('belong to an account without a usable cursor');
    expect(loaded.keptAs).toBeDefined();
  });

  it('keeps the counter part beside the cursors and drops an account whose values cannot be counts', async () => {
    const path = fresh();
    const counters = {
      version: 1 as const,
      families: ['cdn_edge_requests_total', 'cdn_metrics_windows_total'],
      accounts: {
        acme: [
          [0, 1234, 1_780_000_000, '1001'],
          [1, 7, 1_780_000_000],
        ] as Array<[number, number, number, ...string[]]>,
      },
    };
    await new StateFile(path).save(new Map([['acme', T]]), undefined, counters);
    const back = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY });
    expect(back.counters).toEqual(counters);

    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        cursors: { acme: iso(T), bad: iso(T) },
        counters: {
          ...counters,
          accounts: {
            ...counters.accounts,
            bad: [[0, -5, 1, '1001']],
            gone: [[0, 1, 1, '1001']],
            family: [[9, 1, 1]],
          },
        },
      }),
    );
    const { log } = captureLog();
    const loaded = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY }, log);
    expect(Object.keys(loaded.counters!.accounts)).toEqual(['acme']);
    expect(loaded.problems).toHaveLength(3);
    expect(loaded.problems.join('\n')).toContain(
      'counters of account "bad" include a value that is not a number',
    );
    expect(loaded.problems.join('\n')).toContain('counters of account "gone" belong to an account without');
    expect(loaded.problems.join('\n')).toContain('counters of account "family" name a counter family');

    writeFileSync(path, JSON.stringify({ version: 1, cursors: {}, counters: { version: 2 } }));
    await expect(new StateFile(path).load({ now: T, maxCatchUpMs: DAY })).rejects.toThrow(
      'its counters part is of an unknown format',
    );
  });
});
