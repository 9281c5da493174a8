/**
 * The login answer's shapes, and the LoginToken's schedule on a fake clock with a scripted login: renewal at 85 %
 * of any lifetime, the ban rule, the 401/403 renewal at most once a minute, and backoff on errors.
 */
import { describe, expect, it } from 'vitest';
import { type LoginOutcome, parseLoginAnswer } from '../../src/auth/login.js';
import { LoginError } from '../../src/auth/login-token.js';
import { MINUTE } from '../../src/clock.js';
import { FakeClock } from '../helpers/fake-clock.js';
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

/** A scripted login: each call takes the next outcome (the last repeats) and is recorded with its time. */
function scripted(clock: FakeClock, outcomes: Array<LoginOutcome | ((password: string) => LoginOutcome)>) {
  const calls: Array<{ at: number; password: string }> = [];
  let n = 0;
  const send = async (_user: string, password: string) => {
    calls.push({ at: clock.now(), password });
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
    [60_000, 'a minute, the shortest accepted'],
    [30 * MINUTE, '30 minutes'],
    [21_599_000, '6 hours'],
  ])('renews a %i ms token (%s) at 85 %% of its lifetime, never letting it expire', async (lifetime) => {
    const clock = new FakeClock();
    let i = 0;
    const { calls, send } = scripted(clock, [() => ok(`t${i++}`, lifetime)]);
    const source = testLoginToken({ clock, send });
    const stop = await runLogin(source);
    const horizon = Math.min(lifetime * 10, 24 * 3600_000);
    const seen = new Set<string>();
    for (let t = 0; t < horizon; t += Math.max(1000, lifetime / 20)) {
      await clock.advance(Math.max(1000, lifetime / 20));
      seen.add(source.get()); // never throws: always a valid token
    }
    await stop();
    for (let k = 1; k < calls.length; k++) {
      expect(calls[k]!.at - calls[k - 1]!.at).toBe(Math.max(30_000, Math.floor(lifetime * 0.85)));
    }
    expect(calls.length).toBeGreaterThan(horizon / lifetime);
    expect(seen.size).toBeGreaterThan(1);
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
