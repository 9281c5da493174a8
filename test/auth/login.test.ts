/**
 * The login request (src/auth/login.ts) against the simulator over loopback, as docs/upstream-api.md, "Login",
 * documents it: `POST /app/oauth/v1/token/` with the form fields `username` and `password` and no token header;
 * a 200 with a token and its lifetime; 400, 401 and 403 refused (retrying cannot help, every wrong password
 * counts towards the ban); 429 and no answer are errors to retry, 429 with its Retry-After. And the edges of the
 * tolerant reading of an answer that ./login-token.test.ts and ./hostile-login.test.ts leave: the token's length
 * and characters at their limits, the lifetime at its clamp and below 1 ms, 3xx, whitespace.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIFETIME_MS,
  LOGIN_PATH,
  login,
  MAX_LIFETIME_MS,
  MAX_TOKEN_LENGTH,
  parseLoginAnswer,
} from '../../src/auth/login.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 4, 4, 9, 0, 0);
const PASSWORD_SEEN = 'p@ss word&=%'; // characters a form must encode

describe('login (over loopback, against the simulator)', () => {
  it('sends the documented request and reads the documented answer: the token and its lifetime', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock, tokenLifetimeMs: 30 * 60_000 });
    sim.setPassword(DEMO_USER, PASSWORD_SEEN);
    // The base URL as a user may write it, with a trailing slash.
    const outcome = await login({
      baseUrl: `${sim.url}//`,
      username: DEMO_USER,
      password: PASSWORD_SEEN,
      now: NOW,
    });
    expect(outcome).toEqual({
      ok: true,
      token: expect.stringMatching(/^cdn1_/),
      lifetimeMs: 1_800_000,
      lifetimeAssumed: false,
    });
    expect(sim.issuedTokens()).toEqual([outcome.ok ? outcome.token : '']);
    const [entry] = sim.requestLog;
    expect(entry).toMatchObject({
      method: 'POST',
      path: LOGIN_PATH,
      api: 'oauth',
      token: 'none',
      status: 200,
    });
    expect(sim.logins).toEqual([{ time: NOW, username: DEMO_USER, result: 'ok' }]);
  });

  it('reads 401 (wrong password), 403 (banned) and 400 (no password) as refused, with the status, never the password', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    const req = (password: string) =>
      login({ baseUrl: sim.url, username: DEMO_USER, password, now: clock.now() });
    const wrong = await req(PASSWORD_SEEN);
    expect(wrong).toEqual({ ok: false, result: 'refused', status: 401, detail: 'login refused (401)' });
    for (let i = 0; i < 6; i++) await req(PASSWORD_SEEN);
    expect(sim.banned(DEMO_USER)).toBe(true);
    expect(await req(DEMO_PASSWORD)).toEqual({
      ok: false,
      result: 'refused',
      status: 403,
      detail: 'login refused (403)',
    });
    expect(await req('')).toMatchObject({ ok: false, result: 'refused', status: 400 });
    expect(JSON.stringify(sim.requestLog)).not.toContain(PASSWORD_SEEN);
  });

  it('reads 429 as an error to retry, with its Retry-After in milliseconds', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    for (let i = 0; i < 20; i++) {
      const ok = await login({ baseUrl: sim.url, username: DEMO_USER, password: DEMO_PASSWORD, now: NOW });
      expect(ok.ok).toBe(true);
    }
    const over = await login({ baseUrl: sim.url, username: DEMO_USER, password: DEMO_PASSWORD, now: NOW });
    expect(over).toEqual({
      ok: false,
      result: 'error',
      status: 429,
      retryAfterMs: 60_000,
      detail: 'too many login requests (429)',
    });
  });

  it('reads no answer (nothing listening) as an error in its own words, without the request', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const outcome = await login({
      baseUrl: `http://127.0.0.1:${port}`,
      username: DEMO_USER,
      password: PASSWORD_SEEN,
      now: NOW,
      timeoutMs: 5_000,
    });
    expect(outcome).toMatchObject({ ok: false, result: 'error' });
    expect(outcome.ok ? '' : outcome.detail).toMatch(/^login request failed \([A-Z_]+\)$/);
    expect(JSON.stringify(outcome)).not.toContain(PASSWORD_SEEN);
    expect(JSON.stringify(outcome)).not.toContain(DEMO_USER);
  });

  it('gives up when the caller aborts, as an error', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    sim.hostileLogin({ kind: 'trickle', everyMs: 1_000 });
    const ctl = new AbortController();
    const pending = login({
      baseUrl: sim.url,
      username: DEMO_USER,
      password: DEMO_PASSWORD,
      now: NOW,
      signal: ctl.signal,
      timeoutMs: 60_000,
    });
    await sim.requestArrived((e) => e.api === 'oauth');
    ctl.abort();
    expect(await pending).toMatchObject({ ok: false, result: 'error' });
  });
});

describe('parseLoginAnswer at its limits', () => {
  const answer = (fields: Record<string, unknown>) => JSON.stringify({ status: 200, ...fields });

  it(`takes a token of ${MAX_TOKEN_LENGTH} characters and refuses one more as unusable`, () => {
    const longest = 'T'.repeat(MAX_TOKEN_LENGTH);
    expect(parseLoginAnswer(200, answer({ token: longest, lifetime: 60_000 }))).toMatchObject({
      ok: true,
      token: longest,
    });
    expect(parseLoginAnswer(200, answer({ token: `${longest}T`, lifetime: 60_000 }))).toEqual({
      ok: false,
      result: 'refused',
      unusable: true,
      status: 200,
      detail: `login answer has a token of ${MAX_TOKEN_LENGTH + 1} characters (at most ${MAX_TOKEN_LENGTH})`,
    });
  });

  it('takes visible ASCII only in a token (a header carries it); surrounding whitespace is trimmed', () => {
    expect(parseLoginAnswer(200, answer({ token: '  cdn1_!~AZ  ' }))).toMatchObject({
      ok: true,
      token: 'cdn1_!~AZ',
    });
    for (const token of ['cdn1 A', 'cdn1_é', 'cdn1_\tA', 'cdn1_\u007f'])
      expect(parseLoginAnswer(200, answer({ token })), JSON.stringify(token)).toEqual({
        ok: false,
        result: 'refused',
        unusable: true,
        status: 200,
        detail: 'login answer has a token with characters a header cannot carry (only visible ASCII)',
      });
    // A blank token is no token.
    expect(parseLoginAnswer(200, answer({ token: '   ' }))).toMatchObject({
      result: 'error',
      detail: 'login answer has no token',
    });
  });

  it('believes a lifetime up to 30 days, clamps one above, and assumes the documented 6 hours for none, 0 or below', () => {
    expect(parseLoginAnswer(200, answer({ token: 'A', lifetime: 1 }))).toEqual({
      ok: true,
      token: 'A',
      lifetimeMs: 1,
      lifetimeAssumed: false,
    });
    expect(parseLoginAnswer(200, answer({ token: 'A', lifetime: MAX_LIFETIME_MS }))).toEqual({
      ok: true,
      token: 'A',
      lifetimeMs: MAX_LIFETIME_MS,
      lifetimeAssumed: false,
    });
    expect(parseLoginAnswer(200, answer({ token: 'A', lifetime: MAX_LIFETIME_MS + 1 }))).toEqual({
      ok: true,
      token: 'A',
      lifetimeMs: MAX_LIFETIME_MS,
      lifetimeAssumed: false,
      lifetimeClamped: MAX_LIFETIME_MS + 1,
    });
    expect(MAX_LIFETIME_MS).toBe(30 * 24 * 3600_000);
    expect(DEFAULT_LIFETIME_MS).toBe(6 * 3600_000);
    for (const lifetime of [0, -5, 'soon', ' 12 s', null, true])
      expect(parseLoginAnswer(200, answer({ token: 'A', lifetime })), JSON.stringify(lifetime)).toEqual({
        ok: true,
        token: 'A',
        lifetimeMs: DEFAULT_LIFETIME_MS,
        lifetimeAssumed: true,
      });
    expect(parseLoginAnswer(200, answer({ token: 'A', lifetime: ' 120000 ' }))).toMatchObject({
      lifetimeMs: 120_000,
    });
  });

  it('reads 1xx and 3xx like other non-2xx answers but 429 and 5xx: refused', () => {
    for (const code of [101, 301, 302, 418, 499])
      expect(parseLoginAnswer(code, ''), String(code)).toEqual({
        ok: false,
        result: 'refused',
        status: code,
        detail: `login refused (${code})`,
      });
    expect(parseLoginAnswer(500, '')).toEqual({
      ok: false,
      result: 'error',
      status: 500,
      detail: 'server error (500)',
    });
  });

  it('prefers token to auth_token, the top level to data, and reads a body status given as numeric text', () => {
    expect(parseLoginAnswer(200, answer({ token: 'TOP', auth_token: 'OTHER' }))).toMatchObject({
      token: 'TOP',
    });
    expect(parseLoginAnswer(200, answer({ token: 'TOP', data: { token: 'INNER' } }))).toMatchObject({
      token: 'TOP',
    });
    expect(parseLoginAnswer(200, JSON.stringify({ status: ' 200 ', token: 'A' }))).toMatchObject({
      ok: true,
    });
    expect(parseLoginAnswer(200, JSON.stringify({ status: '201', token: 'A' }))).toEqual({
      ok: false,
      result: 'refused',
      status: 201,
      detail: 'login refused (status 201 in the answer)',
    });
    expect(parseLoginAnswer(200, JSON.stringify({ status: null, token: 'A' }))).toMatchObject({
      result: 'refused',
      detail: 'login refused (status unreadable in the answer)',
    });
  });
});
