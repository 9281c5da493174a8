/**
 * The simulator's default world (src/simulator/world.ts) as src/simulator/README.md, "The demo world", describes
 * it, checked through what the simulator answers over loopback for documented requests (traffic, DVR, recordings,
 * login and inventory) and through its truth: two accounts with their tokens and resources, `staging` listed with
 * no traffic, `vod`'s traffic doubled, the three demo streams, one recording setting in each status, the demo login.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { Simulator } from '../../src/simulator/server.js';
import { formatApiTime } from '../../src/simulator/traffic.js';
import { DEMO_PASSWORD, DEMO_TRAFFIC_SCALE, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 2, 3, 12, 0, 0);
const DAY = 24 * 60 * MINUTE;

async function getJson(sim: Simulator, path: string, token: string) {
  const res = await fetch(`${sim.url}${path}`, { headers: { 'CDN-AUTH-TOKEN': token } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as unknown;
}

function trafficPath(account: string, from: number, to: number): string {
  return `/app/metrics/v1/resources?account=${account}&start=${formatApiTime(from)}&end=${formatApiTime(to)}&metric=edge_requests_total`;
}

interface Element {
  resource: string;
  resource_name: string;
  cname: string;
  edge_requests_total: number;
}

interface DvrEntry {
  host: string;
  is_alive: boolean;
  dvr: { window: number; ranges: { from: number; duration: number }[] };
}

describe('demoWorld', () => {
  it('gives a fresh copy on every call: changing one world leaves the next as described', () => {
    const a = demoWorld();
    a[0]!.resources.pop();
    a[0]!.token = 'changed';
    const b = demoWorld();
    expect(b.map((x) => [x.name, x.token])).toEqual([
      ['demo', 'demo-token'],
      ['acme', 'acme-token'],
    ]);
    expect(b[0]!.resources).toHaveLength(5);
  });

  it('serves demo and acme with their tokens; the traffic API lists every resource, staging with no traffic at all', async () => {
    const sim = await startTestSimulator({ seed: 1, clock: new FakeClock(NOW) });
    const window = trafficPath('demo', NOW - 15 * MINUTE, NOW - 5 * MINUTE);
    const demo = (await getJson(sim, window, 'demo-token')) as { data: Element[] };
    expect(demo.data.map((e) => [e.resource, e.resource_name])).toEqual([
      ['1001', 'www'],
      ['1002', 'images'],
      ['1003', 'vod'],
      ['1004', 'live-hls'],
      ['1005', 'staging'],
    ]);
    expect(demo.data.find((e) => e.resource_name === 'vod')!.cname).toBe('vod.cdn.demo.example');
    for (const e of demo.data)
      expect(e.edge_requests_total > 0, e.resource_name).toBe(e.resource_name !== 'staging');
    const acme = (await getJson(
      sim,
      trafficPath('acme', NOW - 15 * MINUTE, NOW - 5 * MINUTE),
      'acme-token',
    )) as { data: Element[] };
    expect(acme.data.map((e) => e.resource_name)).toEqual(['shop', 'downloads', 'live']);
    // A token sees its own account only.
    const other = await fetch(`${sim.url}${trafficPath('acme', NOW - 15 * MINUTE, NOW - 5 * MINUTE)}`, {
      headers: { 'CDN-AUTH-TOKEN': 'demo-token' },
    });
    expect(other.status).toBe(403);
  });

  /** Edge requests and bytes of each demo resource over the day before NOW, as the simulator of the demo's seed (1) counts them. */
  async function demoDay(trafficScale?: Record<string, number>) {
    const sim = await startTestSimulator({
      seed: 1,
      clock: new FakeClock(NOW),
      ...(trafficScale ? { trafficScale } : {}),
    });
    return demoWorld()[0]!.resources.map((r) => {
      const t = sim.truth('demo', r.id, NOW - DAY, NOW).edge;
      return { name: r.name, requests: t.requests, bytes: t.bytes };
    });
  }

  it('gives staging no traffic at all over a day (DEMO_TRAFFIC_SCALE 0)', async () => {
    expect(DEMO_TRAFFIC_SCALE['demo/1005']).toBe(0);
    const staging = (await demoDay()).find((r) => r.name === 'staging')!;
    expect(staging).toEqual({ name: 'staging', requests: 0, bytes: 0 });
  });

  it("doubles vod's traffic over what the seed draws for it (DEMO_TRAFFIC_SCALE 2)", async () => {
    expect(DEMO_TRAFFIC_SCALE['demo/1003']).toBe(2);
    const scaled = (await demoDay()).find((r) => r.name === 'vod')!;
    const plain = (await demoDay({})).find((r) => r.name === 'vod')!;
    // The scale multiplies each minute's volume before it is rounded to whole requests: twice, within a request a
    // minute.
    expect(Math.abs(scaled.requests - 2 * plain.requests)).toBeLessThanOrEqual(24 * 60);
    expect(scaled.requests).toBeGreaterThan(1.9 * plain.requests);
  });

  it('has the three demo streams: live/main on 2 hosts alive with breaks every 15 minutes, news/hd not alive, sport/4k with a 2 h window', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock });
    clock.set(NOW + 60 * MINUTE);
    const stream = async (account: string, name: string, token: string) =>
      ((await getJson(sim, `/app/dvr-net/v1/${account}/streams/${name}`, token)) as { data: DvrEntry[] })
        .data;

    const main = await stream('demo', 'live/main', 'demo-token');
    expect(main.map((e) => [e.host, e.is_alive])).toEqual([
      ['dvr-1.demo.example', true],
      ['dvr-2.demo.example', true],
    ]);
    for (const e of main) {
      // An hour into a one-hour window with a break every 900 s: several ranges, none longer than 900 s.
      expect(e.dvr.ranges.length, e.host).toBeGreaterThanOrEqual(4);
      for (const r of e.dvr.ranges) expect(r.duration, e.host).toBeLessThanOrEqual(900);
    }
    const news = await stream('demo', 'news/hd', 'demo-token');
    expect(news.map((e) => [e.host, e.is_alive])).toEqual([['dvr-1.demo.example', false]]);
    const sport = await stream('demo', 'sport/4k', 'demo-token');
    expect(sport.map((e) => [e.host, e.dvr.window])).toEqual([
      ['dvr-2.demo.example', 7200],
      ['dvr-3.demo.example', 7200],
    ]);
    const tv = await stream('acme', 'tv/channel1', 'acme-token');
    expect(tv.map((e) => e.host)).toEqual(['edge-a.acme.example', 'edge-b.acme.example']);
  });

  it('has four recording settings in demo, one in each status, and none in acme', async () => {
    const sim = await startTestSimulator({ seed: 1, clock: new FakeClock(NOW) });
    const demo = (await getJson(
      sim,
      '/app/recorder-cloud/v1/demo/record?extra_fields=status',
      'demo-token',
    )) as { status: string; source_path: string }[];
    expect(demo.map((s) => s.status).sort()).toEqual(['error', 'finish', 'progress', 'wait']);
    expect(demo.map((s) => s.source_path)).toContain('/events/keynote/playlist.m3u8');
    expect(await getJson(sim, '/app/recorder-cloud/v1/acme/record', 'acme-token')).toEqual([]);
  });

  it('lets the demo login user in with the demo password, and its inventory lists both accounts', async () => {
    const sim = await startTestSimulator({ seed: 1, clock: new FakeClock(NOW) });
    const res = await fetch(`${sim.url}/app/oauth/v1/token/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: DEMO_USER, password: DEMO_PASSWORD }).toString(),
    });
    expect(res.status).toBe(200);
    const { token } = (await res.json()) as { token: string };
    const list = (await getJson(sim, '/app/inventory/v1/accounts/', token)) as { name: string }[];
    expect(list.map((a) => a.name)).toEqual(['demo', 'acme']);
  });
});
