/**
 * The traffic answer's echo of the request (src/traffic/echo.ts), through checkEcho: an answer that echoes another
 * start, end or account than was asked is `malformed` (a parse error of the metrics API, the window retried), with
 * every differing field named; an echo left out, or an account that is not a string, is taken as answering what
 * was asked.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import { checkEcho } from '../../src/traffic/echo.js';

const START = Date.UTC(2026, 2, 1, 12, 0);
const END = START + 5 * 60_000;
const asked = { account: 'acme', start: START, end: END };

function refusal(echoed: Parameters<typeof checkEcho>[1]): ApiError {
  try {
    checkEcho(asked, echoed);
  } catch (e) {
    return e as ApiError;
  }
  throw new Error('checkEcho took the answer');
}

describe('checkEcho', () => {
  it('takes an answer that echoes what was asked, or leaves the echo out', () => {
    expect(() => checkEcho(asked, { account: 'acme', start: START, end: END })).not.toThrow();
    expect(() => checkEcho(asked, {})).not.toThrow();
    expect(() => checkEcho(asked, { start: START })).not.toThrow();
    expect(() => checkEcho(asked, { account: 42, start: START, end: END })).not.toThrow();
    // Nothing asked of a field: nothing to compare.
    expect(() => checkEcho({}, { account: 'beta', start: 1, end: 2 })).not.toThrow();
  });

  it('refuses another window as a malformed answer of the metrics API, naming what it echoes and what was asked', () => {
    const e = refusal({ account: 'acme', start: START + 60_000, end: END });
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ api: 'metrics', kind: 'malformed' });
    expect(e.message).toContain('start 2026-03-01T12:01 (asked 2026-03-01T12:00)');
    const end = refusal({ end: END + 5 * 60_000 });
    expect(end.message).toContain('end 2026-03-01T12:10 (asked 2026-03-01T12:05)');
  });

  it('refuses another account, and names every field that differs', () => {
    const e = refusal({ account: 'beta', start: START - 5 * 60_000, end: END - 5 * 60_000 });
    expect(e).toMatchObject({ api: 'metrics', kind: 'malformed' });
    expect(e.message).toContain('start 2026-03-01T11:55 (asked 2026-03-01T12:00)');
    expect(e.message).toContain('end 2026-03-01T12:00 (asked 2026-03-01T12:05)');
    expect(e.message).toContain('account "beta" (asked "acme")');
  });
});
