/**
 * The checks the state file's parts pass on load (src/state-file/checks.ts): a part that cannot be true is named
 * in words an operator can act on (the window, the value as found), a counter's saved start is taken only as whole
 * Unix seconds not after the load, and a bad start costs its series its start alone (set to 0, "none").
 */
import { describe, expect, it } from 'vitest';
import {
  countersProblem,
  describe as describeValue,
  dropBadStarts,
  goodStart,
  iso,
  revisitProblem,
  sampleOf,
} from '../../src/state-file/checks.js';
import type { SavedCounters } from '../../src/state-file/saved-counters.js';
import { encodeCounted, type SavedAccountRevisits } from '../../src/state-file/saved-revisits.js';

const MINUTE = 60_000;
const T = Date.UTC(2026, 2, 1, 12, 0);
const EARLIEST = T - 60 * MINUTE;
const LATEST = T + 60 * MINUTE;

function part(windows: SavedAccountRevisits['windows'], series = 2): SavedAccountRevisits {
  return { series: Array.from({ length: series }, (_, i) => [0, `r${i}`] as [number, string]), windows };
}

const win = (start: number, end: number, counted = encodeCounted(Float64Array.from([1, 2]))) => ({
  start: new Date(start).toISOString(),
  end: new Date(end).toISOString(),
  counted,
});

describe('revisitProblem', () => {
  it('takes windows of whole minutes within the catch-up and not in the future, with records that fit', () => {
    expect(
      revisitProblem(
        part([win(T, T + 5 * MINUTE), win(EARLIEST, EARLIEST + MINUTE), win(LATEST - MINUTE, LATEST)]),
        1,
        EARLIEST,
        LATEST,
      ),
    ).toBe(undefined);
    // A record shorter than the account's series (series added after) fits.
    expect(
      revisitProblem(part([win(T, T + MINUTE, encodeCounted(Float64Array.from([3])))]), 1, EARLIEST, LATEST),
    ).toBe(undefined);
  });

  it('names what cannot be true, with the window', () => {
    const at = (w: ReturnType<typeof win>, p = part([w])) => revisitProblem(p, 1, EARLIEST, LATEST);
    expect(at(win(T + 1000, T + 5 * MINUTE))).toMatch(/^include a window that is not whole minutes \(/);
    expect(at(win(T, T))).toBe(
      'include a window that is not whole minutes (2026-03-01T12:00Z..2026-03-01T12:00Z)',
    );
    expect(at(win(LATEST, LATEST + MINUTE))).toBe(
      'include a window in the future (2026-03-01T13:00Z..2026-03-01T13:01Z)',
    );
    expect(at(win(EARLIEST - MINUTE, EARLIEST))).toBe(
      'include a window older than metrics.max_catch_up allows (2026-03-01T10:59Z..2026-03-01T11:00Z)',
    );
    expect(at(win(T, T + MINUTE, encodeCounted(Float64Array.from([1, 2, 3]))))).toBe(
      "include a record that does not fit the account's 2 series (2026-03-01T12:00Z..2026-03-01T12:01Z)",
    );
    expect(at(win(T, T + MINUTE, Buffer.alloc(12).toString('base64')))).toMatch(
      /^include a record that does not fit/,
    );
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(at(win(T, T + MINUTE, encodeCounted(Float64Array.from([1, bad]))))).toMatch(
        /^include a record with a count that is not a number >= 0/,
      );
    const unknownFamily: SavedAccountRevisits = { series: [[0, 'a'], null, [1, 'b']], windows: [] };
    expect(revisitProblem(unknownFamily, 1, EARLIEST, LATEST)).toBe(
      'name a counter family the file does not list',
    );
    expect(revisitProblem(unknownFamily, 2, EARLIEST, LATEST)).toBeUndefined();
  });
});

describe('countersProblem', () => {
  it('takes [family, value, start, ...labels] rows of listed families with values >= 0', () => {
    expect(
      countersProblem(
        [
          [0, 0, 0],
          [1, 12.5, 1_772_000_000, 'acme', 'r1'],
        ],
        2,
      ),
    ).toBeUndefined();
    // A bad start is not this check's: dropBadStarts drops it alone.
    expect(countersProblem([[0, 1, 'soon' as never, 'acme']], 1)).toBeUndefined();
  });

  it('names the first thing wrong', () => {
    const rows = (r: unknown) => [r] as SavedCounters['accounts'][string];
    expect(countersProblem(rows({ family: 0 }), 1)).toBe(
      'include a series that is not [family, value, start, ...labels]',
    );
    for (const fi of [1, -1, 0.5, '0'])
      expect(countersProblem(rows([fi, 1, 0]), 1)).toBe('name a counter family the file does not list');
    expect(countersProblem(rows([0, -1, 0]), 1)).toBe('include a value that is not a number >= 0 (-1)');
    expect(countersProblem(rows([0, '7', 0]), 1)).toBe('include a value that is not a number >= 0 ("7")');
    expect(countersProblem(rows([0, null, 0]), 1)).toBe('include a value that is not a number >= 0 (null)');
    expect(countersProblem(rows([0, 1, 0, 'acme', 3]), 1)).toBe('include a label value that is not text');
  });
});

describe('counter starts', () => {
  const latest = Math.floor(T / 1000);

  it('are good as whole Unix seconds from 0 (none) up to the load time', () => {
    for (const s of [0, 1, 1_000_000_000, latest]) expect(goodStart(s, latest), String(s)).toBe(true);
    // Milliseconds, the future, fractions, negatives, text: not a start.
    for (const s of [T, latest + 1, 1.5, -1, '1772000000', null, undefined])
      expect(goodStart(s, latest), String(s)).toBe(false);
  });

  it('a bad one is set to 0 alone, and the first is reported with its account and value as found', () => {
    const counters = {
      version: 1,
      families: ['a_total'],
      accounts: {
        acme: [
          [0, 5, 100, 'r1'],
          [0, 6, T, 'r2'],
        ],
        beta: [[0, 7, 'x'.repeat(50) as never, 'r3']],
      },
    } as SavedCounters;
    expect(dropBadStarts(counters, latest)).toEqual({ count: 2, account: 'acme', sample: String(T) });
    expect(counters.accounts.acme!.map((s) => s[2])).toEqual([100, 0]);
    expect(counters.accounts.beta![0]![2]).toBe(0);
    // Values and labels are left as they are.
    expect(counters.accounts.acme![1]).toEqual([0, 6, 0, 'r2']);
    expect(dropBadStarts(counters, latest)).toBeUndefined();
  });
});

describe('values as a problem or log line names them', () => {
  it('says what kind of value it is, quotes text and cuts it at 40 characters', () => {
    expect(describeValue(null)).toBe('null');
    expect(describeValue([1])).toBe('an array');
    expect(describeValue('x')).toBe('"x"');
    expect(describeValue(3)).toBe('a number');
    expect(describeValue({})).toBe('an object');
    expect(sampleOf(1.5)).toBe('1.5');
    expect(sampleOf('soon')).toBe('"soon"');
    expect(sampleOf('y'.repeat(41))).toBe(`"${'y'.repeat(40)}"...`);
    expect(sampleOf(true)).toBe('a boolean');
    expect(iso(T)).toBe('2026-03-01T12:00Z');
    expect(iso(T + 30_000)).toBe('2026-03-01T12:00:30.000Z');
  });
});
