/**
 * The state file on a real file system: what a restart reads back, and that a reader (a restart after a crash)
 * never finds a torn or empty file while writes go on.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { CursorBook, REVISIT_SAVE_GAP_MS } from '../../src/state-file/cursor-book.js';
import type { SavedRevisits } from '../../src/state-file/saved-revisits.js';
import { StateFile } from '../../src/state-file/state-file.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { waitFor } from '../helpers/stack.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const MINUTE = 60_000;

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function fresh(): string {
  dir = mkdtempSync(join(tmpdir(), 'cdn-state-'));
  return join(dir, 'nested', 'state.json');
}

describe('state file', () => {
  it('loads back what was saved, creating its folder; a missing file is an empty state', async () => {
    const path = fresh();
    expect((await new StateFile(path).load()).cursors).toEqual(new Map());
    const cursors = new Map([
      ['acme', T],
      ['beta', T + 7 * MINUTE],
    ]);
    await new StateFile(path).save(cursors);
    expect((await new StateFile(path).load()).cursors).toEqual(cursors);
  });

  it('keeps the newest of many overlapping saves, and leaves no temporary file behind', async () => {
    const path = fresh();
    const file = new StateFile(path);
    const saves: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) saves.push(file.save(new Map([['acme', T + i * MINUTE]])));
    await Promise.all(saves);
    expect((await new StateFile(path).load()).cursors).toEqual(new Map([['acme', T + 49 * MINUTE]]));
    expect(readdirSync(join(dir!, 'nested'))).toEqual(['state.json']);
  });

  it('never shows a reader a torn or empty file while it is rewritten', async () => {
    const path = fresh();
    const file = new StateFile(path);
    // Many accounts, so that one write is not a single small block.
    const many = (i: number) =>
      new Map(Array.from({ length: 2000 }, (_, a) => [`account-${a}`, T + i * MINUTE]));
    await file.save(many(0));
    // A reader on the thread pool, reading as fast as it can while the writes go on.
    let writing = true;
    let reads = 0;
    const torn: string[] = [];
    const reader = (async () => {
      for (let i = 0; i < 100_000 && writing; i++) {
        const text = await readFile(path, 'utf8');
        reads++;
        try {
          const parsed = JSON.parse(text) as { cursors: Record<string, string> };
          if (Object.keys(parsed.cursors).length !== 2000) torn.push(`${text.length} bytes, incomplete`);
        } catch {
          torn.push(`${text.length} bytes, not JSON`);
        }
      }
    })();
    for (let i = 1; i <= 100; i++) await file.save(many(i));
    writing = false;
    await reader;
    expect(reads).toBeGreaterThan(20);
    expect(torn).toEqual([]);
  });

  it('refuses an unreadable file with its path named, instead of starting over silently', async () => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    writeFileSync(path, '{"version":1,"cursors":');
    await expect(new StateFile(path).load()).rejects.toThrow(`state_file ${path}: not valid JSON`);
  });

  it('keeps the revisit part beside the cursors, compactly, and refuses one of an unknown format by name', async () => {
    const path = fresh();
    const file = new StateFile(path);
    const counted = Buffer.from(new Float64Array([5, 0, 7]).buffer).toString('base64');
    const revisit = {
      version: 1 as const,
      families: ['cdn_edge_requests_total'],
      accounts: {
        acme: {
          series: [[0, '1001'] as [number, ...string[]], null, [0, '1002'] as [number, ...string[]]],
          windows: [
            { start: new Date(T).toISOString(), end: new Date(T + 5 * MINUTE).toISOString(), counted },
          ],
        },
      },
    };
    await file.save(new Map([['acme', T + 5 * MINUTE]]), revisit);
    const text = await readFile(path, 'utf8');
    // The cursors stay readable; the revisit part is one line.
    expect(text).toContain('"acme": "2026-06-01T12:05:00.000Z"');
    expect(text.split('\n').filter((l) => l.includes('"revisit"'))).toHaveLength(1);
    const loaded = await new StateFile(path).loadState();
    expect(loaded.cursors.get('acme')).toBe(T + 5 * MINUTE);
    expect(loaded.revisits).toEqual(revisit);

    writeFileSync(path, JSON.stringify({ version: 1, cursors: {}, revisit: { version: 2, accounts: {} } }));
    await expect(new StateFile(path).loadState()).rejects.toThrow(
      `state_file ${path}: its revisit part is of an unknown format`,
    );
  });

  it.each([
    ['an array', '[1, 2]'],
    ['a number', '123'],
    ['cursors as an array', '{"version": 1, "cursors": ["2026-06-01T12:00:00.000Z"]}'],
    ['another version', '{"version": 2, "cursors": {}}'],
  ])('refuses a file of the wrong shape (%s), naming it and leaving it as it is', async (_name, text) => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    writeFileSync(path, text);
    await expect(new StateFile(path).load({ now: T, maxCatchUpMs: DAY })).rejects.toThrow(
      `state_file ${path}: unknown format`,
    );
    expect(readFileSync(path, 'utf8')).toBe(text);
  });
});

const DAY = 24 * 60 * MINUTE;

describe('state file: cursors that cannot be trusted', () => {
  it('ignores a cursor that is not a whole-minute time or is in the future, loudly, keeping a copy of the file', async () => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    const text = JSON.stringify({
      version: 1,
      cursors: {
        acme: new Date(T - 30 * MINUTE).toISOString(),
        numeric: 1_780_000_000_000,
        list: ['2026-06-01T11:00:00.000Z'],
        garbage: 'yesterday',
        unaligned: '2026-06-01T11:00:30.000Z',
        future: '2099-01-01T00:00:00.000Z',
      },
    });
    writeFileSync(path, text);
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY }, log);

    expect(loaded.cursors).toEqual(new Map([['acme', T - 30 * MINUTE]]));
    expect(loaded.problems).toHaveLength(5);
    for (const [account, words] of [
      ['numeric', 'is not a UTC time like 2026-06-01T12:00:00.000Z (got a number)'],
      ['list', '(got an array)'],
      ['garbage', '(got "yesterday")'],
      ['unaligned', 'is not on a whole minute (2026-06-01T11:00:30.000Z)'],
      ['future', 'is in the future (2099-01-01T00:00Z, now 2026-06-01T12:00Z)'],
    ]) {
      const line = loaded.problems.find((p) => p.includes(`account "${account}"`));
      expect(line, account).toContain(`state_file ${path}: cursor of account "${account}" `);
      expect(line, account).toContain(words);
      expect(line, account).toContain('ignored, the account starts from lookback');
    }
    // Each is an error in the log, naming the file; the file as it was is kept beside it.
    const errors = lines.map((l) => JSON.parse(l) as { level: number; msg: string; file?: string });
    expect(errors.filter((e) => e.level === 50 && e.file === path)).toHaveLength(6);
    expect(loaded.keptAs).toBe(`${path}.corrupt-2026-06-01T12-00-00-000Z`);
    expect(readFileSync(loaded.keptAs!, 'utf8')).toBe(text);
  });

  it('moves a cursor older than the catch-up limit up to it, says so, and keeps no copy', async () => {
    const path = fresh();
    const old = Date.UTC(1990, 0, 1);
    await new StateFile(path).save(
      new Map([
        ['acme', old],
        ['beta', T - 2 * MINUTE],
      ]),
    );
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now: T + 20_000, maxCatchUpMs: DAY }, log);
    expect(loaded.cursors).toEqual(
      new Map([
        ['acme', T - DAY],
        ['beta', T - 2 * MINUTE],
      ]),
    );
    expect(loaded.clamped).toEqual(new Map([['acme', { from: old, to: T - DAY }]]));
    expect(loaded.problems).toEqual([
      `state_file ${path}: cursor of account "acme" (1990-01-01T00:00Z) is older than metrics.max_catch_up allows; ` +
        'moved up to 2026-05-31T12:00Z, the minutes between are skipped',
    ]);
    expect(lines.map((l) => (JSON.parse(l) as { level: number }).level)).toEqual([40]);
    expect(loaded.keptAs).toBeUndefined();
    expect(readdirSync(join(dir!, 'nested'))).toEqual(['state.json']);
  });
});

describe('state file: the revisit part checked', () => {
  const record = (values: number[]) => Buffer.from(new Float64Array(values).buffer).toString('base64');
  const window = (start: number, end: number, counted: string) => ({
    start: new Date(start).toISOString(),
    end: new Date(end).toISOString(),
    counted,
  });
  const part = (windows: ReturnType<typeof window>[]) => ({
    series: [[0, '1001'] as [number, ...string[]], [0, '1002'] as [number, ...string[]]],
    windows,
  });

  it("drops one account's windows that cannot be true, keeps the others', says why and keeps a copy", async () => {
    const path = fresh();
    await new StateFile(path).save(new Map([['acme', T]]));
    const good = part([window(T - 10 * MINUTE, T - 5 * MINUTE, record([4, 2]))]);
    const text = JSON.stringify({
      version: 1,
      cursors: { acme: new Date(T).toISOString() },
      revisit: {
        version: 1,
        families: ['cdn_edge_requests_total'],
        accounts: {
          acme: good,
          future: part([window(T + 5 * MINUTE, T + 10 * MINUTE, record([1, 1]))]),
          unaligned: part([window(T - 10 * MINUTE + 30_000, T - 5 * MINUTE, record([1, 1]))]),
          old: part([window(T - 2 * DAY, T - 2 * DAY + 5 * MINUTE, record([1, 1]))]),
          toolong: part([window(T - 10 * MINUTE, T - 5 * MINUTE, record([1, 1, 1]))]),
          family: { series: [[3, '1001']], windows: [] },
        },
      },
    });
    writeFileSync(path, text);
    const { log, lines } = captureLog();
    const loaded = await new StateFile(path).load({ now: T, maxCatchUpMs: DAY }, log);

    expect(loaded.cursors).toEqual(new Map([['acme', T]]));
    expect(Object.keys(loaded.revisits!.accounts)).toEqual(['acme']);
    expect(loaded.revisits!.accounts.acme).toEqual(good);
    for (const [account, words] of [
      ['future', 'in the future'],
      ['unaligned', 'not whole minutes'],
      ['old', 'older than metrics.max_catch_up allows'],
      ['toolong', "does not fit the account's 2 series"],
      ['family', 'a counter family the file does not list'],
    ]) {
      const line = loaded.problems.find((p) => p.includes(`account "${account}"`));
      expect(line, account).toContain(`state_file ${path}: revisit windows of account "${account}" `);
      expect(line, account).toContain(words);
      expect(line, account).toContain('dropped, those minutes keep what their first read counted');
    }
    expect(loaded.problems).toHaveLength(5);
    const errors = lines.map((l) => JSON.parse(l) as { level: number; file?: string });
    expect(errors.filter((e) => e.level === 50 && e.file === path)).toHaveLength(6);
    expect(readFileSync(loaded.keptAs!, 'utf8')).toBe(text);
  });

  it('refuses a revisit part of the wrong shape as a whole, naming where, and leaves the file as it is', async () => {
    const path = fresh();
    const text = JSON.stringify({
      version: 1,
      cursors: {},
      revisit: { version: 1, families: [], accounts: { acme: { series: [], windows: [{ start: 'x' }] } } },
    });
    await new StateFile(path).save(new Map());
    writeFileSync(path, text);
    await expect(new StateFile(path).load({ now: T, maxCatchUpMs: DAY })).rejects.toThrow(
      /state_file .*: its revisit part is of an unknown format \(.* at revisit\.accounts\.acme\.windows\.0/,
    );
    expect(readFileSync(path, 'utf8')).toBe(text);
  });
});

describe('state file: saving the revisit part', () => {
  const revisitOf = (n: number): SavedRevisits => ({
    version: 1,
    families: ['cdn_edge_requests_total'],
    accounts: {
      acme: {
        series: Array.from({ length: 3 }, (_, i) => [0, String(1000 + i)] as [number, ...string[]]),
        windows: Array.from({ length: n }, (_, i) => ({
          start: new Date(T - (i + 1) * 5 * MINUTE).toISOString(),
          end: new Date(T - i * 5 * MINUTE).toISOString(),
          counted: Buffer.from(new Float64Array([i, 1, 2]).buffer).toString('base64'),
        })),
      },
    },
  });
  const onDisk = (path: string) =>
    JSON.parse(readFileSync(path, 'utf8')) as { cursors: Record<string, string>; revisit?: SavedRevisits };

  /** Real-time wait (bounded, generously: file I/O on a loaded machine) until `ok`. */
  async function until(ok: () => boolean): Promise<void> {
    const holds = () => {
      try {
        return ok();
      } catch {
        return false; // not written yet
      }
    };
    await waitFor(holds, 20_000, 'the state file to show it').catch(() => undefined);
    expect(ok()).toBe(true);
  }

  it('makes the revisit part once per write, not once per save, and writes the latest', async () => {
    const path = fresh();
    const file = new StateFile(path);
    let made = 0;
    let windows = 0;
    const source = () => {
      made++;
      return revisitOf(windows);
    };
    const saves: Promise<void>[] = [];
    for (let i = 1; i <= 200; i++) {
      windows = i % 7;
      saves.push(file.save(new Map([['acme', T + i * MINUTE]]), source));
    }
    // Nothing is made on the caller's stack.
    expect(made).toBe(0);
    await Promise.all(saves);
    expect(made).toBe(1);
    const saved = onDisk(path);
    expect(saved.cursors).toEqual({ acme: new Date(T + 200 * MINUTE).toISOString() });
    expect(saved.revisit).toEqual(revisitOf(200 % 7));
    // The text written in pieces is the same as written at once.
    const text = readFileSync(path, 'utf8');
    expect(text.split('\n').find((l) => l.startsWith('  "revisit": '))).toBe(
      `  "revisit": ${JSON.stringify(revisitOf(200 % 7))}`,
    );
  });

  it('writes a change of the revisit part alone at most once per gap; a commit at once, taking it along', async () => {
    const path = fresh();
    const clock = new FakeClock(T);
    const book = new CursorBook(path, createLogger({ level: 'silent' }), undefined, clock);
    await book.load({ now: T, maxCatchUpMs: DAY });
    let made = 0;
    let windows = 1;
    book.revisits = {
      part: () => {
        made++;
        return revisitOf(windows);
      },
      shown: () => {},
    };
    book.touch();
    await until(() => made === 1 && onDisk(path).revisit?.accounts.acme?.windows.length === 1);

    // A burst within the gap: held back, nothing written. A write starts only when the book's one wait on the
    // clock ends (or a commit takes it along), so a wait still parked on the clock after it moved means none began.
    for (windows = 2; windows <= 5; windows++) book.touch();
    windows = 5;
    await clock.advance(REVISIT_SAVE_GAP_MS - 1000);
    expect(clock.pending).toBe(1);
    expect(made).toBe(1);
    expect(onDisk(path).revisit?.accounts.acme?.windows).toHaveLength(1);
    // The gap over: one write, of the latest.
    await clock.advance(1000);
    await until(() => made === 2 && onDisk(path).revisit?.accounts.acme?.windows.length === 5);

    // A scrape's commit is never held back: written at once, with the revisit part as it is then.
    windows = 6;
    book.touch();
    await book.commit(new Map([['acme', T - 5 * MINUTE]]));
    await until(() => made === 3 && onDisk(path).cursors.acme === new Date(T - 5 * MINUTE).toISOString());
    expect(onDisk(path).revisit?.accounts.acme?.windows).toHaveLength(6);
    // The touch it took along is not written again after the gap: its wait on the clock is gone.
    expect(clock.pending).toBe(0);
    await clock.advance(2 * REVISIT_SAVE_GAP_MS);
    expect(made).toBe(3);

    windows = 2;
    book.touch();
    await book.close();
    expect(onDisk(path).revisit?.accounts.acme?.windows).toHaveLength(2);
  });
});
