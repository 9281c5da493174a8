/**
 * The simulator's inventory API (src/simulator/inventory.ts) served alone on loopback, against
 * docs/upstream-api.md, "Inventory": `GET /app/inventory/v1/accounts/` with `CDN-AUTH-TOKEN` answers a JSON array
 * of `{status, utoken, uid, name}` for the accounts the token may see; 401 without a usable token; 503 when down.
 * Also its two test controls: a failure status instead of the list, and bytes instead of the list.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createInventoryApi } from '../../src/simulator/inventory.js';
import type { SimAccount, SimContext } from '../../src/simulator/types.js';
import type { FakeClock } from '../helpers/fake-clock.js';
import { closeServed, startApi } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const PREFIX = '/app/inventory/v1';

const account = (name: string, status?: string): SimAccount => ({
  name,
  token: `tok-${name}`,
  ...(status ? { status } : {}),
  resources: [],
  streams: [],
  recordings: [],
});

/** `north` (active), `south` (blocked); token `tok-ops` sees both and a name no account has, `tok-north` north only. */
function context(clock: FakeClock): SimContext {
  const accounts = new Map([
    ['north', account('north')],
    ['south', account('south', 'blocked')],
  ]);
  const visible: Record<string, string[]> = {
    'tok-ops': ['north', 'south', 'gone'],
    'tok-north': ['north'],
  };
  return { clock, seed: 1, accounts, accountsForToken: (t) => visible[t] };
}

afterEach(closeServed);

async function serve(controls: { failure?: number; body?: string } = {}) {
  const { base } = await startApi(PREFIX, T0, context, (ctx) => ({
    router: createInventoryApi(
      ctx,
      () => controls.failure,
      () => controls.body,
    ),
  }));
  return { base, controls };
}

async function get(url: string, token?: string) {
  const res = await fetch(url, { headers: token === undefined ? {} : { 'CDN-AUTH-TOKEN': token } });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

describe('GET /app/inventory/v1/accounts/', () => {
  it("lists the token's accounts as {status, utoken, uid, name}, each with its own status, skipping names no account has", async () => {
    const { base } = await serve();
    const r = await get(`${base}/accounts/`, 'tok-ops');
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/json/);
    const list = JSON.parse(r.text) as Record<string, string>[];
    expect(list.map((a) => [a.name, a.status, a.uid])).toEqual([
      ['north', 'active', '1-1-north'],
      ['south', 'blocked', '1-1-south'],
    ]);
    for (const a of list) expect(Object.keys(a).sort()).toEqual(['name', 'status', 'uid', 'utoken']);
    const only = JSON.parse((await get(`${base}/accounts`, 'tok-north')).text) as { name: string }[];
    expect(only.map((a) => a.name)).toEqual(['north']);
  });

  it('gives each account a utoken of its own, opaque and the same on every call and every simulator', async () => {
    const first = await serve();
    const again = await serve();
    const utokens = async (base: string) =>
      (JSON.parse((await get(`${base}/accounts/`, 'tok-ops')).text) as { utoken: string }[]).map(
        (a) => a.utoken,
      );
    const a = await utokens(first.base);
    expect(await utokens(first.base)).toEqual(a);
    expect(await utokens(again.base)).toEqual(a);
    expect(new Set(a).size).toBe(2);
    for (const u of a) {
      expect(u).toMatch(/^[0-9a-f]{10}$/);
      expect(u).not.toContain('north');
      expect(u).not.toContain('south');
    }
  });

  it('answers 401 Unauthorized in text for no token, an empty one or an unknown one', async () => {
    const { base } = await serve();
    for (const token of [undefined, '', 'tok-unknown']) {
      const r = await get(`${base}/accounts/`, token);
      expect([r.status, r.text], String(token)).toEqual([401, 'Unauthorized']);
      expect(r.type).toMatch(/^text\/plain/);
    }
  });

  it('answers the failure status to every token while one is set (503: the inventory is down), then the list again', async () => {
    const { base, controls } = await serve({ failure: 503 });
    const down = await get(`${base}/accounts/`, 'tok-ops');
    expect([down.status, down.text]).toEqual([503, 'Service Unavailable']);
    controls.failure = undefined;
    expect((await get(`${base}/accounts/`, 'tok-ops')).status).toBe(200);
  });

  it('answers the given bytes as 200 JSON to any token, even none, while they are set (a hostile listing)', async () => {
    const body = '{"data": [{"name": 1}]';
    const { base, controls } = await serve({ body });
    for (const token of [undefined, 'tok-unknown', 'tok-north']) {
      const r = await get(`${base}/accounts/`, token);
      expect([r.status, r.text], String(token)).toEqual([200, body]);
      expect(r.type).toMatch(/^application\/json/);
    }
    // A failure is answered before the bytes.
    controls.failure = 503;
    expect((await get(`${base}/accounts/`, 'tok-north')).status).toBe(503);
  });
});
