/**
 * One window read for a backfill until it has an answer (src/backfill/reader.ts), on a fake clock with made-up
 * failures of the API's own error type (src/http/errors.ts ApiError): 5xx, network errors and malformed answers
 * retried after the backoff (full jitter, here drawn at its middle), a 429 after its Retry-After; a 504 or an answer
 * over api.max_body_bytes read as two halves in whole minutes, a one-minute window retried instead; a 422 skipped
 * with its reason; 401/403, an unreadable token file and any other 4xx stop the backfill (BackfillStop) with the
 * reason and the way on; an outage logged once per cause; the interruption ends the waits. The same rules through
 * the whole command against the simulator: test/backfill/faults.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { BackfillStop, WindowReader, type WindowResult } from '../../src/backfill/reader.js';
import { MINUTE } from '../../src/clock.js';
import { TokenError } from '../../src/config/token.js';
import { ApiError, type ErrorKind } from '../../src/http/errors.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const T0 = Date.UTC(2026, 9, 1);
const BACKOFF = { baseMs: 1000, capMs: 4000 };

const answer = (): TrafficResponse => ({
  account: 'acme',
  metrics: [],
  issues: [],
  unknownKeys: [],
  records: [],
});
const apiError = (
  kind: ErrorKind,
  status?: number,
  extra: { retryAfterMs?: number; description?: string } = {},
) =>
  new ApiError({ api: 'metrics', kind, endpoint: 'GET /metrics', ...(status ? { status } : {}), ...extra });

/** A reader of account acme whose fetch gives what `fail` says for each attempt (undefined: an answer). */
function reader(fail: (start: number, end: number, attempt: number) => unknown) {
  const clock = new FakeClock(T0);
  const { log, lines } = captureLog();
  const calls: [number, number][] = [];
  const stop = new AbortController();
  let retries = 0;
  const r = new WindowReader(
    'acme',
    async (start, end) => {
      calls.push([start, end]);
      const err = fail(start, end, calls.length - 1);
      if (err !== undefined) throw err;
      return answer();
    },
    { clock, log, backoff: BACKOFF, random: () => 0.5, signal: stop.signal, onRetry: () => retries++ },
  );
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { r, clock, calls, stop, logged, retries: () => retries };
}

const spans = (results: WindowResult[]) =>
  results.map((w) => [w.kind, (w.start - T0) / MINUTE, (w.end - T0) / MINUTE]);

