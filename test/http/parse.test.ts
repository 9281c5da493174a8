/**
 * The building blocks of the tolerant parsers (src/http/parse.ts): a 2xx body read as JSON within bounds that keep
 * a hostile body from costing gigabytes, the only throw being ApiError `malformed` with the reason; a bad field an
 * issue with its path and what was there, never a throw; the ceilings of the values the parsers accept, at their
 * edges; the API's UTC times, a rolled-over date refused.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import {
  describeValue,
  jsonBoundsProblem,
  MAX_COUNT,
  MAX_JSON_CONTAINERS,
  MAX_JSON_DEPTH,
  MAX_TIMESTAMP_SECONDS,
  ParseReport,
  parseJsonBody,
  parseUtc,
  withDataArray,
} from '../../src/http/parse.js';

const utf8 = new TextEncoder();

/** The ApiError `fn` throws. */
function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected a throw');
}

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('parseJsonBody', () => {
  it('reads a UTF-8 body as JSON; an empty or blank body is no value', () => {
    expect(parseJsonBody('metrics', utf8.encode('{"name":"caf\u00e9","n":[1,2]}'))).toEqual({
      name: 'caf\u00e9',
      n: [1, 2],
    });
    expect(parseJsonBody('metrics', new Uint8Array())).toBeUndefined();
    expect(parseJsonBody('dvr-net', utf8.encode(' \n\t '))).toBeUndefined();
  });

  it('a body that is not JSON is malformed for its API, the JSON error in the detail', () => {
    const err = thrown(() => parseJsonBody('recorder-cloud', utf8.encode('{"data": [1, 2')));
    expect(err).toMatchObject({ api: 'recorder-cloud', kind: 'malformed' });
    expect(err.detail).toMatch(/^body is not JSON \(.+\)$/);
  });

  it(`nests at most ${MAX_JSON_DEPTH} levels: one more is malformed before JSON.parse sees it`, () => {
    expect(parseJsonBody('metrics', utf8.encode(nested(MAX_JSON_DEPTH)))).toBeDefined();
    const err = thrown(() => parseJsonBody('metrics', utf8.encode(nested(MAX_JSON_DEPTH + 1))));
    expect(err).toMatchObject({ kind: 'malformed', api: 'metrics' });
    expect(err.detail).toBe(`body is not JSON (nested deeper than ${MAX_JSON_DEPTH} levels)`);
  });
});

describe('jsonBoundsProblem', () => {
  it('does not count brackets inside strings, an escaped quote included', () => {
    const inString = JSON.stringify({ s: `a\\"${'['.repeat(MAX_JSON_DEPTH * 2)}` });
    expect(jsonBoundsProblem(inString)).toBeUndefined();
    // The same brackets outside the string are too deep.
    expect(jsonBoundsProblem(`[${inString}, ${'['.repeat(MAX_JSON_DEPTH)}`)).toMatch(/nested deeper/);
  });

  it(`allows ${MAX_JSON_CONTAINERS} objects and arrays, not one more`, () => {
    // One array holding the rest as empty objects.
    const body = (objects: number) => `[${'{},'.repeat(objects - 1)}{}]`;
    expect(jsonBoundsProblem(body(MAX_JSON_CONTAINERS - 1))).toBeUndefined();
    expect(jsonBoundsProblem(body(MAX_JSON_CONTAINERS))).toBe(
      `more than ${MAX_JSON_CONTAINERS} objects and arrays`,
    );
  });
});

describe('withDataArray', () => {
  it('gives the object with its data array', () => {
    const raw = { status: 'Completed', data: [{ a: 1 }] };
    expect(withDataArray('dvr-net', raw)).toBe(raw);
  });

  it('refuses another top level, and quotes the description of an answer without data', () => {
    expect(thrown(() => withDataArray('metrics', [1]))).toMatchObject({
      kind: 'malformed',
      detail: 'top level is an array, not an object',
    });
    expect(thrown(() => withDataArray('metrics', null)).detail).toBe('top level is null, not an object');
    expect(
      thrown(() => withDataArray('dvr-net', { status: 'Failed', description: 'stream not found' })).detail,
    ).toBe('no data array (description: stream not found)');
    expect(thrown(() => withDataArray('dvr-net', { data: {} })).detail).toBe('no data array');
  });
});

