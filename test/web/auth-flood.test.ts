/**
 * Basic auth under a guessing flood (issue 25, row 11): 200 clients guessing kept the legitimate scrape waiting
 * 12-19 s behind their bcrypt runs, and their failures evicted its cached verdict. The password check is the
 * cache's seam here (`compare`): the test holds guesses in it, so "queued" is a state it waits for, not a time.
 * Clients come from distinct loopback addresses (127.0.0.N) as distinct clients would.
 */
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import { AuthCache, MAX_PENDING_CHECKS } from '../../src/web/auth.js';
import { type AliceServer, scrapeAs, startAliceServer } from '../helpers/basic-auth-server.js';
import { waitFor } from '../helpers/stack.js';

const HASH = bcrypt.hashSync('right', 4);

let served: AliceServer | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  release = undefined;
  await served?.close();
  served = undefined;
});

/** A server in front of the exporter app, `alice:right` its one user, with the given cache and failure limit. */
async function start(cache: AuthCache, burst = 10): Promise<string> {
  served = await startAliceServer(cache, HASH, burst);
  return served.url;
}

/** A check that answers `right` at once and holds every other password until `release()`. */
function holdingGuesses() {
  const held: Array<() => void> = [];
  let open = false;
  const compare = async (password: string): Promise<boolean> => {
    if (password === 'right') return true;
    if (!open) await new Promise<void>((r) => held.push(r));
    return false;
  };
  return {
    compare,
    get held() {
      return held.length;
    },
    release: () => {
      open = true;
      for (const r of held.splice(0)) r();
    },
  };
}

describe('basic auth under a guessing flood', () => {
  it('answers the legitimate scrape while guesses are queued; checks beyond the queue bound get 429 unchecked', async () => {
    const seam = holdingGuesses();
    const cache = new AuthCache({ compare: seam.compare });
    const url = await start(cache);
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
    const guesses = Array.from({ length: 200 }, (_, i) => scrapeAs(url, `guesser-${i}`, `guess-${i}`, i + 2));
    // One check runs (held), the rest of the bounded queue waits behind it; the others were answered already.
    await waitFor(
      () => seam.held === 1 && cache.bcryptRuns === 1 + MAX_PENDING_CHECKS,
      20_000,
      'the queue full',
    );
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
    release = seam.release;
    seam.release();
    const statuses = await Promise.all(guesses);
    expect(statuses.filter((s) => s === 401)).toHaveLength(MAX_PENDING_CHECKS);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - MAX_PENDING_CHECKS);
    expect(cache.bcryptRuns).toBe(1 + MAX_PENDING_CHECKS);
  });

  it('keeps the legitimate verdict cached whatever the failures: no new check for it after 300 of them', async () => {
    // random 0 evicts the oldest entry first: where the legitimate verdict would be, in one shared cache.
    const cache = new AuthCache({ random: () => 0, compare: async (password) => password === 'right' });
    const url = await start(cache);
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
    for (let i = 0; i < 300; i++) expect(await scrapeAs(url, `guesser-${i}`, `guess-${i}`, i + 2)).toBe(401);
    const runs = cache.bcryptRuns;
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
    expect(cache.bcryptRuns).toBe(runs);
  });

  it('limits failed attempts per client: past the burst, 429 without a check; the cached scraper is not limited', async () => {
    const cache = new AuthCache({ compare: async (password) => password === 'right' });
    const url = await start(cache, 10);
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push(await scrapeAs(url, 'alice', `guess-${i}`));
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual(Array(15).fill(429));
    expect(cache.bcryptRuns).toBe(11);
    // Another client is not limited by this one's failures; the legitimate scrape from the same address neither.
    expect(await scrapeAs(url, 'alice', 'guess-x', 7)).toBe(401);
    expect(await scrapeAs(url, 'alice', 'right')).toBe(200);
  });
});
