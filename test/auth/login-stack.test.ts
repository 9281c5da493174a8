/**
 * Logging in with a username and password, end to end: the exporter and the simulator on loopback, one fake clock
 * for both, so a day of tokens that live 30 minutes runs in seconds. The simulator is the ground truth: of the
 * traffic (every window counted once), of the logins (renewals, attempts, bans) and of the tokens each request
 * carried (an expired one is logged as such).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LoginToken } from '../../src/auth/login-token.js';
import { floorMinute, MINUTE } from '../../src/clock.js';
import type { Logger } from '../../src/log.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { answeredWindows, expectExact, expectTiles, reader, walkers } from '../helpers/ground-truth.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { quiet, type Stack, scrapeNow, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 4, 4, 0, 0, 0);
const LIFETIME = 30 * MINUTE;
const WINDOW = 5 * MINUTE;

const started = perTest();

function loginOf(s: Stack): LoginToken {
  return (s.exporter as unknown as { upstreams: { logins: LoginToken[] } }).upstreams.logins[0]!;
}

async function start(
  clock: FakeClock,
  password: string,
  extra: Record<string, unknown> = {},
  lifetimeMs = LIFETIME,
  log?: Logger,
) {
  const file = join(started.folder('cdn-login-'), 'password');
  writeFileSync(file, `${password}\n`);
  const stack = await started.stack({
    clock,
    sim: { tokenLifetimeMs: lifetimeMs },
    config: {
      api: { token: undefined, username: DEMO_USER, password_file: file },
      metrics: { lookback: '1h', delay: '0m', window: '5m' },
      ...extra,
    },
    // The production probing of a refused token: a renewed token must end it, not its timer.
    exporter: { authBackoff: { baseMs: MINUTE, capMs: 10 * MINUTE }, ...(log ? { log } : {}) },
  });
  return { stack, file };
}

/**
 * Waits until no login is in flight and the walker has counted every window that is due. The request gate paces
 * requests on the clock, so the clock moves on in steps of 200 ms while requests are waiting for their turn, each
 * step once nothing real is under way (quiet). Bounded in real time, generously: a loaded machine is slow.
 */
async function idle(s: Stack, clock: FakeClock, account = 'demo'): Promise<void> {
  const login = loginOf(s);
  const walker = walkers(s.exporter).get(account)!;
  const done = () => !login.busy && floorMinute(clock.now()) - walker.current.cursor < WINDOW;
  const until = Date.now() + 30_000;
  while (!done()) {
    if (Date.now() > until)
      throw new Error(`${account} not caught up at ${new Date(clock.now()).toISOString()}`);
    await quiet(s);
    if (!done()) await clock.advance(200);
  }
}

