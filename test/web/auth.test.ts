/**
 * The basic-auth verdict cache, as the toolkit's: bcrypt once per distinct credential (also when the first requests
 * arrive together), bounded size, and a new hash for a user (a reloaded file) is a new verdict. Cost-4 hashes keep
 * this fast; the cost-10 `$2y$` hashes htpasswd made (kept in harness.ts) are exercised over HTTPS in server.test.ts.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import {
  AUTH_CACHE_SIZE,
  AuthCache,
  basicCredentials,
  FAILURE_CACHE_SIZE,
  RateLimiter,
  workerCompare,
} from '../../src/web/auth.js';
import { FakeClock } from '../helpers/fake-clock.js';

const users = (hash: string) => new Map([['alice', hash]]);

describe('AuthCache', () => {
  const hash = bcrypt.hashSync('right', 4).replace(/^\$2b\$/, '$2y$');

  it('runs bcrypt once for requests that arrive together with the same credential', async () => {
    const cache = new AuthCache();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => cache.check(users(hash), 'alice', 'right')),
    );
    expect(answers).toEqual([true, true, true, true, true]);
    expect(cache.bcryptRuns).toBe(1);
    expect(await cache.check(users(hash), 'alice', 'right')).toBe(true);
    expect(cache.bcryptRuns).toBe(1);
  });

  it('an unknown user is refused even with the stand-in password; a new hash gives a new verdict', async () => {
    const cache = new AuthCache();
    expect(await cache.check(users(hash), 'bob', 'fakepassword')).toBe(false);
    expect(await cache.check(users(hash), 'alice', 'right')).toBe(true);
    const other = bcrypt.hashSync('changed', 4);
    expect(await cache.check(users(other), 'alice', 'right')).toBe(false);
    expect(await cache.check(users(other), 'alice', 'changed')).toBe(true);
  });

  it('stays bounded under many different wrong passwords; the one success stays cached', async () => {
    const cache = new AuthCache({ compare: async (password) => password === 'right' });
    expect(await cache.check(users(hash), 'alice', 'right')).toBe(true);
    for (let i = 0; i < FAILURE_CACHE_SIZE + 50; i++)
      expect(await cache.check(users(hash), 'alice', `guess-${i}`)).toBe(false);
    expect(cache.size).toBeLessThanOrEqual(FAILURE_CACHE_SIZE + 1);
    expect(cache.size).toBeGreaterThan(FAILURE_CACHE_SIZE / 2);
    expect(cache.cached(users(hash), 'alice', 'right')).toBe(true);
  });

  it('keeps at most AUTH_CACHE_SIZE successes', async () => {
    const cache = new AuthCache({ compare: async () => true });
    const many = new Map(Array.from({ length: AUTH_CACHE_SIZE + 50 }, (_, i) => [`user-${i}`, hash]));
    for (const user of many.keys()) expect(await cache.check(many, user, 'right')).toBe(true);
    expect(cache.size).toBeLessThanOrEqual(AUTH_CACHE_SIZE);
  });
});

describe('workerCompare (bcrypt in a worker thread, from the build)', () => {
  const WORKER = fileURLToPath(new URL('../../dist/src/web/bcrypt-worker.js', import.meta.url));

  it('answers as bcryptjs does, for a $2y$ hash too, and a broken hash is a refusal', async () => {
    expect(existsSync(WORKER), `${WORKER} is missing: run npm run build (npm test does)`).toBe(true);
    const compare = workerCompare({ url: pathToFileURL(WORKER) });
    const hash = bcrypt.hashSync('right', 4).replace(/^\$2b\$/, '$2y$');
    expect(await compare('right', hash)).toBe(true);
    expect(await compare('wrong', hash)).toBe(false);
    expect(await compare('right', 'not a hash')).toBe(false);
  });
});

describe('basicCredentials', () => {
  it('reads user and password (the password may hold colons), any case of "Basic"', () => {
    const h = `basic ${Buffer.from('alice:a:b c').toString('base64')}`;
    expect(basicCredentials(h)).toEqual({ user: 'alice', password: 'a:b c' });
    expect(basicCredentials('Bearer abc')).toBeUndefined();
    expect(basicCredentials(`Basic ${Buffer.from('nocolon').toString('base64')}`)).toBeUndefined();
    expect(basicCredentials(undefined)).toBeUndefined();
  });
});

describe('RateLimiter (Go rate.Limiter: starts full, refills one token per interval)', () => {
  it('lets a burst through, then one per interval', async () => {
    const clock = new FakeClock();
    const limiter = new RateLimiter(1000, 2, clock);
    expect([limiter.allow(), limiter.allow(), limiter.allow()]).toEqual([true, true, false]);
    await clock.advance(999);
    expect(limiter.allow()).toBe(false);
    await clock.advance(1);
    expect([limiter.allow(), limiter.allow()]).toEqual([true, false]);
    await clock.advance(10_000);
    expect([limiter.allow(), limiter.allow(), limiter.allow()]).toEqual([true, true, false]);
  });

  it('burst 0 allows nothing, as in Go', () => {
    expect(new RateLimiter(1000, 0, new FakeClock()).allow()).toBe(false);
  });
});
