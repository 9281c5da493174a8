/**
 * The simulator's test controls for the failure table: windows refused with 422 or 504, and a token changed by
 * the CDN. Checked over real HTTP on loopback, as the exporter sees them.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { Simulator } from '../../src/simulator/server.js';
import { formatApiTime } from '../../src/simulator/traffic.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 2, 3, 12, 0, 0);
const T0 = Date.UTC(2026, 2, 3, 10, 0, 0);

async function window(
  sim: Simulator,
  start: number,
  minutes: number,
  token = 'demo-token',
  account = 'demo',
) {
  const q = `account=${account}&start=${formatApiTime(start)}&end=${formatApiTime(start + minutes * MINUTE)}`;
  const res = await fetch(`${sim.url}/app/metrics/v1/resources?${q}`, {
    headers: { 'CDN-AUTH-TOKEN': token },
  });
  const body = (await res.json()) as { description?: string; data?: unknown[] };
  return { status: res.status, type: res.headers.get('content-type'), body };
}

describe('simulator controls', () => {
  it('rejects windows starting in [from, to) with 422 and the documented description, others answer', async () => {
    const sim = await startTestSimulator({ seed: 3, clock: new FakeClock(NOW) });
    sim.rejectWindows(T0 + 10 * MINUTE, T0 + 20 * MINUTE);
    const before = await window(sim, T0 + 5 * MINUTE, 10); // overlaps the range but starts before it
    const first = await window(sim, T0 + 10 * MINUTE, 1);
    const last = await window(sim, T0 + 19 * MINUTE, 5);
    const after = await window(sim, T0 + 20 * MINUTE, 1);
    expect(before.status).toBe(200);
    expect(first.status).toBe(422);
    expect(first.type).toMatch(/^application\/json/);
    expect(first.body).toEqual({ description: 'Invalid time format. Time must be at minute precision' });
    expect(last.status).toBe(422);
    expect(after.status).toBe(200);

    sim.rejectWindows(T0 + 30 * MINUTE, T0 + 31 * MINUTE, 'Data for this period is unavailable');
    const custom = await window(sim, T0 + 30 * MINUTE, 2);
    expect(custom).toMatchObject({
      status: 422,
      body: { description: 'Data for this period is unavailable' },
    });
    // The token is checked first: a refused token still gets 403 inside a rejected range.
    expect((await window(sim, T0 + 10 * MINUTE, 1, 'nope')).status).toBe(403);

    sim.clearWindowRules();
    expect((await window(sim, T0 + 10 * MINUTE, 1)).status).toBe(200);
    expect(sim.requestLog.map((e) => e.status)).toEqual([200, 422, 422, 200, 422, 403, 200]);
  });

  it('answers 504 for windows longer than the limit until it is lifted', async () => {
    const sim = await startTestSimulator({ seed: 3, clock: new FakeClock(NOW) });
    sim.timeoutWindowsLongerThan(2);
    const long = await window(sim, T0, 3);
    expect(long.status).toBe(504);
    expect(long.body).toEqual({ description: 'Execution timeout exceeded' });
    expect((await window(sim, T0, 2)).status).toBe(200);
    expect((await window(sim, T0, 1)).status).toBe(200);
    sim.timeoutWindowsLongerThan(undefined);
    expect((await window(sim, T0, 10)).status).toBe(200);
    sim.timeoutWindowsLongerThan(5);
    sim.clearWindowRules();
    expect((await window(sim, T0, 10)).status).toBe(200);
    // The request log shows the 504 with no injected fault, as a real answer.
    expect(sim.requestLog[0]).toMatchObject({ status: 504 });
    expect(sim.requestLog[0]!.fault).toBeUndefined();
  });

  it('changes an account token: the old one is refused on every API, the new one works, others unchanged', async () => {
    const sim = await startTestSimulator({ seed: 3, clock: new FakeClock(NOW) });
    expect((await window(sim, T0, 5)).status).toBe(200);
    sim.setToken('demo', 'demo-token-2');
    const old = await window(sim, T0, 5);
    expect(old.status).toBe(403);
    expect(old.body.description).toBeTruthy();
    expect((await window(sim, T0, 5, 'demo-token-2')).status).toBe(200);
    expect((await window(sim, T0, 5, 'acme-token', 'acme')).status).toBe(200);
    const dvr = await fetch(`${sim.url}/app/dvr-net/v1/demo/streams/live/main`, {
      headers: { 'CDN-AUTH-TOKEN': 'demo-token' },
    });
    expect([401, 403]).toContain(dvr.status);
    const dvrNew = await fetch(`${sim.url}/app/dvr-net/v1/demo/streams/live/main`, {
      headers: { 'CDN-AUTH-TOKEN': 'demo-token-2' },
    });
    expect(dvrNew.status).toBe(200);
    expect(() => sim.setToken('nobody', 'x')).toThrow(/unknown account/);
    expect(JSON.stringify(sim.requestLog)).not.toContain('demo-token');
  });
});
