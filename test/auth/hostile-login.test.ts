/**
 * A login endpoint gone hostile or broken (issue 25, rows 1-6), driven through the simulator's `hostileLogin`:
 * the real login request over loopback, a fake clock for the renewal schedule. Each answer ends in a bounded
 * outcome: a login that fails or is refused with its own cause, on a schedule within the API's 20 logins a minute,
 * and a secret registry that holds only what is in use.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LOGIN_MAX_BYTES, MAX_LIFETIME_MS, MAX_TOKEN_LENGTH } from '../../src/auth/login.js';
import { LoginError } from '../../src/auth/login-error.js';
import { REFUSED_RETRY_MS } from '../../src/auth/login-schedule.js';
import { LoginToken } from '../../src/auth/login-token.js';
import { MINUTE } from '../../src/clock.js';
import { SECRETS } from '../../src/redact.js';
import type { HostileLogin } from '../../src/simulator/auth.js';
import type { Simulator } from '../../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { waitFor } from '../helpers/stack.js';

const started = perTest();
const stops: AbortController[] = [];
afterEach(() => {
  for (const c of stops.splice(0)) c.abort();
});

async function hostileSim(clock: FakeClock, hostile: HostileLogin): Promise<Simulator> {
  const sim = await started.simulator({ seed: 7, clock });
  sim.hostileLogin(hostile);
  return sim;
}

/** A login against `s`, its loop running until the test ends. */
async function loginTo(s: Simulator, clock: FakeClock, timeoutMs = 5_000) {
  const { log, lines } = captureLog();
  const token = new LoginToken({
    credential: { username: DEMO_USER, password: DEMO_PASSWORD },
    baseUrl: s.url,
    clock,
    log,
    timeoutMs,
  });
  const ctl = new AbortController();
  stops.push(ctl);
  const loop = token.run(ctl.signal);
  await token.firstAttempt;
  return { token, lines, loop };
}

/** Moves the clock on in `step`s up to `ms`, letting each login in flight settle first. */
async function pass(clock: FakeClock, token: LoginToken, ms: number, step = 1000): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    await waitFor(() => !token.busy, 10_000, 'the login in flight');
    await clock.advance(step);
  }
  await waitFor(() => !token.busy, 10_000, 'the login in flight');
}

