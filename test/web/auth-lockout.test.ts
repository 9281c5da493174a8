/**
 * server.auth_failure_limit must not lock out a correct credential because of another client at the same address
 * (issue 33, row 6: the scraper with the right password got 429 on 15 of 15 tries over 150 s while a client at its
 * address sent wrong passwords every 50 ms, and got in only after the budget refilled once the other had stopped).
 *
 * The budget is per client address and is for password checks: a credential with a cached verdict is answered from
 * the cache without spending or checking it (a repeated wrong password as well as the scraper's), and the
 * successes can be kept in a file, so the scraper is known good after a restart too. Every credential not known
 * still needs the budget for its check: the guesser gets no more checks than before.
 *
 * Time is a fake clock (the limiter's); the password check is the cache's seam (`compare`), which counts checks.
 * Both clients come from 127.0.0.1, as clients behind one NAT address would.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { AuthCache, verdictFileBeside } from '../../src/web/auth.js';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { WebConfigSource } from '../../src/web/source.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { exporterApp } from '../helpers/fake-exposition.js';

const PASSWORD = 'scraper-password-9f2c';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const BURST = 10;
const INTERVAL_MS = 60_000;

let dir: string;
let web: WebServer | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'auth-lockout-'));
});
afterEach(async () => {
  await web?.close(100);
  web = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A check that counts itself: right for PASSWORD only. */
function counting() {
  const checked: string[] = [];
  return {
    checked,
    compare: async (password: string) => {
      checked.push(password);
      return password === PASSWORD;
    },
  };
}

/** The exporter app behind basic auth (`prometheus` with HASH), the failure limit at its defaults, on `clock`. */
async function start(cache: AuthCache, clock: FakeClock, hash = HASH): Promise<string> {
  const file = join(dir, 'web.yml');
  writeFileSync(file, `basic_auth_users:\n  prometheus: ${hash}\n`);
  web = await startWebServer({
    app: exporterApp(silentLogger),
    listen: { host: '127.0.0.1', port: 0 },
    source: new WebConfigSource(file, silentLogger),
    log: silentLogger,
    clock,
    authCache: cache,
    limits: {
      maxConnections: 4096,
      maxScrapesInFlight: 100,
      idleTimeoutMs: 30_000,
      writeTimeoutMs: 60_000,
      authFailureBurst: BURST,
      authFailureIntervalMs: INTERVAL_MS,
    },
  });
  return `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;
}

/** GET /metrics as `prometheus:password` from 127.0.0.1 (a new connection, or `agent`'s): status and Retry-After. */
function scrape(
  url: string,
  password: string,
  agent: Agent | false = false,
): Promise<{ status: number; retry?: string }> {
  const user = 'prometheus';
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/metrics`,
      {
        agent,
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ...(res.headers['retry-after'] ? { retry: String(res.headers['retry-after']) } : {}),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * The issue's 150 s: the other client sends `guess(i)` every 50 ms, the scraper scrapes every 10 s (15 tries).
 * The scraper's statuses, and the other client's.
 */
async function run150s(url: string, clock: FakeClock, guess: (i: number) => string) {
  const scraper: number[] = [];
  const other: number[] = [];
  // The other client keeps its connection; the scraper opens one per scrape.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let i = 0; i < 3000; i++) {
      other.push((await scrape(url, guess(i), agent)).status);
      if (i % 200 === 199) scraper.push((await scrape(url, PASSWORD)).status);
      await clock.advance(50);
    }
  } finally {
    agent.destroy();
  }
  return { scraper, other };
}

/** 3000 requests on loopback: room for a busy machine. */
const LONG = 120_000;