describe('WindowReader', () => {
  it('gives the answer of a window read at once', async () => {
    const { r, calls } = reader(() => undefined);
    const got = await r.read(T0, T0 + 10 * MINUTE);
    expect(spans(got)).toEqual([['answer', 0, 10]]);
    expect(calls).toHaveLength(1);
  });

  it('retries what may pass after the backoff, doubling up to its cap, as long as it takes', async () => {
    const failures = [
      apiError('server', 503),
      apiError('network'),
      apiError('malformed', 200),
      apiError('server', 500),
    ];
    const { r, clock, calls, retries } = reader((_s, _e, n) => failures[n]);
    const reading = r.read(T0, T0 + 10 * MINUTE);
    // Full jitter drawn at 0.5: half of 1 s, 2 s, 4 s, then of the 4 s cap.
    for (const wait of [500, 1000, 2000, 2000]) {
      await settle();
      const before = calls.length;
      await clock.advance(wait - 1);
      expect(calls.length).toBe(before);
      await clock.advance(1);
      expect(calls.length).toBe(before + 1);
    }
    expect(spans(await reading)).toEqual([['answer', 0, 10]]);
    expect(retries()).toBe(4);
  });

  it('waits a 429 out for its Retry-After, or the backoff without one', async () => {
    const failures = [apiError('rate-limited', 429, { retryAfterMs: 7000 }), apiError('rate-limited', 429)];
    const { r, clock, calls } = reader((_s, _e, n) => failures[n]);
    const reading = r.read(T0, T0 + MINUTE);
    await settle();
    await clock.advance(6999);
    expect(calls).toHaveLength(1);
    await clock.advance(1);
    expect(calls).toHaveLength(2);
    // The second 429 has no Retry-After: the backoff of the second attempt, 2 s drawn at 0.5.
    await clock.advance(999);
    expect(calls).toHaveLength(2);
    await clock.advance(1);
    expect(spans(await reading)).toEqual([['answer', 0, 1]]);
  });

  it('reads a window the API cannot answer whole (504, too large) in halves of whole minutes, in time order', async () => {
    // Anything over 2 minutes times out; over 1 minute but within 2, the answer is too large once.
    let large = 0;
    const { r, calls } = reader((s, e) => {
      if (e - s > 2 * MINUTE) return apiError('timeout', 504);
      if (e - s === 2 * MINUTE && large++ === 0) return apiError('too_large', 200);
      return undefined;
    });
    const got = await r.read(T0, T0 + 10 * MINUTE);
    expect(spans(got)).toEqual([
      ['answer', 0, 1],
      ['answer', 1, 2],
      ['answer', 2, 3],
      ['answer', 3, 5],
      ['answer', 5, 7],
      ['answer', 7, 8],
      ['answer', 8, 10],
    ]);
    for (const [s, e] of calls) expect([(s - T0) % MINUTE, (e - T0) % MINUTE]).toEqual([0, 0]);
  });

  it('retries a one-minute window that still times out, it cannot be halved', async () => {
    const { r, clock, calls } = reader((_s, _e, n) => (n < 2 ? apiError('timeout', 504) : undefined));
    const reading = r.read(T0, T0 + MINUTE);
    await settle();
    await clock.advance(500);
    await clock.advance(1000);
    expect(spans(await reading)).toEqual([['answer', 0, 1]]);
    expect(calls.every(([s, e]) => e - s === MINUTE)).toBe(true);
  });

  it('skips a window the API rejects (422), with the reason, logged, and asks nothing more of it', async () => {
    const { r, calls, logged } = reader(() =>
      apiError('invalid', 422, { description: 'the interval is out of the retention period' }),
    );
    const got = await r.read(T0, T0 + 10 * MINUTE);
    expect(got).toEqual([
      {
        kind: 'rejected',
        start: T0,
        end: T0 + 10 * MINUTE,
        reason: '422: the interval is out of the retention period',
      },
    ]);
    expect(calls).toHaveLength(1);
    expect(logged()).toContainEqual(
      expect.objectContaining({
        // pino's warn
        level: 40,
        msg: 'metrics API rejected a window (422); it is skipped',
        account: 'acme',
        start: '2026-10-01T00:00:00.000Z',
        minutes: 10,
      }),
    );
  });

  it('stops the backfill when the token is refused, saying how to go on', async () => {
    for (const status of [401, 403]) {
      const { r, calls } = reader(() => apiError('auth', status, { description: 'invalid token' }));
      const err = await r.read(T0, T0 + MINUTE).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BackfillStop);
      expect((err as Error).message).toBe(
        `account acme: the metrics API refuses the token (${status}: invalid token); fix the credential, then run again with --resume`,
      );
      expect(calls).toHaveLength(1);
    }
  });

  it('stops on an unreadable token file and on any other 4xx, naming the cause', async () => {
    const noFile = reader(() => new TokenError('token file /run/secrets/acme: ENOENT'));
    await expect(noFile.r.read(T0, T0 + MINUTE)).rejects.toThrow(
      new BackfillStop('account acme: configuration: token file /run/secrets/acme: ENOENT'),
    );
    const bad = reader(() => apiError('invalid', 400, { description: 'unknown metric' }));
    await expect(bad.r.read(T0, T0 + MINUTE)).rejects.toThrow(
      new BackfillStop('account acme: the metrics API refused the request (400: unknown metric)'),
    );
  });

  it('logs an outage once per cause, not once per attempt', async () => {
    const failures = [503, 503, 503, 500, 500].map((s) => apiError('server', s));
    const { r, clock, logged } = reader((_s, _e, n) => failures[n]);
    const reading = r.read(T0, T0 + MINUTE);
    for (let i = 0; i < failures.length; i++) {
      await settle();
      await clock.advance(BACKOFF.capMs);
    }
    await reading;
    const warned = logged().filter((l) => l.msg === 'metrics request failed; retrying with backoff');
    expect(warned.map((l) => [l.account, String(l.error).slice(0, 3)])).toEqual([
      ['acme', '503'],
      ['acme', '500'],
    ]);
  });

  it('ends its wait when the backfill is interrupted, asking nothing more', async () => {
    const { r, clock, calls, stop } = reader(() => apiError('server', 503));
    const reading = r.read(T0, T0 + MINUTE);
    await settle();
    expect(clock.pending).toBe(1);
    stop.abort(new Error('SIGTERM'));
    await expect(reading).rejects.toThrow('SIGTERM');
    await clock.advance(BACKOFF.capMs * 10);
    expect(calls).toHaveLength(1);
    // Already interrupted: nothing is asked.
    await expect(r.read(T0, T0 + MINUTE)).rejects.toThrow('SIGTERM');
    expect(calls).toHaveLength(1);
  });
});
