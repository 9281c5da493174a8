/**
 * The simulator's login and inventory over real HTTP: tokens with a lifetime, refused by every API once expired
 * with that API's documented error, the ban after 7 wrong passwords, the 20-per-minute ceiling, and the account
 * list with statuses that tests change.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { Simulator } from '../../src/simulator/server.js';
import { formatApiTime } from '../../src/simulator/traffic.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 2, 3, 12, 0, 0);
async function login(s: Simulator, username: string, password: string) {
  const res = await fetch(`${s.url}/app/oauth/v1/token/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username, password }).toString(),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
    retryAfter: res.headers.get('retry-after'),
  };
}

async function get(s: Simulator, path: string, token: string) {
  const res = await fetch(`${s.url}${path}`, { headers: { 'CDN-AUTH-TOKEN': token } });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

const q = `account=demo&start=${formatApiTime(NOW - 10 * MINUTE)}&end=${formatApiTime(NOW - 5 * MINUTE)}`;

describe('simulator login', () => {
  it("issues a token with the set lifetime that every API accepts, and refuses with each API's error once expired", async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock, tokenLifetimeMs: 10 * MINUTE });
    const ok = await login(sim, DEMO_USER, DEMO_PASSWORD);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 200, lifetime: 600_000 });
    const token = ok.body!.token as string;
    expect(token).toMatch(/^cdn1_/);
    expect((await get(sim, `/app/metrics/v1/resources?${q}`, token)).status).toBe(200);
    expect((await get(sim, '/app/dvr-net/v1/demo/streams/live/main', token)).status).toBe(200);
    expect((await get(sim, '/app/recorder-cloud/v1/demo/record', token)).status).toBe(200);
    clock.set(NOW + 10 * MINUTE);
    const metrics = await get(sim, `/app/metrics/v1/resources?${q}`, token);
    expect([metrics.status, JSON.parse(metrics.text)]).toEqual([403, { description: 'Invalid token' }]);
    const dvr = await get(sim, '/app/dvr-net/v1/demo/streams/live/main', token);
    expect([dvr.status, JSON.parse(dvr.text)]).toEqual([
      403,
      { status: 'Forbidden', description: 'Invalid token' },
    ]);
    const rec = await get(sim, '/app/recorder-cloud/v1/demo/record', token);
    expect([rec.status, rec.text]).toEqual([401, 'Invalid token']);
    expect(sim.requestLog.filter((e) => e.token === 'expired')).toHaveLength(3);
    expect(JSON.stringify(sim.requestLog)).not.toContain(token);
  });

  it('bans a user after 7 wrong passwords for the set duration, even with the right one', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock, banDurationMs: 30 * MINUTE });
    for (let i = 0; i < 6; i++) expect((await login(sim, DEMO_USER, 'nope')).status).toBe(401);
    expect(sim.banned(DEMO_USER)).toBe(false);
    expect((await login(sim, DEMO_USER, 'nope')).status).toBe(401);
    expect(sim.banned(DEMO_USER)).toBe(true);
    expect((await login(sim, DEMO_USER, DEMO_PASSWORD)).status).toBe(403);
    clock.set(NOW + 30 * MINUTE);
    expect((await login(sim, DEMO_USER, DEMO_PASSWORD)).status).toBe(200);
    expect((await login(sim, DEMO_USER, '')).status).toBe(400);
  });

  it('answers 429 with Retry-After above 20 logins a minute', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    for (let i = 0; i < 20; i++) expect((await login(sim, DEMO_USER, DEMO_PASSWORD)).status).toBe(200);
    const over = await login(sim, DEMO_USER, DEMO_PASSWORD);
    expect(over.status).toBe(429);
    expect(Number(over.retryAfter)).toBeGreaterThan(0);
    clock.set(NOW + MINUTE);
    expect((await login(sim, DEMO_USER, DEMO_PASSWORD)).status).toBe(200);
  });
});

describe('simulator inventory', () => {
  it('lists the accounts of the token with their status; accounts are added, deactivated and removed', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    const token = (await login(sim, DEMO_USER, DEMO_PASSWORD)).body!.token as string;
    const list = async (t: string) => {
      const r = await get(sim, '/app/inventory/v1/accounts/', t);
      return r.status === 200 ? (JSON.parse(r.text) as Array<Record<string, string>>) : r.status;
    };
    const first = (await list(token)) as Array<Record<string, string>>;
    expect(first.map((a) => [a.name, a.status])).toEqual([
      ['demo', 'active'],
      ['acme', 'active'],
    ]);
    expect(Object.keys(first[0]!).sort()).toEqual(['name', 'status', 'uid', 'utoken']);
    // A fixed token sees its own account.
    expect(((await list('acme-token')) as Array<{ name: string }>).map((a) => a.name)).toEqual(['acme']);
    expect(await list('bogus')).toBe(401);

    const extra = { ...demoWorld()[1]!, name: 'newco', token: 'newco-token' };
    sim.addAccount(extra);
    sim.setAccountStatus('acme', 'inactive');
    sim.removeAccount('demo');
    expect(((await list(token)) as Array<Record<string, string>>).map((a) => [a.name, a.status])).toEqual([
      ['acme', 'inactive'],
      ['newco', 'active'],
    ]);
    expect((await get(sim, `/app/metrics/v1/resources?${q}`, token)).status).toBe(403);
  });
});