describe('a client at the scraper’s address sending wrong passwords (issue 33, row 6)', () => {
  it(
    'repeating one wrong password: the scraper’s first login gets in, and every scrape after',
    async () => {
      const clock = new FakeClock();
      const seam = counting();
      const url = await start(new AuthCache({ compare: seam.compare }), clock);
      const { scraper, other } = await run150s(url, clock, () => 'stale-password');
      expect(scraper).toEqual(Array(15).fill(200));
      // The wrong password is checked once and answered from the cache after: 401, never a 429.
      expect(new Set(other)).toEqual(new Set([401]));
      expect(seam.checked).toEqual(['stale-password', PASSWORD]);
    },
    LONG,
  );

  it(
    'guessing, after a restart: the scraper, known good from the verdict file, gets in at every try',
    async () => {
      const clock = new FakeClock();
      const file = verdictFileBeside(join(dir, 'state.json'));
      expect(file).toBe(join(dir, 'state.auth-verdicts.json'));
      // Before the restart: the scraper logs in once; its verdict is written down.
      const before = new AuthCache({ compare: counting().compare, file });
      let url = await start(before, clock);
      expect((await scrape(url, PASSWORD)).status).toBe(200);
      await before.saved();
      await web!.close(100);
      web = undefined;

      const seam = counting();
      url = await start(new AuthCache({ compare: seam.compare, file }), clock);
      const { scraper, other } = await run150s(url, clock, (i) => `guess-${i}`);
      expect(scraper).toEqual(Array(15).fill(200));
      // The guesser's budget still holds: BURST checks at once, then one per interval (150 s: two more).
      const checks = BURST + Math.floor((3000 * 50) / INTERVAL_MS);
      expect(other.filter((s) => s === 401)).toHaveLength(checks);
      expect(other.filter((s) => s === 429)).toHaveLength(3000 - checks);
      // No check of the scraper's password after the restart; the guesses only, each once.
      expect(seam.checked).toHaveLength(checks);
      expect(seam.checked).not.toContain(PASSWORD);
    },
    LONG,
  );

  it('without the file, the same guesser holds a new credential back until a check is allowed (documented)', async () => {
    const clock = new FakeClock();
    const url = await start(new AuthCache({ compare: counting().compare }), clock);
    for (let i = 0; i < BURST; i++) expect((await scrape(url, `guess-${i}`)).status).toBe(401);
    expect(await scrape(url, PASSWORD)).toEqual({ status: 429, retry: '60' });
    await clock.advance(INTERVAL_MS);
    expect((await scrape(url, PASSWORD)).status).toBe(200);
    // Known good from then on, whatever the guesser does.
    const more: number[] = [];
    for (let i = 0; i < 20; i++) more.push((await scrape(url, `more-${i}`)).status);
    // The scraper's check gave its token back: one more guess is checked, then none.
    expect(more).toEqual([401, ...Array(19).fill(429)]);
    expect((await scrape(url, PASSWORD)).status).toBe(200);
  });
});

describe('the verdict file', () => {
  it('holds no password or user in clear, is owner-only, and keeps no more than the success cache', async () => {
    const clock = new FakeClock();
    const file = join(dir, 'verdicts.json');
    const cache = new AuthCache({ compare: counting().compare, file });
    const url = await start(cache, clock);
    expect((await scrape(url, PASSWORD)).status).toBe(200);
    expect((await scrape(url, 'wrong')).status).toBe(401);
    await cache.saved();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain('prometheus');
    expect(text).not.toContain('wrong');
    expect((JSON.parse(text) as { successes: string[] }).successes).toHaveLength(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a new hash for the user (the password changed) makes the kept verdict useless: the old password is checked and refused', async () => {
    const clock = new FakeClock();
    const file = join(dir, 'verdicts.json');
    const first = new AuthCache({ compare: counting().compare, file });
    let url = await start(first, clock);
    expect((await scrape(url, PASSWORD)).status).toBe(200);
    await first.saved();
    await web!.close(100);
    web = undefined;
    const seam = { checked: [] as string[] };
    const cache = new AuthCache({
      compare: async (password, hash) => {
        seam.checked.push(password);
        return bcrypt.compare(password, hash);
      },
      file,
    });
    url = await start(cache, clock, bcrypt.hashSync('new-password', 4));
    expect((await scrape(url, PASSWORD)).status).toBe(401);
    expect(seam.checked).toEqual([PASSWORD]);
  });

  it('a broken file is reported and the cache starts empty; the next success rewrites it', async () => {
    const clock = new FakeClock();
    const file = join(dir, 'verdicts.json');
    writeFileSync(file, '{"version": 1, "successes": [');
    const errors: string[] = [];
    const cache = new AuthCache({
      compare: counting().compare,
      file,
      onFileError: (err) => errors.push(err.message),
    });
    expect(errors).toHaveLength(1);
    const url = await start(cache, clock);
    expect((await scrape(url, PASSWORD)).status).toBe(200);
    await cache.saved();
    expect((JSON.parse(readFileSync(file, 'utf8')) as { successes: string[] }).successes).toHaveLength(1);
  });
});
