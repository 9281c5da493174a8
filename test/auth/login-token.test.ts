/**
 * The login answer's shapes, and the LoginToken's schedule on a fake clock with a scripted login: renewal at 85 %
 * of any lifetime (issue 31: from seconds up, no floor on the lifetime), a lifetime too short for the API's 20
 * logins a minute reported at the guard's edge, the ban rule, the 401/403 renewal at most once a minute, and backoff
 * on errors. test/auth/login-schedule.property.test.ts draws lifetimes, delays and failures.
 */
import { describe, expect, it } from 'vitest';
import { type LoginOutcome, parseLoginAnswer } from '../../src/auth/login.js';
import { LoginError } from '../../src/auth/login-error.js';
import type { LoginResult } from '../../src/auth/login-token.js';
import { MINUTE } from '../../src/clock.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { runLogin, testLoginToken } from '../helpers/login-token.js';
import { passwordFile } from '../helpers/password-file.js';

describe('parseLoginAnswer', () => {
  it('reads the documented answer, auth_token, a nested data object and a numeric string lifetime', () => {
    expect(
      parseLoginAnswer(200, '{"status":200,"person_id":1,"token":"cdn1_A","lifetime":21599000}'),
    ).toEqual({
      ok: true,
      token: 'cdn1_A',
      lifetimeMs: 21_599_000,
      lifetimeAssumed: false,
    });
    expect(parseLoginAnswer(200, '{"status":"200","auth_token":"B","lifetime":"60000"}')).toMatchObject({
      ok: true,
      token: 'B',
      lifetimeMs: 60_000,
    });
    expect(parseLoginAnswer(200, '{"data":{"token":"C","lifetime":90000}}')).toMatchObject({
      ok: true,
      token: 'C',
      lifetimeMs: 90_000,
    });
    // No lifetime: the documented 6 hours, and the answer says it was assumed.
    expect(parseLoginAnswer(200, '{"token":"D"}')).toMatchObject({
      ok: true,
      lifetimeMs: 6 * 3600_000,
      lifetimeAssumed: true,
    });
  });

  it('refuses on 401, 403, 400 and a status other than 200 even under HTTP 200; retries 429, 5xx, garbage', () => {
    for (const code of [400, 401, 403, 404]) {
      expect(parseLoginAnswer(code, '')).toMatchObject({ ok: false, result: 'refused', status: code });
    }
    expect(parseLoginAnswer(200, '{"status":401,"token":"X"}')).toMatchObject({
      ok: false,
      result: 'refused',
    });
    expect(parseLoginAnswer(200, '{"status":"no","token":"X"}')).toMatchObject({
      ok: false,
      result: 'refused',
    });
    expect(parseLoginAnswer(429, '', 7000)).toMatchObject({ result: 'error', retryAfterMs: 7000 });
    expect(parseLoginAnswer(503, '')).toMatchObject({ result: 'error', status: 503 });
    expect(parseLoginAnswer(200, 'not json')).toMatchObject({ result: 'error' });
    expect(parseLoginAnswer(200, '[1]')).toMatchObject({ result: 'error' });
    expect(parseLoginAnswer(200, '{"status":200}')).toMatchObject({
      result: 'error',
      detail: 'login answer has no token',
    });
    // No message carries the token the answer held.
    expect(JSON.stringify(parseLoginAnswer(200, '{"status":403,"token":"SECRET-T"}'))).not.toContain(
      'SECRET-T',
    );
  });
});

/**
 * A scripted login: each call takes the next outcome (the last repeats) and is recorded with its time; answered
 * after `answerMs` of the clock.
 */
function scripted(
  clock: FakeClock,
  outcomes: Array<LoginOutcome | ((password: string) => LoginOutcome)>,
  answerMs = 0,
) {
  const calls: Array<{ at: number; password: string }> = [];
  let n = 0;
  const send = async (_user: string, password: string, signal: AbortSignal) => {
    calls.push({ at: clock.now(), password });
    if (answerMs > 0) await clock.sleep(answerMs, signal);
    const o = outcomes[Math.min(n++, outcomes.length - 1)]!;
    return typeof o === 'function' ? o(password) : o;
  };
  return { calls, send };
}

