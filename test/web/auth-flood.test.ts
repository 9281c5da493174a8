/**
 * Basic auth under a guessing flood (issue 25, row 11): 200 clients guessing kept the legitimate scrape waiting
 * 12-19 s behind their bcrypt runs, and their failures evicted its cached verdict. The password check is the
 * cache's seam here (`compare`): the test holds guesses in it, so "queued" is a state it waits for, not a time.
 * Clients come from distinct loopback addresses (127.0.0.N) as distinct clients would.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { AuthCache, MAX_PENDING_CHECKS } from '../../src/web/auth.js';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { WebConfigSource } from '../../src/web/source.js';
import { exporterApp } from '../helpers/fake-exposition.js';
import { waitFor } from '../helpers/stack.js';

const HASH = bcrypt.hashSync('right', 4);

let dir: string | undefined;
let web: WebServer | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  release = undefined;
  await web?.close(100);
  web = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A server in front of the exporter app, `alice:right` its one user, with the given cache and failure limit. */
async function start(cache: AuthCache, burst = 10): Promise<string> {
  dir = mkdtempSync(join(tmpdir(), 'auth-flood-'));
  const file = join(dir, 'web.yml');
  writeFileSync(file, `basic_auth_users:\n  alice: ${HASH}\n`);
  web = await startWebServer({
    app: exporterApp(silentLogger),
    listen: { host: '127.0.0.1', port: 0 },
    source: new WebConfigSource(file, silentLogger),
    log: silentLogger,
    authCache: cache,
    limits: {
      maxConnections: 4096,
      maxScrapesInFlight: 100,
      idleTimeoutMs: 30_000,
      writeTimeoutMs: 60_000,
      authFailureBurst: burst,
      authFailureIntervalMs: 60_000,
    },
  });
  return `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;
}

/** GET /metrics as `user:password` from loopback address 127.0.0.`from`; the status. */
function get(url: string, user: string, password: string, from = 1): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/metrics`,
      {
        agent: false,
        localAddress: `127.0.${Math.floor(from / 250)}.${(from % 250) + 1}`,
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
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
    expect(await get(url, 'alice', 'right')).toBe(200);
    const guesses = Array.from({ length: 200 }, (_, i) => get(url, `guesser-${i}`, `guess-${i}`, i + 2));
    // One check runs (held), the rest of the bounded queue waits behind it; the others were answered already.
    await waitFor(
      () => seam.held === 1 && cache.bcryptRuns === 1 + MAX_PENDING_CHECKS,
      20_000,
      'the queue full',
    );
    expect(await get(url, 'alice', 'right')).toBe(200);
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
    expect(await get(url, 'alice', 'right')).toBe(200);
    for (let i = 0; i < 300; i++) expect(await get(url, `guesser-${i}`, `guess-${i}`, i + 2)).toBe(401);
    const runs = cache.bcryptRuns;
    expect(await get(url, 'alice', 'right')).toBe(200);
    expect(cache.bcryptRuns).toBe(runs);
  });

  it('limits failed attempts per client: past the burst, 429 without a check; the cached scraper is not limited', async () => {
    const cache = new AuthCache({ compare: async (password) => password === 'right' });
    const url = await start(cache, 10);
    expect(await get(url, 'alice', 'right')).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push(await get(url, 'alice', `guess-${i}`));
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual(Array(15).fill(429));
    expect(cache.bcryptRuns).toBe(11);
    // Another client is not limited by this one's failures; the legitimate scrape from the same address neither.
    expect(await get(url, 'alice', 'guess-x', 7)).toBe(401);
    expect(await get(url, 'alice', 'right')).toBe(200);
  });
});
