/**
 * The error a login token's `get()` throws without a valid token (src/auth/login-error.ts): what an operator reads
 * in a log line or on the status page, and what a poller checks (`kind: 'auth'`, a refused token).
 */
import { describe, expect, it } from 'vitest';
import { isLoginError, LoginError, type LoginReason } from '../../src/auth/login-error.js';

const USER = 'monitoring@example.com';

describe('LoginError', () => {
  it('says what happened for each reason, then names the user quoted and the detail', () => {
    const cases: [LoginReason, string][] = [
      ['login-refused', 'login refused'],
      ['login-failed', 'login failed'],
      ['login-pending', 'not logged in yet'],
      ['lifetime-too-short', 'token lifetime too short'],
    ];
    for (const [reason, what] of cases) {
      const err = new LoginError(USER, reason, 'the detail');
      expect(err.message).toBe(`${what} for user "${USER}": the detail`);
      expect(err.description).toBe(err.message);
      expect(err.reason).toBe(reason);
      expect(err.login).toBe(USER);
    }
  });

  it("is a refused token to a poller (kind 'auth'), an Error named LoginError, with the HTTP status when there was one", () => {
    const refused = new LoginError(USER, 'login-refused', 'login refused (401)', 401);
    expect(refused).toBeInstanceOf(Error);
    expect(refused.name).toBe('LoginError');
    expect(refused.kind).toBe('auth');
    expect(refused.status).toBe(401);
    expect(new LoginError(USER, 'login-failed', 'no answer').status).toBeUndefined();
  });

  it('quotes a user name that holds quotes or a line break, so a log line stays one line', () => {
    const err = new LoginError('a"b\nc', 'login-refused', 'x');
    expect(err.message).toBe('login refused for user "a\\"b\\nc": x');
    expect(err.message).not.toContain('\n');
  });
});

describe('isLoginError', () => {
  it('tells a LoginError from any other error or value', () => {
    expect(isLoginError(new LoginError(USER, 'login-pending', 'starting'))).toBe(true);
    const lookalike = Object.assign(new Error('login refused'), { name: 'LoginError', kind: 'auth' });
    expect(isLoginError(lookalike)).toBe(false);
    expect(isLoginError(undefined)).toBe(false);
    expect(isLoginError('LoginError')).toBe(false);
  });
});