describe('a hostile login endpoint', () => {
  it('row 1: a token too long to use is a refused login; nothing of it enters the secret registry', async () => {
    const clock = new FakeClock();
    const long = 'A'.repeat(MAX_TOKEN_LENGTH + 1);
    const s = await hostileSim(clock, { kind: 'fields', token: long });
    const before = SECRETS.size;
    const { token, lines } = await loginTo(s, clock);
    expect(token.status).toMatchObject({ state: 'login-refused' });
    expect(token.status.detail).toContain(`at most ${MAX_TOKEN_LENGTH}`);
    expect(SECRETS.has(long)).toBe(false);
    // The password is registered, the token is not.
    expect(SECRETS.size).toBeLessThanOrEqual(before + 1);
    expect(lines.some((l) => l.includes('login answer unusable'))).toBe(true);
  });

  it('row 1: a 10 MB token is an answer too large, read no further than the login limit', async () => {
    const clock = new FakeClock();
    const s = await hostileSim(clock, { kind: 'fields', token: 'B'.repeat(10_000_000) });
    const { token } = await loginTo(s, clock);
    expect(token.status).toMatchObject({ state: 'login-failed' });
    expect(token.status.detail).toBe(`login answer larger than ${LOGIN_MAX_BYTES} bytes`);
  });

  it('row 1: each renewal drops the token it replaces from the secret registry', async () => {
    const clock = new FakeClock();
    const sim = await started.simulator({ seed: 7, clock, tokenLifetimeMs: 10 * MINUTE });
    const { token } = await loginTo(sim, clock);
    await pass(clock, token, 30 * MINUTE, 30_000);
    const issued = sim.issuedTokens();
    expect(issued.length).toBeGreaterThanOrEqual(3);
    const live = token.get();
    expect(SECRETS.has(live)).toBe(true);
    for (const old of issued.filter((t) => t !== live)) expect(SECRETS.has(old)).toBe(false);
  });

  it.each([[1e16], [1e300], ['99999999999999999']])(
    'row 2: a lifetime of %s is clamped to 30 days: logged in, no crash',
    async (lifetime) => {
      const clock = new FakeClock();
      const s = await hostileSim(clock, { kind: 'fields', lifetime });
      const { token, lines } = await loginTo(s, clock);
      expect(token.status.state).toBe('ok');
      expect(token.status.expiresAt).toBe(clock.now() + MAX_LIFETIME_MS);
      expect(lines.some((l) => l.includes('out of range'))).toBe(true);
    },
  );

  it('row 3: an answer trickled a byte at a time fails within api.timeout: cdn_up 0, not ready, logged', async () => {
    const clock = new FakeClock(Date.UTC(2026, 4, 4, 0, 0, 0));
    const s = await hostileSim(clock, { kind: 'trickle', everyMs: 100 });
    const { log, lines } = captureLog();
    const st = await started.stack({
      clock,
      simulator: s,
      config: {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD, timeout: '1s' },
        metrics: { lookback: '10m', delay: '0m', window: '5m' },
      },
      exporter: { log },
    });
    expect(lines.some((l) => l.includes('login answer not received within api.timeout'))).toBe(true);
    await waitFor(
      async () => {
        await st.exporter.store.refresh();
        return (await st.scrape()).value('cdn_up', { account: 'demo', api: 'metrics' }) === 0;
      },
      10_000,
      'cdn_up 0 of the account waiting on the login',
    );
    const ready = await fetch(`${st.url}/readyz`);
    expect(ready.status).toBe(503);
  });

  it('row 4: an answer that never ends is given up at the login limit', async () => {
    const clock = new FakeClock();
    const s = await hostileSim(clock, { kind: 'endless' });
    const { token } = await loginTo(s, clock);
    expect(token.status).toMatchObject({ state: 'login-failed' });
    expect(token.status.detail).toBe(`login answer larger than ${LOGIN_MAX_BYTES} bytes`);
  });

  it('row 5: a token with CR, LF or NUL is refused with its own cause and retried on the ban-safe schedule', async () => {
    const clock = new FakeClock();
    const s = await hostileSim(clock, { kind: 'fields', token: 'cdn1_ABC\r\nX-Evil: 1\u0000' });
    const { token, lines } = await loginTo(s, clock);
    expect(token.status.state).toBe('login-refused');
    expect(token.status.detail).toContain('characters a header cannot carry');
    expect(lines.filter((l) => l.includes('login answer unusable'))).toHaveLength(1);
    const first = REFUSED_RETRY_MS[0]!;
    await pass(clock, token, first - MINUTE, 30_000);
    expect(s.logins).toHaveLength(1);
    await pass(clock, token, 2 * MINUTE, 30_000);
    expect(s.logins).toHaveLength(2);
  });

  it('row 6 (issue 31): a lifetime of 1 ms is believed, said to be too short, and costs at most the 20 logins a minute the API allows', async () => {
    const clock = new FakeClock();
    const s = await hostileSim(clock, { kind: 'fields', lifetime: 1 });
    const { token, lines } = await loginTo(s, clock);
    await pass(clock, token, 10 * MINUTE, 1000);
    // Expired a millisecond after its login: no request may carry it, and the reason is the lifetime.
    await clock.advance(1);
    expect(() => token.get()).toThrow(LoginError);
    expect(token.status.state).toBe('lifetime-too-short');
    expect(token.status.detail).toContain('lifetime of 1 ms');
    expect(lines.filter((l) => l.includes('token lifetime too short'))).toHaveLength(1);
    // Never two logins closer than 3 s (60 s / 20), so the simulator's limit never answered 429.
    const times = s.logins.map((l) => l.time);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(3_000);
    expect(s.logins.every((l) => l.result === 'ok')).toBe(true);
    expect(s.logins.length).toBeLessThanOrEqual(10 * 20 + 1);
  });
});
