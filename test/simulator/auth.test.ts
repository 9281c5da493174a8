/**
 * The simulator's login (src/simulator/auth.ts) without HTTP, on a fake clock, against docs/upstream-api.md,
 * "Login" (documented limits: 20 logins a minute, 7 wrong passwords ban the user for 3 hours, tokens live just
 * under 6 hours) and the assumptions of its header: a missing field is 400, a wrong password or unknown user 401,
 * a banned user 403 even with the right password, a new login does not end older tokens, `revoke` ends them.
 * The same over HTTP, with each API's refusal of an expired token: ./login.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AuthSim, DEFAULT_TOKEN_LIFETIME_MS, type SimUser } from '../../src/simulator/auth.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T0 = Date.UTC(2026, 2, 3, 12, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;

function sim(opts: { lifetimeMs?: number; banDurationMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const users: SimUser[] = [
    { username: 'ops@example.com', password: 'right', accounts: ['north', 'south'] },
    { username: 'dev@example.com', password: 'other', accounts: ['south'] },
  ];
  return { clock, auth: new AuthSim({ clock, users, ...opts }) };
}

function tokenOf(answer: { status: number; body?: unknown }): string {
  expect(answer.status).toBe(200);
  return (answer.body as { token: string }).token;
}

describe('AuthSim.login', () => {
  it('answers the documented success: status 200, a person_id of the user, a cdn1_ token and the lifetime in ms', () => {
    const { auth } = sim();
    expect(DEFAULT_TOKEN_LIFETIME_MS).toBe(6 * HOUR - 1000);
    const ops = auth.login('ops@example.com', 'right');
    expect(ops).toEqual({
      status: 200,
      body: {
        status: 200,
        person_id: expect.any(Number),
        token: expect.stringMatching(/^cdn1_[0-9A-F]{30}$/),
        lifetime: 21_599_000,
      },
    });
    const again = auth.login('ops@example.com', 'right');
    const dev = auth.login('dev@example.com', 'other');
    expect((again.body as { person_id: number }).person_id).toBe(
      (ops.body as { person_id: number }).person_id,
    );
    expect((dev.body as { person_id: number }).person_id).not.toBe(
      (ops.body as { person_id: number }).person_id,
    );
    expect(tokenOf(again)).not.toBe(tokenOf(ops));
  });

  it('is 400 without a username or a password, 401 (no body) for a wrong password or an unknown user', () => {
    const { auth } = sim();
    expect(auth.login(undefined, 'right')).toEqual({ status: 400 });
    expect(auth.login('ops@example.com', undefined)).toEqual({ status: 400 });
    expect(auth.login('ops@example.com', '')).toEqual({ status: 400 });
    expect(auth.login('', 'right')).toEqual({ status: 400 });
    expect(auth.login('ops@example.com', 'wrong')).toEqual({ status: 401 });
    expect(auth.login('nobody@example.com', 'right')).toEqual({ status: 401 });
    expect(auth.logins.map((l) => l.result)).toEqual([
      'bad-request',
      'bad-request',
      'bad-request',
      'bad-request',
      'wrong',
      'wrong',
    ]);
  });

  it('keeps a token valid for its lifetime on the clock, for the accounts of its user; a new login leaves it valid', () => {
    const { clock, auth } = sim({ lifetimeMs: 10 * MIN });
    const first = tokenOf(auth.login('ops@example.com', 'right'));
    expect(auth.userForToken(first)?.accounts).toEqual(['north', 'south']);
    expect(auth.kind(first)).toBe('issued');
    clock.set(T0 + 5 * MIN);
    const second = tokenOf(auth.login('ops@example.com', 'right'));
    expect(auth.kind(first)).toBe('issued');
    clock.set(T0 + 10 * MIN - 1);
    expect(auth.userForToken(first)?.username).toBe('ops@example.com');
    clock.set(T0 + 10 * MIN);
    expect(auth.userForToken(first)).toBeUndefined();
    expect(auth.kind(first)).toBe('expired');
    expect(auth.kind(second)).toBe('issued');
    // A changed lifetime applies to the tokens issued from then on.
    auth.lifetimeMs = MIN;
    const short = tokenOf(auth.login('ops@example.com', 'right'));
    expect(auth.kind(short)).toBe('issued');
    clock.set(T0 + 11 * MIN);
    expect(auth.kind(short)).toBe('expired');
    expect(auth.kind(second)).toBe('issued');
  });

  it('tells a request log what a token is, never which: none, unknown, issued, expired, revoked', () => {
    const { auth } = sim();
    const token = tokenOf(auth.login('ops@example.com', 'right'));
    const dev = tokenOf(auth.login('dev@example.com', 'other'));
    expect(auth.kind(undefined)).toBe('none');
    expect(auth.kind('')).toBe('none');
    expect(auth.kind('cdn1_NOT_ISSUED')).toBe('unknown');
    expect(auth.revoke('ops@example.com')).toBe(1);
    expect(auth.kind(token)).toBe('revoked');
    expect(auth.userForToken(token)).toBeUndefined();
    expect(auth.revoke('ops@example.com')).toBe(0);
    expect(auth.kind(dev)).toBe('issued');
    expect(auth.issuedTokens().sort()).toEqual([token, dev].sort());
  });
});

describe('the ban', () => {
  it('bans after 7 wrong passwords within 3 hours: every login 403, even the right password, for the ban duration', () => {
    const { clock, auth } = sim({ banDurationMs: HOUR });
    for (let i = 0; i < 6; i++) {
      clock.set(T0 + i * 20 * MIN);
      expect(auth.login('ops@example.com', 'wrong').status).toBe(401);
    }
    expect(auth.banned('ops@example.com')).toBe(false);
    clock.set(T0 + 2 * HOUR + 59 * MIN);
    expect(auth.login('ops@example.com', 'wrong').status).toBe(401);
    expect(auth.banned('ops@example.com')).toBe(true);
    expect(auth.login('ops@example.com', 'right')).toEqual({ status: 403 });
    // Another user is not banned.
    expect(auth.login('dev@example.com', 'other').status).toBe(200);
    clock.set(T0 + 3 * HOUR + 59 * MIN);
    expect(auth.banned('ops@example.com')).toBe(false);
    expect(auth.login('ops@example.com', 'right').status).toBe(200);
  });

  it('does not ban for 7 wrong passwords spread over more than 3 hours, nor after a right one in between', () => {
    const spread = sim();
    for (let i = 0; i < 7; i++) {
      spread.clock.set(T0 + i * 31 * MIN);
      spread.auth.login('ops@example.com', 'wrong');
    }
    expect(spread.auth.banned('ops@example.com')).toBe(false);

    const reset = sim();
    for (let i = 0; i < 6; i++) {
      reset.clock.set(T0 + i * 4 * MIN);
      reset.auth.login('ops@example.com', 'wrong');
    }
    reset.clock.set(T0 + 30 * MIN);
    expect(reset.auth.login('ops@example.com', 'right').status).toBe(200);
    reset.clock.set(T0 + 31 * MIN);
    expect(reset.auth.login('ops@example.com', 'wrong').status).toBe(401);
    expect(reset.auth.banned('ops@example.com')).toBe(false);
  });

  it('a changed password: the old one is wrong from then on', () => {
    const { auth } = sim();
    auth.setPassword('ops@example.com', 'new');
    expect(auth.login('ops@example.com', 'right').status).toBe(401);
    expect(auth.login('ops@example.com', 'new').status).toBe(200);
    expect(() => auth.setPassword('nobody@example.com', 'x')).toThrow('unknown user nobody@example.com');
  });
});

describe('20 logins a minute', () => {
  it('answers the 21st login of a user within a minute 429, with Retry-After the seconds until the oldest leaves the minute', () => {
    const { clock, auth } = sim();
    for (let i = 0; i < 20; i++) {
      clock.set(T0 + i * 1000);
      // Wrong passwords count too: every attempt is a login request (the first 6 are wrong, short of a ban).
      expect(auth.login('ops@example.com', i < 6 ? 'wrong' : 'right').status).toBe(i < 6 ? 401 : 200);
    }
    clock.set(T0 + 20_500);
    // The oldest login (T0) leaves the minute at T0 + 60 s: 39.5 s from now, rounded up.
    expect(auth.login('ops@example.com', 'right')).toEqual({ status: 429, retryAfter: 40 });
    expect(auth.logins.at(-1)).toEqual({
      time: T0 + 20_500,
      username: 'ops@example.com',
      result: 'rate-limited',
    });
    // Another user has a minute of their own.
    expect(auth.login('dev@example.com', 'other').status).toBe(200);
    // After a quiet minute, logins are admitted again.
    clock.set(T0 + 20_500 + MIN);
    expect(auth.login('ops@example.com', 'right').status).toBe(200);
  });

  // A refused (429) attempt takes no place among the minute's logins: one that did would make the wait the answer
  // names too short, and a client that keeps waiting it refused for ever.
  it('admits the login a client sends after waiting the Retry-After it was given', () => {
    const { clock, auth } = sim();
    for (let i = 0; i < 20; i++) {
      clock.set(T0 + i * 1000);
      auth.login('ops@example.com', 'right');
    }
    clock.set(T0 + 20_500);
    const refused = auth.login('ops@example.com', 'right');
    expect(refused.status).toBe(429);
    clock.set(T0 + 20_500 + refused.retryAfter! * 1000);
    expect(auth.login('ops@example.com', 'right').status).toBe(200);
  });

  it('answers 429 before looking at the password: a rate-limited wrong password does not count towards the ban', () => {
    const { clock, auth } = sim();
    for (let i = 0; i < 20; i++) auth.login('ops@example.com', 'right');
    for (let i = 0; i < 10; i++) expect(auth.login('ops@example.com', 'wrong').status).toBe(429);
    expect(auth.banned('ops@example.com')).toBe(false);
    clock.set(T0 + MIN);
    expect(auth.login('ops@example.com', 'right').status).toBe(200);
  });
});