const ok = (token: string, lifetimeMs: number): LoginOutcome => ({
  ok: true,
  token,
  lifetimeMs,
  lifetimeAssumed: false,
});
const refused: LoginOutcome = { ok: false, result: 'refused', status: 401, detail: 'login refused (401)' };

async function run(clock: FakeClock, ms: number, step = 1000): Promise<void> {
  for (let t = 0; t < ms; t += step) await clock.advance(step);
}

describe('LoginToken', () => {
  it.each([
    [5_000, 'seconds', 4_250],
    [20_000, '20 seconds (issue 31: used to be taken for a minute)', 17_000],
    [60_000, 'a minute', 51_000],
    [30 * MINUTE, '30 minutes', 25.5 * MINUTE],
    [21_599_000, '6 hours', 18_359_150],
  ])(
    'renews a %i ms token (%s) at 85 %% of its lifetime, never letting it expire',
    async (lifetime, _what, every) => {
      const clock = new FakeClock();
      let i = 0;
      const { calls, send } = scripted(clock, [() => ok(`t${i++}`, lifetime)]);
      const source = testLoginToken({ clock, send });
      const stop = await runLogin(source);
      const horizon = Math.min(lifetime * 10, 24 * 3600_000);
      const step = Math.max(250, lifetime / 20);
      const seen = new Set<string>();
      for (let t = 0; t < horizon; t += step) {
        await clock.advance(step);
        seen.add(source.get()); // never throws: always a valid token
      }
      await stop();
      for (let k = 1; k < calls.length; k++) expect(calls[k]!.at - calls[k - 1]!.at).toBe(every);
      expect(calls.length).toBeGreaterThan(horizon / lifetime);
      expect(seen.size).toBeGreaterThan(1);
    },
  );

  it('20-second tokens answered in 400 ms: a request every 50 ms carries a valid token, a login every 17 s', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    let i = 0;
    const expiry = new Map<string, number>();
    const { calls, send } = scripted(
      clock,
      [
        () => {
          const token = `t${i++}`;
          // The server counts the lifetime from when the login reached it: here the moment it was sent.
          expiry.set(token, calls.at(-1)!.at + 20_000);
          return ok(token, 20_000);
        },
      ],
      400,
    );
    const results: LoginResult[] = [];
    const source = testLoginToken({ clock, send, onLogin: (r) => results.push(r) });
    const ctl = new AbortController();
    const loop = source.run(ctl.signal);
    await clock.advance(400);
    let expired = 0;
    let requests = 0;
    // A request every 50 ms for 5 minutes, each checked against the server's expiry at its send time.
    for (let t = 0; t < 5 * MINUTE; t += 50) {
      await clock.advance(50);
      const token = source.get();
      requests++;
      if (clock.now() >= expiry.get(token)!) expired++;
    }
    ctl.abort();
    await loop;
    expect(expired).toBe(0);
    expect(requests).toBe(6000);
    expect(results.every((r) => r === 'ok')).toBe(true);
    // Renewed at 17 s (85 %): 18 logins in 5 minutes and 400 ms, never more than 20 in any minute.
    expect(calls.map((c) => c.at - start)).toEqual(Array.from({ length: 18 }, (_, k) => k * 17_000));
  });

  it.each([
    [3_002, 'renewed in time', 'ok', []],
    [3_001, 'too short: the renewal is answered the millisecond the token expires', 'too_short', []],
    [3_000, 'too short: each token ends a millisecond before the next arrives', 'too_short', [3_000]],
  ] as const)(
    'at the edge of the login limit, with 1 ms answers, a %i ms token is %s',
    async (lifetime, _what, result, gapAt) => {
      const clock = new FakeClock();
      const start = clock.now();
      let i = 0;
      const { calls, send } = scripted(clock, [() => ok(`t${i++}`, lifetime)], 1);
      const results: LoginResult[] = [];
      const { log, lines } = captureLog();
      const source = testLoginToken({ clock, send, log, onLogin: (r) => results.push(r) });
      const ctl = new AbortController();
      const loop = source.run(ctl.signal);
      await clock.advance(1);
      const refusals: Array<{ at: number; reason: string }> = [];
      // A request at every millisecond of the first minute.
      for (let t = 1; t < MINUTE - 1; t++) {
        await clock.advance(1);
        try {
          source.get();
        } catch (e) {
          refusals.push({ at: clock.now() - start, reason: (e as LoginError).reason });
        }
      }
      ctl.abort();
      await loop;
      // Never two logins closer than the limit allows (60 s / 20): 20 in the first minute, every 3 s.
      expect(calls.map((c) => c.at - start)).toEqual(Array.from({ length: 20 }, (_, k) => k * 3_000));
      expect(results).toEqual(Array.from({ length: 20 }, () => result));
      // No request without a token but in the gaps a too-short lifetime leaves, refused with that reason.
      const gaps = gapAt.flatMap((g) => Array.from({ length: 19 }, (_, k) => g + k * 3_000));
      expect(refusals).toEqual(gaps.map((at) => ({ at, reason: 'lifetime-too-short' })));
      // Said once, not at every login.
      const shortLines = lines.filter((l) => l.includes('token lifetime too short'));
      expect(shortLines).toHaveLength(result === 'too_short' ? 1 : 0);
      if (result === 'too_short') expect(shortLines[0]).toContain(`"lifetime_ms":${lifetime}`);
    },
  );

  it('a token that has expired when its answer arrives is not used, and the next logins back off, not 20 a minute', async () => {
    const clock = new FakeClock();
    // A lifetime of 1 ms, answered in 5 ms.
    const { calls, send } = scripted(clock, [ok('dead', 1)], 5);
    const results: LoginResult[] = [];
    const source = testLoginToken({ clock, send, random: () => 0.5, onLogin: (r) => results.push(r) });
    const ctl = new AbortController();
    const loop = source.run(ctl.signal);
    await clock.advance(5);
    expect(() => source.get()).toThrow(/token lifetime too short/);
    try {
      source.get();
    } catch (e) {
      expect((e as LoginError).reason).toBe('lifetime-too-short');
    }
    expect(source.status.state).toBe('lifetime-too-short');
    await run(clock, 10 * MINUTE, 500);
    ctl.abort();
    await loop;
    // Backoff as after an error (5 s doubling to 5 min, here half of each): 2.5 s, 5 s, 10 s ... then 2.5 min.
    expect(calls.length).toBeGreaterThan(5);
    expect(calls.length).toBeLessThanOrEqual(12);
    expect(results.every((r) => r === 'too_short')).toBe(true);
  });

  it('a 401/403 right after a login waits for the limit: the forced renewal comes 3 s after the login', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    let i = 0;
    const { calls, send } = scripted(clock, [() => ok(`t${i++}`, 3600_000)]);
    const source = testLoginToken({ clock, send });
    const stop = await runLogin(source);
    await clock.advance(1_000);
    source.refresh();
    await clock.advance(1_999);
    expect(calls).toHaveLength(1);
    await clock.advance(1);
    expect(calls.map((c) => c.at - start)).toEqual([0, 3_000]);
    await stop();
  });

  it('retries a refused password at most 3 times an hour and 4 times in 3 hours; a new password at once', async () => {
    const clock = new FakeClock();
    const { fs, replace } = passwordFile('wrong');
    const { calls, send } = scripted(clock, [(pw) => (pw === 'right' ? ok('tok', 3600_000) : refused)]);
    const results: string[] = [];
    const source = testLoginToken({
      clock,
      credential: { username: 'u', passwordFile: '/pw' },
      fs,
      send,
      onLogin: (r) => results.push(r),
    });
    const stop = await runLogin(source);
    expect(() => source.get()).toThrow(LoginError);
    try {
      source.get();
    } catch (e) {
      expect((e as LoginError).reason).toBe('login-refused');
      expect((e as LoginError).kind).toBe('auth');
      expect((e as Error).message).not.toContain('wrong');
    }
    // An API's 401/403 does not cause another attempt while refused.
    expect(() => source.refresh()).toThrow(LoginError);
    await run(clock, 6 * 3600_000, 10_000);
    const times = calls.map((c) => c.at);
    for (const t of times) {
      expect(times.filter((u) => u >= t && u < t + 3600_000).length).toBeLessThanOrEqual(3);
      expect(times.filter((u) => u >= t && u < t + 3 * 3600_000).length).toBeLessThanOrEqual(4);
    }
    expect(results.every((r) => r === 'refused')).toBe(true);
    const before = calls.length;
    replace('right');
    await run(clock, 10_000, 1000);
    expect(calls.length).toBe(before + 1);
    expect(calls.at(-1)!.password).toBe('right');
    expect(source.get()).toBe('tok');
    await stop();
  });

  it('renews at once after a 401/403, at most once a minute, and tells its listeners', async () => {
    const clock = new FakeClock();
    let i = 0;
    const { calls, send } = scripted(clock, [() => ok(`t${i++}`, 3600_000)]);
    const source = testLoginToken({ clock, send });
    let told = 0;
    source.onToken(() => told++);
    const stop = await runLogin(source);
    expect(source.generation).toBe(1);
    await clock.advance(5000);
    expect(source.refresh()).toBe('t0');
    await clock.advance(0);
    expect(source.get()).toBe('t1');
    source.refresh();
    source.refresh();
    await clock.advance(30_000);
    expect(calls).toHaveLength(2);
    await clock.advance(30_000);
    source.refresh();
    await clock.advance(0);
    expect(calls).toHaveLength(3);
    expect(told).toBe(3);
    await stop();
  });

  it('a 401/403 that new tokens do not cure costs a login every 15 minutes after 3 in a row, not every minute', async () => {
    const clock = new FakeClock();
    let i = 0;
    const { calls, send } = scripted(clock, [() => ok(`t${i++}`, 6 * 3600_000)]);
    const source = testLoginToken({ clock, send });
    const stop = await runLogin(source);
    // An account the user may not see: every poll (once a minute) gets 403 and asks for a new token.
    for (let m = 0; m < 60; m++) {
      await clock.advance(60_000);
      source.refresh();
      await clock.advance(0);
    }
    const forced = calls.slice(1).map((c) => c.at - calls[0]!.at);
    expect(forced.slice(0, 3)).toEqual([60_000, 120_000, 180_000]);
    expect(forced.slice(3)).toEqual([18 * 60_000, 33 * 60_000, 48 * 60_000]);
    await stop();
  });

  it('backs off on errors (at least Retry-After) and keeps serving a valid token while renewal fails', async () => {
    const clock = new FakeClock();
    const error: LoginOutcome = {
      ok: false,
      result: 'error',
      status: 429,
      retryAfterMs: 60_000,
      detail: 'too many',
    };
    const { calls, send } = scripted(clock, [
      ok('t0', 10 * MINUTE),
      error,
      error,
      error,
      ok('t1', 10 * MINUTE),
    ]);
    const source = testLoginToken({ clock, send, random: () => 0.5 });
    const stop = await runLogin(source);
    await run(clock, 8.5 * MINUTE + 1000);
    expect(calls).toHaveLength(2);
    expect(source.get()).toBe('t0');
    await run(clock, 3 * MINUTE, 1000);
    expect(calls.map((c) => c.at - calls[1]!.at)).toEqual(
      [-8.5 * MINUTE, 0, 60_000, 120_000, 180_000].slice(0, calls.length),
    );
    await stop();
  });
});