describe('login with username and password', () => {
  it('runs 24 hours on 30-minute tokens: renewed before every expiry, every window counted exactly once', async () => {
    const clock = new FakeClock(T0);
    const { stack: s } = await start(clock, DEMO_PASSWORD);
    const first = floorMinute(T0 - 60 * MINUTE);
    await idle(s, clock);
    for (let m = 0; m < 24 * 60; m++) {
      await clock.advance(MINUTE);
      await idle(s, clock);
    }
    const scrape = await scrapeNow(s);
    const cursor = walkers(s.exporter).get('demo')!.current.cursor;
    expect(cursor).toBeGreaterThanOrEqual(T0 + 24 * 60 * MINUTE - WINDOW);
    expectExact(s.sim, reader(scrape), 'demo', [[first, cursor]]);
    expectTiles(answeredWindows(s.sim, 'demo', cursor), first, cursor);

    const logins = s.sim.logins.filter((l) => l.username === DEMO_USER);
    expect(logins.every((l) => l.result === 'ok')).toBe(true);
    // Each token was renewed before it expired: the next login came within its lifetime.
    for (let i = 1; i < logins.length; i++) {
      expect(logins[i]!.time - logins[i - 1]!.time).toBeLessThan(LIFETIME);
    }
    // 24 h / (0.85 * 30 min) renewals, and the first login.
    expect(logins.length).toBeGreaterThanOrEqual(57);
    expect(logins.length).toBeLessThanOrEqual(58);
    const requests = s.sim.requestLog.filter((e) => e.api === 'metrics');
    const expired = requests.filter((e) => e.token === 'expired' || e.token === 'revoked');
    expect(expired).toHaveLength(0);
    expect(requests.every((e) => e.token === 'issued' && e.status === 200)).toBe(true);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'ok' })).toBe(logins.length);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'refused' })).toBe(0);
    const expiry = scrape.value('cdn_auth_token_expiry_timestamp_seconds', { login: DEMO_USER })!;
    expect(expiry * 1000).toBe(logins.at(-1)!.time + LIFETIME);
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(1);
    // The figures of the closing note.
    console.log(
      `24h on 30-minute tokens: ${requests.length} traffic requests, ${logins.length - 1} renewals ` +
        `(${logins.length} logins), ${expired.length} requests with an expired token, ` +
        `${answeredWindows(s.sim, 'demo').length} windows`,
    );
  }, 120_000);

  it('a token revoked early is renewed at once and nothing is lost', async () => {
    const clock = new FakeClock(T0);
    const { stack: s } = await start(clock, DEMO_PASSWORD);
    const first = floorMinute(T0 - 60 * MINUTE);
    await idle(s, clock);
    for (let m = 0; m < 12; m++) {
      await clock.advance(MINUTE);
      await idle(s, clock);
    }
    expect(s.sim.revokeTokens(DEMO_USER)).toBe(1);
    const revokedAt = clock.now();
    for (let m = 0; m < 20; m++) {
      await clock.advance(MINUTE);
      await idle(s, clock);
    }
    const logins = s.sim.logins.filter((l) => l.result === 'ok');
    expect(logins).toHaveLength(2);
    // The first refusal of the revoked token led to a login at that very (fake) time: the next window's.
    const refused = s.sim.requestLog.filter((e) => e.api === 'metrics' && e.token === 'revoked');
    expect(refused).toHaveLength(1);
    expect(logins[1]!.time).toBe(refused[0]!.time);
    expect(refused[0]!.time - revokedAt).toBeLessThanOrEqual(WINDOW);
    const scrape = await scrapeNow(s);
    const cursor = walkers(s.exporter).get('demo')!.current.cursor;
    expect(cursor).toBeGreaterThanOrEqual(clock.now() - WINDOW);
    expectExact(s.sim, reader(scrape), 'demo', [[first, cursor]]);
    expectTiles(answeredWindows(s.sim, 'demo', cursor), first, cursor);
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(1);
  }, 60_000);

  it('a wrong password: at most 3 attempts an hour, no ban; the right one in the file: polling resumes, no gap', async () => {
    const clock = new FakeClock(T0);
    const { stack: s, file } = await start(clock, 'wrong-password');
    const first = floorMinute(T0 - 60 * MINUTE);
    await waitFor(() => !loginOf(s).busy, 5000, 'first login');
    for (let m = 0; m < 3 * 60; m++) {
      await clock.advance(MINUTE);
      await waitFor(() => !loginOf(s).busy, 5000, 'login');
      const tries = s.sim.logins.filter((l) => l.time > clock.now() - 60 * MINUTE);
      expect(
        tries.length,
        `attempts in the hour before ${new Date(clock.now()).toISOString()}`,
      ).toBeLessThanOrEqual(3);
    }
    expect(s.sim.banned(DEMO_USER)).toBe(false);
    const attempts = s.sim.logins.length;
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(s.sim.logins.every((l) => l.result === 'wrong')).toBe(true);
    expect(s.sim.requestLog.filter((e) => e.api === 'metrics')).toHaveLength(0);

    let scrape = await scrapeNow(s);
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(0);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'refused' })).toBe(attempts);
    expect(scrape.value('cdn_auth_token_expiry_timestamp_seconds', { login: DEMO_USER })).toBeUndefined();
    const page = await (await fetch(`${s.url}/`)).text();
    expect(page).toContain('down: login refused');
    expect(page).not.toContain('wrong-password');

    writeFileSync(file, `${DEMO_PASSWORD}\n`);
    // Within one poll interval (a traffic window) of the change: logged in, and the walk goes on where it stopped.
    await clock.advance(MINUTE);
    await idle(s, clock);
    expect(s.sim.logins.at(-1)!.result).toBe('ok');
    expect(s.sim.logins.at(-1)!.time - (clock.now() - MINUTE)).toBeLessThanOrEqual(MINUTE);
    scrape = await scrapeNow(s);
    const cursor = walkers(s.exporter).get('demo')!.current.cursor;
    expect(cursor).toBeGreaterThanOrEqual(floorMinute(clock.now()) - WINDOW);
    expectExact(s.sim, reader(scrape), 'demo', [[first, cursor]]);
    expectTiles(answeredWindows(s.sim, 'demo', cursor), first, cursor);
    expect(scrape.value('cdn_up', { api: 'metrics', account: 'demo' })).toBe(1);
    // The Up column no longer gives the cause (the Last error column keeps the past failure).
    expect(await (await fetch(`${s.url}/`)).text()).not.toContain('down: login refused');
  }, 60_000);

  it('20-second tokens (issue 31): renewed every 17 s, no request carries an expired token, every API up', async () => {
    const clock = new FakeClock(T0);
    const { stack: s } = await start(
      clock,
      DEMO_PASSWORD,
      {
        // DVR and recordings polled every second: requests at every moment of each token's life.
        accounts: [{ name: 'demo', dvr_streams: ['live/main', 'sport/4k'], recordings: true }],
        dvr: { interval: '1s' },
        recordings: { interval: '1s' },
      },
      20_000,
    );
    await idle(s, clock);
    for (let t = 0; t < 5 * 60; t++) {
      await clock.advance(1000);
      await idle(s, clock);
    }
    const requests = s.sim.requestLog.filter((e) => e.api !== 'oauth');
    const expired = requests.filter((e) => e.token !== 'issued');
    expect(expired).toHaveLength(0);
    expect(new Set(requests.map((e) => e.api))).toEqual(new Set(['metrics', 'dvr-net', 'recorder-cloud']));
    const logins = s.sim.logins.filter((l) => l.username === DEMO_USER);
    expect(logins.every((l) => l.result === 'ok')).toBe(true);
    // At 85 % of 20 s: every 17 s, never 20 in a minute.
    for (let i = 1; i < logins.length; i++) expect(logins[i]!.time - logins[i - 1]!.time).toBe(17_000);
    expect(logins.length).toBe(Math.floor((5 * 60_000) / 17_000) + 1);
    const scrape = await scrapeNow(s);
    for (const api of ['metrics', 'dvr-net', 'recorder-cloud'])
      expect(scrape.value('cdn_up', { api, account: 'demo' }), api).toBe(1);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'ok' })).toBe(logins.length);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'too_short' })).toBe(0);
    console.log(
      `5 min on 20-second tokens: ${requests.length} requests (all three APIs), ${logins.length} logins, ` +
        `${expired.length} requests with an expired token`,
    );
  }, 120_000);

  it('2-second tokens (issue 31): too short for 20 logins a minute; said so, and no request carries an expired token', async () => {
    const clock = new FakeClock(T0);
    const { log, lines } = captureLog();
    const { stack: s } = await start(
      clock,
      DEMO_PASSWORD,
      {
        accounts: [{ name: 'demo', dvr_streams: ['live/main'], recordings: true }],
        dvr: { interval: '1s' },
        recordings: { interval: '1s' },
      },
      2_000,
      log,
    );
    await idle(s, clock);
    for (let t = 0; t < 3 * 60; t++) {
      await clock.advance(500);
      await quiet(s);
    }
    const requests = s.sim.requestLog.filter((e) => e.api !== 'oauth');
    expect(requests.filter((e) => e.token !== 'issued')).toHaveLength(0);
    const logins = s.sim.logins.filter((l) => l.username === DEMO_USER);
    // The simulator's own limit (20 in any 60 s) never refused one: logins 3 s apart.
    expect(logins.every((l) => l.result === 'ok')).toBe(true);
    for (let i = 1; i < logins.length; i++) expect(logins[i]!.time - logins[i - 1]!.time).toBe(3_000);
    const scrape = await scrapeNow(s);
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'too_short' })).toBe(
      logins.length,
    );
    expect(scrape.value('cdn_auth_logins_total', { login: DEMO_USER, result: 'ok' })).toBe(0);
    // The login's own line, once (the pollers log their failures, once per change of their own).
    expect(lines.filter((l) => l.includes('"msg":"token lifetime too short'))).toHaveLength(1);
    // In a gap (the last login 3 s ago at most, its token 2 s long): DVR and recordings down, with the reason.
    const last = logins.at(-1)!.time;
    await clock.advance(last + 2_500 - clock.now());
    await quiet(s);
    await clock.advance(0);
    await quiet(s);
    const inGap = await scrapeNow(s);
    expect(inGap.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(0);
    expect(inGap.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(0);
    const page = await (await fetch(`${s.url}/`)).text();
    expect(page).toContain('token lifetime too short for user');
    expect(s.sim.requestLog.filter((e) => e.api !== 'oauth' && e.token !== 'issued')).toHaveLength(0);
  }, 120_000);
});