describe('describeValue', () => {
  it('names what was there, a long string cut at 40 characters', () => {
    expect([null, [], 3, true, {}, undefined].map(describeValue)).toEqual([
      'null',
      'an array',
      '3',
      'a boolean',
      'a object',
      'a undefined',
    ]);
    expect(describeValue('x'.repeat(40))).toBe(`the string "${'x'.repeat(40)}"`);
    expect(describeValue('y'.repeat(41))).toBe(`the string "${'y'.repeat(40)}\u2026"`);
  });
});

describe('ParseReport', () => {
  it('a bad value is an issue with its path and is dropped (undefined), a good one is kept', () => {
    const r = new ParseReport();
    expect(r.number(1.5, 'a')).toBe(1.5);
    expect(r.number('1', 'data[0].b')).toBeUndefined();
    expect(r.number(Number.POSITIVE_INFINITY, 'c')).toBeUndefined();
    expect(r.nonNegative(-1, 'd')).toBeUndefined();
    expect(r.nonNegative(0, 'd')).toBe(0);
    expect(r.string(5, 'e')).toBeUndefined();
    expect(r.string('', 'e')).toBe('');
    expect(r.boolean(1, 'f')).toBeUndefined();
    expect(r.boolean(false, 'f')).toBe(false);
    expect(r.issues).toEqual([
      { path: 'data[0].b', problem: 'expected a number, got the string "1"' },
      { path: 'c', problem: 'expected a finite number, got Infinity' },
      { path: 'd', problem: 'expected a non-negative number, got -1' },
      { path: 'e', problem: 'expected a string, got 5' },
      { path: 'f', problem: 'expected a boolean, got 1' },
    ]);
  });

  it('a count is a whole number up to 2^53-1 (beyond it JSON rounds the number), or up to the max given', () => {
    const r = new ParseReport();
    expect(r.count(MAX_COUNT, 'ok')).toBe(MAX_COUNT);
    expect(r.count(MAX_COUNT + 1, 'big')).toBeUndefined();
    expect(r.count(2.5, 'frac')).toBeUndefined();
    expect(r.count(10, 'ten', 10)).toBe(10);
    expect(r.count(11, 'eleven', 10)).toBeUndefined();
    expect(r.issues).toEqual([
      { path: 'big', problem: `expected at most ${MAX_COUNT}, got ${MAX_COUNT + 1}` },
      { path: 'frac', problem: 'expected an integer, got 2.5' },
      { path: 'eleven', problem: 'expected an integer of at most 10, got 11' },
    ]);
  });

  it('an integer may be negative, within the max either side of 0', () => {
    const r = new ParseReport();
    expect(r.integer(-MAX_TIMESTAMP_SECONDS, 't', MAX_TIMESTAMP_SECONDS)).toBe(-MAX_TIMESTAMP_SECONDS);
    expect(r.integer(MAX_TIMESTAMP_SECONDS + 1, 't', MAX_TIMESTAMP_SECONDS)).toBeUndefined();
    expect(r.integer(-0.5, 'h')).toBeUndefined();
    expect(r.issues.map((i) => i.problem)).toEqual([
      `expected an integer of at most ${MAX_TIMESTAMP_SECONDS} either side of 0, got ${MAX_TIMESTAMP_SECONDS + 1}`,
      'expected an integer, got -0.5',
    ]);
  });

  it('lists each unknown key once per place, in the order first met', () => {
    const r = new ParseReport();
    for (const k of ['data[].foo', 'extra', 'data[].foo', 'data[].bar']) r.unknownKey(k);
    expect(r.unknownKeys).toEqual(['data[].foo', 'extra', 'data[].bar']);
  });
});

describe('parseUtc', () => {
  it('reads the API times as UTC, seconds, fraction and a UTC zone optional', () => {
    const t = Date.UTC(2026, 0, 2, 3, 4);
    expect(parseUtc('2026-01-02T03:04')).toBe(t);
    expect(parseUtc('2026-01-02T03:04:05Z')).toBe(t + 5000);
    expect(parseUtc('2026-01-02T03:04:05.25')).toBe(t + 5250);
    expect(parseUtc('2026-01-02T03:04:00+00:00')).toBe(t);
    expect(parseUtc('2026-01-02T03:04:00+0000')).toBe(t);
    expect(parseUtc('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });

  it('refuses another zone, another shape, and a date or time that does not exist', () => {
    for (const bad of [
      '2026-01-02T03:04:00+01:00',
      '2026-01-02 03:04:00',
      '2026-01-02',
      '2026-02-29T00:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T23:60:00Z',
      '2026-01-01T23:59:60Z',
      '',
    ]) {
      expect(parseUtc(bad), bad).toBeUndefined();
    }
  });
});
