/**
 * Issue 4 end to end: DVR health and recordings, from the simulator's APIs through the exporter to /metrics,
 * on a FakeClock shared by simulator and exporter (DVR ranges grow and polls run as the test moves time).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HttpClient } from '../../src/http/request.js';
import { accountState } from '../../src/server/status.js';
import { startSimulator } from '../../src/simulator/server.js';
import { DvrTestClient, RecorderTestClient } from '../helpers/api-writes.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import {
  e2eWorld,
  expectedHealth,
  type RoundKey,
  RoundStepper,
  shownHealth,
  simEntries,
} from '../helpers/poll-rounds.js';
import { type Stack, startStack } from '../helpers/stack.js';
import { json, startTamperProxy, type TamperProxy } from '../helpers/tamper-proxy.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const INTERVAL = 60_000;
const DEMO_STREAMS = ['live/main', 'news/hd', 'sport/4k'];
const DVR_FAMILIES = [
  'cdn_dvr_stream_alive',
  'cdn_dvr_enabled',
  'cdn_dvr_window_seconds',
  'cdn_dvr_recorded_seconds',
  'cdn_dvr_ranges',
  'cdn_dvr_first_timestamp_seconds',
  'cdn_dvr_last_timestamp_seconds',
  'cdn_dvr_gap_seconds',
  'cdn_dvr_largest_gap_seconds',
  'cdn_dvr_coverage_ratio',
];
const RECORDING_FAMILIES = [
  'cdn_recording_info',
  'cdn_recording_status',
  'cdn_recording_instances',
  'cdn_recording_last_start_timestamp_seconds',
  'cdn_recording_last_stop_timestamp_seconds',
  'cdn_recording_dvr_enabled',
  'cdn_recording_dvr_window_seconds',
  'cdn_recording_storage_seconds',
];
const STATUSES = ['wait', 'progress', 'finish', 'error'];
const DVR1 = 'dvr-1.demo.example';
const DVR2 = 'dvr-2.demo.example';
const DVR3 = 'dvr-3.demo.example';

interface Setup {
  stack: Stack;
  clock: FakeClock;
  steps: RoundStepper;
  dvr: DvrTestClient;
  recorder: RecorderTestClient;
  keys: RoundKey[];
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  o: { accounts?: Record<string, unknown>[]; proxy?: boolean; keys?: RoundKey[] } = {},
): Promise<Setup & { proxy?: TamperProxy }> {
  const clock = new FakeClock(T0);
  const accounts = o.accounts ?? [{ name: 'demo', dvr_streams: DEMO_STREAMS, recordings: true }];
  let proxy: TamperProxy | undefined;
  let stack: Stack | undefined;
  if (o.proxy) {
    // The proxy needs the simulator's address before the exporter starts: start the simulator alone first.
    const sim = await startSimulator({ seed: 7, clock, slowMs: 300, accounts: e2eWorld() });
    cleanups.push(() => sim.close());
    proxy = await startTamperProxy(sim.url);
    cleanups.push(() => proxy!.close());
    stack = await startStack({
      clock,
      simulator: sim,
      config: { ...baseConfig(accounts), api: { ...API, base_url: proxy.url } },
    });
  } else {
    stack = await startStack({ clock, sim: { accounts: e2eWorld() }, config: baseConfig(accounts) });
  }
  const steps = new RoundStepper(stack, clock);
  cleanups.push(() => stack.stop());
  const http = new HttpClient({ baseUrl: stack.sim.url, token: () => 'demo-token', clock });
  cleanups.push(() => http.close());
  const keys: RoundKey[] =
    o.keys ??
    accounts.flatMap((a) => {
      const name = String(a.name);
      const k: RoundKey[] = [];
      if (Array.isArray(a.dvr_streams) && a.dvr_streams.length) k.push(['dvr-net', name]);
      if (a.recordings === true) k.push(['recorder-cloud', name]);
      return k;
    });
  return {
    stack,
    clock,
    steps,
    dvr: new DvrTestClient(http),
    recorder: new RecorderTestClient(http),
    keys,
    proxy,
  };
}

/** Many polls go by in little real time: the token's request ceiling must not be what paces the test. */
const API = { requests_per_second: 1000 };

function baseConfig(accounts: Record<string, unknown>[]): Record<string, unknown> {
  return {
    api: API,
    metrics: { lookback: '10m', delay: '0m', window: '5m' },
    dvr: { interval: '1m' },
    recordings: { interval: '1m' },
    accounts,
  };
}

function nowSec(clock: FakeClock): number {
  return clock.now() / 1000;
}

/** Every DVR gauge of every host of the stream equals what the simulator's ranges say at this instant. */
async function expectAgreesWithSim(s: Setup, scrape: Scrape, account: string, stream: string, token: string) {
  const entries = await simEntries(s.stack.sim.url, account, stream, token);
  expect(entries.length).toBeGreaterThan(0);
  for (const e of entries) {
    const want = expectedHealth(e, nowSec(s.clock));
    const shown = shownHealth(scrape, account, stream, e.host);
    const where = `${account} ${stream} ${e.host}`;
    expect(shown.ranges, where).toBe(want.ranges);
    expect(shown.recorded, where).toBe(want.recorded);
    expect(shown.first, where).toBe(want.first);
    expect(shown.last, where).toBe(want.last);
    expect(shown.gap, where).toBe(want.gap);
    expect(shown.largestGap, where).toBe(want.largestGap);
    expect(shown.coverage, where).toBeCloseTo(want.coverage, 12);
    const l = { account, stream, host: e.host };
    expect(scrape.value('cdn_dvr_stream_alive', l), where).toBe(e.is_alive ? 1 : 0);
    expect(scrape.value('cdn_dvr_enabled', l), where).toBe(e.dvr.enabled ? 1 : 0);
    expect(scrape.value('cdn_dvr_window_seconds', l), where).toBe(e.dvr.window);
  }
  // No host the simulator does not report.
  const hosts = new Set(entries.map((e) => e.host));
  for (const sample of scrape.all('cdn_dvr_ranges', { account, stream })) {
    expect(hosts.has(sample.labels.host!), sample.labels.host).toBe(true);
  }
}

function seriesOf(scrape: Scrape, families: string[], match: Record<string, string>): number {
  return families.reduce((n, f) => n + scrape.all(f, match).length, 0);
}

describe('DVR health end to end', () => {
  it('shows every host of every stream as the simulator holds it, poll after poll, slash names included', async () => {
    const s = await setup();
    let scrape = await s.steps.settled(s.keys);
    for (const stream of DEMO_STREAMS) await expectAgreesWithSim(s, scrape, 'demo', stream, 'demo-token');
    // The stream label is the name as configured, slash and all.
    expect(scrape.all('cdn_dvr_ranges', { stream: 'live/main' }).map((x) => x.labels.host)).toEqual(
      expect.arrayContaining([DVR1, DVR2]),
    );
    const firstRecorded = scrape.value('cdn_dvr_recorded_seconds', {
      account: 'demo',
      stream: 'live/main',
      host: DVR1,
    })!;
    // 25 minutes on: sport/4k breaks every 10 minutes, so new ranges and gaps appear; live/main grows.
    for (let i = 0; i < 25; i++) scrape = await s.steps.step(INTERVAL, s.keys);
    for (const stream of DEMO_STREAMS) await expectAgreesWithSim(s, scrape, 'demo', stream, 'demo-token');
    const sport = scrape.all('cdn_dvr_ranges', { stream: 'sport/4k' });
    expect(sport.every((x) => x.value >= 2)).toBe(true);
    expect(
      scrape.value('cdn_dvr_recorded_seconds', { account: 'demo', stream: 'live/main', host: DVR1 }),
    ).toBe(Math.min(3600, firstRecorded + 25 * 60));
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'dvr-net' })).toBe(0);
  });

  it('a slice deleted from the middle of a range is exactly the gap the next poll shows', async () => {
    const s = await setup();
    const l1 = { account: 'demo', stream: 'live/main', host: DVR1 };
    const l2 = { account: 'demo', stream: 'live/main', host: DVR2 };
    let scrape = await s.steps.settled(s.keys);
    // live/main records without breaks: one range per host, no gap.
    expect(shownHealth(scrape, 'demo', 'live/main', DVR1)).toMatchObject({
      ranges: 1,
      gap: 0,
      largestGap: 0,
    });
    const first = scrape.value('cdn_dvr_first_timestamp_seconds', l1)!;
    const before2 = shownHealth(scrape, 'demo', 'live/main', DVR2);

    // Well inside the range: it began at least 15 minutes ago, and two polls move the window's start by 2.
    const cut = first + 300;
    await s.dvr.deleteRange('demo', 'live/main', { host: DVR1, fromTs: cut, durationSec: 77 });
    scrape = await s.steps.step(INTERVAL, s.keys);
    let shown = shownHealth(scrape, 'demo', 'live/main', DVR1);
    const now = nowSec(s.clock);
    expect(shown.ranges).toBe(2);
    expect(shown.gap).toBe(77);
    expect(shown.largestGap).toBe(77);
    expect(shown.last).toBe(now);
    expect(shown.recorded).toBe(now - shown.first! - 77);
    expect(shown.coverage).toBeCloseTo((now - shown.first! - 77) / 3600, 12);
    // The other host was not touched: still one range, grown by one interval.
    const after2 = shownHealth(scrape, 'demo', 'live/main', DVR2);
    expect(after2).toMatchObject({ ranges: 1, gap: 0, largestGap: 0, last: now });
    expect(after2.recorded).toBe(Math.min(3600, before2.recorded! + 60));

    // A second, shorter slice with the to_ts form, on every host: the largest gap stays the first slice.
    await s.dvr.deleteRange('demo', 'live/main', { host: '*', fromTs: now - 200, toTs: now - 180 });
    scrape = await s.steps.step(INTERVAL, s.keys);
    shown = shownHealth(scrape, 'demo', 'live/main', DVR1);
    expect(shown).toMatchObject({ ranges: 3, gap: 97, largestGap: 77 });
    expect(shownHealth(scrape, 'demo', 'live/main', DVR2)).toMatchObject({
      ranges: 2,
      gap: 20,
      largestGap: 20,
    });
    await expectAgreesWithSim(s, scrape, 'demo', 'live/main', 'demo-token');
    expect(scrape.value('cdn_dvr_stream_alive', l2)).toBe(1);
  });

  it('deleting everything empties the ranges; a live stream then accumulates again from the deletion', async () => {
    const s = await setup();
    let scrape = await s.steps.settled(s.keys);
    const dead = { account: 'demo', stream: 'news/hd', host: DVR1 };
    expect(scrape.value('cdn_dvr_stream_alive', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_ranges', dead)).toBeGreaterThan(0);
    expect(scrape.value('cdn_dvr_first_timestamp_seconds', dead)).toBeDefined();

    const deletedAt = nowSec(s.clock);
    await s.dvr.deleteAll('demo', 'news/hd', '*');
    await s.dvr.deleteAll('demo', 'live/main', DVR2);
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(scrape.value('cdn_dvr_ranges', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_recorded_seconds', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_gap_seconds', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_largest_gap_seconds', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_coverage_ratio', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_first_timestamp_seconds', dead)).toBeUndefined();
    expect(scrape.value('cdn_dvr_last_timestamp_seconds', dead)).toBeUndefined();
    // The host is still there, with its state.
    expect(scrape.value('cdn_dvr_stream_alive', dead)).toBe(0);
    expect(scrape.value('cdn_dvr_enabled', dead)).toBe(1);

    // The live host starts over at the deletion: one range, one interval long.
    expect(shownHealth(scrape, 'demo', 'live/main', DVR2)).toMatchObject({
      ranges: 1,
      recorded: 60,
      first: deletedAt,
      last: deletedAt + 60,
      gap: 0,
    });
    // The other host of the stream kept its history.
    expect(
      scrape.value('cdn_dvr_recorded_seconds', { account: 'demo', stream: 'live/main', host: DVR1 }),
    ).toBeGreaterThan(60);
    await expectAgreesWithSim(s, scrape, 'demo', 'live/main', 'demo-token');
  });

  it('a stream that stops is alive 0 on every host, stops growing, and comes back as a new range', async () => {
    const s = await setup();
    let scrape = await s.steps.settled(s.keys);
    const hosts = [DVR1, DVR2];
    for (const host of hosts)
      expect(scrape.value('cdn_dvr_stream_alive', { account: 'demo', stream: 'live/main', host })).toBe(1);
    s.stack.sim.dvr.setAlive('demo', 'live/main', false);
    const stoppedAt = nowSec(s.clock);
    scrape = await s.steps.step(INTERVAL, s.keys);
    for (const host of hosts) {
      const l = { account: 'demo', stream: 'live/main', host };
      expect(scrape.value('cdn_dvr_stream_alive', l)).toBe(0);
      expect(scrape.value('cdn_dvr_last_timestamp_seconds', l)).toBe(stoppedAt);
    }
    scrape = await s.steps.step(INTERVAL, s.keys);
    s.stack.sim.dvr.setAlive('demo', 'live/main', true);
    const backAt = nowSec(s.clock);
    scrape = await s.steps.step(INTERVAL, s.keys);
    for (const host of hosts) {
      const l = { account: 'demo', stream: 'live/main', host };
      expect(scrape.value('cdn_dvr_stream_alive', l)).toBe(1);
      expect(scrape.value('cdn_dvr_ranges', l)).toBe(2);
      expect(scrape.value('cdn_dvr_largest_gap_seconds', l)).toBe(backAt - stoppedAt);
    }
    await expectAgreesWithSim(s, scrape, 'demo', 'live/main', 'demo-token');
  });

  it('a host that vanishes loses every series; the stream and its other host go on', async () => {
    const s = await setup({ proxy: true });
    const proxy = s.proxy!;
    let scrape = await s.steps.settled(s.keys);
    const gone = { account: 'demo', stream: 'sport/4k', host: DVR3 };
    const stays = { account: 'demo', stream: 'sport/4k', host: DVR2 };
    expect(seriesOf(scrape, DVR_FAMILIES, gone)).toBe(DVR_FAMILIES.length);
    proxy.tamper = (req, up) => {
      if (req.method !== 'GET' || !req.path.endsWith('/streams/sport/4k')) return undefined;
      const body = JSON.parse(up.body) as { data: { host: string }[] };
      return json({ ...body, data: body.data.filter((e) => e.host !== DVR3) });
    };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(proxy.rewritten).toBeGreaterThan(0);
    expect(seriesOf(scrape, DVR_FAMILIES, gone)).toBe(0);
    expect(seriesOf(scrape, DVR_FAMILIES, stays)).toBe(DVR_FAMILIES.length);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    // It comes back when the API lists it again.
    proxy.tamper = undefined;
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(seriesOf(scrape, DVR_FAMILIES, gone)).toBe(DVR_FAMILIES.length);
    await expectAgreesWithSim(s, scrape, 'demo', 'sport/4k', 'demo-token');
  });

  it('a misspelt stream among good ones fails alone: cdn_dvr_stream_up 0 for it, cdn_up 1 for the API', async () => {
    const s = await setup({
      accounts: [
        { name: 'demo', dvr_streams: ['live/main'] },
        {
          name: 'acme',
          token: 'acme-token',
          dvr_streams: ['tv/channel1', 'tv/no-such-channel', 'tv/chanel1'],
        },
      ],
    });
    let scrape = await s.steps.settled(s.keys);
    for (let i = 0; i < 2; i++) {
      // The API answers for acme: its one good stream is polled and exported as for demo.
      expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'acme' })).toBe(1);
      expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'tv/channel1' })).toBe(1);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'tv/no-such-channel' })).toBe(0);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'tv/chanel1' })).toBe(0);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'live/main' })).toBe(1);
      expect(scrape.all('cdn_dvr_stream_up')).toHaveLength(4);
      expect(scrape.all('cdn_dvr_ranges', { stream: 'tv/no-such-channel' })).toHaveLength(0);
      await expectAgreesWithSim(s, scrape, 'acme', 'tv/channel1', 'acme-token');
      await expectAgreesWithSim(s, scrape, 'demo', 'live/main', 'demo-token');
      expect(scrape.value('cdn_api_requests_total', { api: 'dvr-net', code: '404' })).toBe(2 * (i + 1));
      scrape = await s.steps.step(INTERVAL, s.keys);
    }
    const status = s.stack.exporter.status();
    const acme = status.accounts.find((a) => a.api === 'dvr-net' && a.name === 'acme')!;
    // Answering, but its last poll failed in part: the landing page shows it as failing, not up.
    expect(acme.up).toBe(true);
    expect(accountState(acme)).toBe('failing');
    expect(acme.errorsSinceSuccess).toBe(3);
    expect(acme.lastErrorAt?.getTime()).toBe(s.clock.now());
    expect(acme.lastError).toContain('tv/no-such-channel: 404');
    expect(acme.lastError).not.toContain('tv/channel1:');
    // Which streams fail is listed by name; the good one is not.
    const failing = status.problems.dvr.filter((p) => p.account === 'acme' && p.host === undefined);
    expect(failing.map((p) => p.stream)).toEqual(['tv/no-such-channel', 'tv/chanel1']);
    expect(failing[0]!.problem).toMatch(/^unknown stream \(404/);
    expect(
      scrape.value('cdn_exporter_last_success_timestamp_seconds', { api: 'dvr-net', account: 'acme' }),
    ).toBe(nowSec(s.clock));
  });

  it('every stream failing for the API (token refused) is cdn_up 0, and every stream 0', async () => {
    const s = await setup({
      accounts: [
        { name: 'acme', token: 'not-acme-token', dvr_streams: ['tv/channel1', 'tv/no-such-channel'] },
      ],
    });
    const scrape = await s.steps.settled(s.keys);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'acme' })).toBe(0);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'tv/channel1' })).toBe(0);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'tv/no-such-channel' })).toBe(0);
    const acme = s.stack.exporter.status().accounts.find((a) => a.api === 'dvr-net')!;
    expect(accountState(acme)).toBe('down');
  });

  it('a stream removed at the CDN loses every series it had on the next poll; the others keep theirs', async () => {
    const s = await setup({ accounts: [{ name: 'demo', dvr_streams: DEMO_STREAMS }] });
    let scrape = await s.steps.settled(s.keys);
    expect(scrape.all('cdn_dvr_ranges', { account: 'demo', stream: 'sport/4k' })).toHaveLength(2);
    const before = seriesOf(scrape, DVR_FAMILIES, { account: 'demo', stream: 'sport/4k' });
    expect(before).toBe(DVR_FAMILIES.length * 2);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);

    s.stack.sim.dvr.removeStream('demo', 'sport/4k');
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(seriesOf(scrape, DVR_FAMILIES, { account: 'demo', stream: 'sport/4k' })).toBe(0);
    // The API still answers; the stream that went is the one that fails.
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'sport/4k' })).toBe(0);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'live/main' })).toBe(1);
    expect(scrape.value('cdn_api_requests_total', { api: 'dvr-net', code: '404' })).toBe(1);
    for (const stream of ['live/main', 'news/hd']) {
      expect(seriesOf(scrape, DVR_FAMILIES, { account: 'demo', stream }), stream).toBeGreaterThan(0);
      await expectAgreesWithSim(s, scrape, 'demo', stream, 'demo-token');
    }
    const row = s.stack.exporter.status().accounts.find((a) => a.api === 'dvr-net' && a.name === 'demo')!;
    expect(row.lastError).toContain('sport/4k');
  });
});

function statusSet(scrape: Scrape, id: string): Record<string, number | undefined> {
  return Object.fromEntries(
    STATUSES.map((st) => [st, scrape.value('cdn_recording_status', { account: 'demo', id, status: st })]),
  );
}

/** Exactly one of the four statuses is 1, the other three are 0, and it is `want`. */
function expectStatus(scrape: Scrape, id: string, want: string): void {
  const set = statusSet(scrape, id);
  expect(set, `status of ${id}`).toEqual(Object.fromEntries(STATUSES.map((st) => [st, st === want ? 1 : 0])));
  expect(scrape.all('cdn_recording_status', { account: 'demo', id })).toHaveLength(4);
}

/** What a user reads of a setting's runs: its status, its instances, its last start and stop (seconds). */
function expectRuns(
  scrape: Scrape,
  id: string,
  want: { status: string; instances: number; lastStart?: number; lastStop?: number },
): void {
  const l = { account: 'demo', id };
  expectStatus(scrape, id, want.status);
  expect(scrape.value('cdn_recording_instances', l)).toBe(want.instances);
  expect(scrape.value('cdn_recording_last_start_timestamp_seconds', l)).toBe(want.lastStart);
  expect(scrape.value('cdn_recording_last_stop_timestamp_seconds', l)).toBe(want.lastStop);
}

describe('recordings end to end', () => {
  it('start and stop move the status state set, the instances and the last start and stop', async () => {
    const s = await setup();
    await s.steps.settled(s.keys);
    const { id } = await s.recorder.createSetting('demo', {
      streamName: 'talks/room-a',
      streamType: 'long',
      source: 'https://live.cdn.demo.example/talks/room-a/playlist.m3u8',
      launchType: 'button',
      storageTime: 7,
      dvrEnabled: true,
      dvrWindow: 1800,
    });
    const l = { account: 'demo', id };
    let scrape = await s.steps.step(INTERVAL, s.keys);
    expectRuns(scrape, id, { status: 'wait', instances: 0 });
    expect(scrape.value('cdn_recording_dvr_enabled', l)).toBe(1);
    expect(scrape.value('cdn_recording_dvr_window_seconds', l)).toBe(1800);
    expect(scrape.value('cdn_recording_storage_seconds', l)).toBe(7 * 86_400);
    expect(scrape.all('cdn_recording_info', l)).toEqual([
      expect.objectContaining({
        value: 1,
        labels: expect.objectContaining({
          stream_type: 'long',
          launch_type: 'button',
          source_domain: 'live.cdn.demo.example',
          source_path: '/talks/room-a/playlist.m3u8',
        }),
      }),
    ]);

    const startedAt = nowSec(s.clock);
    await s.recorder.patchSetting('demo', id, { action: 'start' });
    scrape = await s.steps.step(INTERVAL, s.keys);
    expectRuns(scrape, id, { status: 'progress', instances: 1, lastStart: startedAt });

    scrape = await s.steps.step(INTERVAL, s.keys);
    const stoppedAt = nowSec(s.clock);
    await s.recorder.patchSetting('demo', id, { action: 'stop' });
    scrape = await s.steps.step(INTERVAL, s.keys);
    expectRuns(scrape, id, { status: 'finish', instances: 1, lastStart: startedAt, lastStop: stoppedAt });

    const restartedAt = nowSec(s.clock);
    await s.recorder.patchSetting('demo', id, { action: 'start' });
    scrape = await s.steps.step(INTERVAL, s.keys);
    expectRuns(scrape, id, { status: 'progress', instances: 2, lastStart: restartedAt, lastStop: stoppedAt });

    // The seeded settings carry one status each; every one of them is a full state set.
    const ids = new Set(scrape.all('cdn_recording_info', { account: 'demo' }).map((x) => x.labels.id!));
    expect(ids.size).toBe(5);
    for (const other of ids) {
      const ones = scrape.all('cdn_recording_status', { account: 'demo', id: other }).filter((x) => x.value);
      expect(ones, other).toHaveLength(1);
    }
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
  });

  it('a forced error is the one status set; deactivate removes every series of the setting', async () => {
    const s = await setup();
    let scrape = await s.steps.settled(s.keys);
    const listed = await s.recorder.listSettings('demo', { extraFields: ['status'] });
    const waiting = listed.settings.find((x) => x.status === 'wait')!;
    const other = listed.settings.find((x) => x.id !== waiting.id)!;
    expectStatus(scrape, waiting.id, 'wait');

    s.stack.sim.recorder.setStatus('demo', waiting.id, 'error');
    scrape = await s.steps.step(INTERVAL, s.keys);
    expectStatus(scrape, waiting.id, 'error');

    const before = seriesOf(scrape, RECORDING_FAMILIES, { account: 'demo', id: other.id });
    expect(seriesOf(scrape, RECORDING_FAMILIES, { account: 'demo', id: waiting.id })).toBeGreaterThan(4);
    await s.recorder.patchSetting('demo', waiting.id, { action: 'deactivate' });
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(seriesOf(scrape, RECORDING_FAMILIES, { account: 'demo', id: waiting.id })).toBe(0);
    expect(seriesOf(scrape, RECORDING_FAMILIES, { account: 'demo', id: other.id })).toBe(before);
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
  });
});

describe('bodies of the wrong shape', () => {
  it('dvr-net: counted as parse errors, that stream down, the other streams keep exporting, and it recovers', async () => {
    const s = await setup({ proxy: true });
    const proxy = s.proxy!;
    let scrape = await s.steps.settled(s.keys);
    const live = { account: 'demo', stream: 'live/main', host: DVR1 };
    const sport = { account: 'demo', stream: 'sport/4k', host: DVR2 };
    const sportRecorded = scrape.value('cdn_dvr_recorded_seconds', sport);
    expect(sportRecorded).toBeGreaterThan(0);
    const parseErrors = () => scrape.value('cdn_exporter_parse_errors_total', { api: 'dvr-net' });
    expect(parseErrors()).toBe(0);

    // Three wrong shapes in turn for sport/4k: `data` not an array, a top level that is an array, truncated JSON.
    const shapes = [
      json({ status: 'Completed', stream_name: 'sport/4k', data: { hosts: 2 } }),
      json([{ host: DVR2 }]),
      { status: 200, contentType: 'application/json', body: '{"status":"Completed","data":[{"host":' },
    ];
    for (let i = 0; i < shapes.length; i++) {
      proxy.tamper = (req) =>
        req.method === 'GET' && req.path.endsWith('/streams/sport/4k') ? shapes[i] : undefined;
      const liveBefore = scrape.value('cdn_dvr_recorded_seconds', live)!;
      scrape = await s.steps.step(INTERVAL, s.keys);
      expect(parseErrors(), `shape ${i}`).toBe(i + 1);
      // The API answers the other streams: it is up; the stream whose answer cannot be read is the one down.
      expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'sport/4k' })).toBe(0);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'live/main' })).toBe(1);
      // The other streams are polled and exported as usual.
      expect(scrape.value('cdn_dvr_recorded_seconds', live)).toBe(Math.min(3600, liveBefore + 60));
      // The failing stream keeps its last values (a failed poll is not a vanished stream).
      expect(scrape.value('cdn_dvr_recorded_seconds', sport)).toBe(sportRecorded);
      // The other APIs are untouched.
      expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
    }

    // A body that is the right shape except for one bad entry: the entry is counted and dropped, the rest is used.
    proxy.tamper = (req, up) => {
      if (req.method !== 'GET' || !req.path.endsWith('/streams/sport/4k')) return undefined;
      const body = JSON.parse(up.body) as { data: Record<string, unknown>[] };
      body.data = body.data.map((e) => (e.host === DVR3 ? { ...e, is_alive: 'yes', host: 42 } : e));
      return json(body);
    };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(parseErrors()).toBeGreaterThan(shapes.length);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'sport/4k' })).toBe(1);
    expect(scrape.value('cdn_dvr_recorded_seconds', sport)).toBeGreaterThan(sportRecorded!);
    expect(scrape.all('cdn_dvr_ranges', { stream: 'sport/4k', host: DVR3 })).toHaveLength(0);

    proxy.tamper = undefined;
    const counted = parseErrors();
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(parseErrors()).toBe(counted);
    await expectAgreesWithSim(s, scrape, 'demo', 'sport/4k', 'demo-token');
  });

  it('recorder-cloud: counted as parse errors, cdn_up 0, DVR keeps exporting, and it recovers', async () => {
    const s = await setup({ proxy: true });
    const proxy = s.proxy!;
    let scrape = await s.steps.settled(s.keys);
    const ids = scrape.all('cdn_recording_info', { account: 'demo' }).map((x) => x.labels.id!);
    expect(ids).toHaveLength(4);
    const parseErrors = () => scrape.value('cdn_exporter_parse_errors_total', { api: 'recorder-cloud' });
    const isList = (req: { method: string; path: string }) =>
      req.method === 'GET' && req.path === '/app/recorder-cloud/v1/demo/record';

    const shapes = [
      json({ settings: [] }),
      json('ok'),
      { status: 200, contentType: 'application/json', body: '[{"id":"a","records":[' },
    ];
    for (let i = 0; i < shapes.length; i++) {
      proxy.tamper = (req) => (isList(req) ? shapes[i] : undefined);
      scrape = await s.steps.step(INTERVAL, s.keys);
      expect(parseErrors(), `shape ${i}`).toBe(i + 1);
      expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(0);
      expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
      // A failed listing is not an empty one: the settings keep their series.
      expect(scrape.all('cdn_recording_info', { account: 'demo' }).map((x) => x.labels.id)).toEqual(ids);
    }
    await expectAgreesWithSim(s, scrape, 'demo', 'live/main', 'demo-token');

    // One setting without an id: counted and dropped, the others are used and the poll is a success.
    proxy.tamper = (req, up) => {
      if (!isList(req)) return undefined;
      const list = JSON.parse(up.body) as Record<string, unknown>[];
      return json(list.map((x, i) => (i === 0 ? { ...x, id: null } : x)));
    };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(parseErrors()).toBe(shapes.length + 1);
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
    expect(scrape.all('cdn_recording_info', { account: 'demo' })).toHaveLength(3);

    proxy.tamper = undefined;
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(scrape.all('cdn_recording_info', { account: 'demo' })).toHaveLength(4);
    expect(parseErrors()).toBe(shapes.length + 1);
  });

  it("the simulator's malformed fault on every API: counted per API, never a crash, all recover", async () => {
    const s = await setup();
    let scrape = await s.steps.settled(s.keys);
    s.stack.sim.setFaults({ malformed: 1 });
    scrape = await s.steps.step(INTERVAL, s.keys);
    // Three streams and one listing were cut in half.
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'dvr-net' })).toBe(DEMO_STREAMS.length);
    expect(scrape.value('cdn_exporter_parse_errors_total', { api: 'recorder-cloud' })).toBe(1);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(0);
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(0);
    s.stack.sim.setFaults({});
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
    for (const stream of DEMO_STREAMS) await expectAgreesWithSim(s, scrape, 'demo', stream, 'demo-token');
  });
});

describe('answers that repeat an entry or answer another request', () => {
  it('dvr-net: a host listed twice is counted and its second entry dropped; another stream echoed is refused', async () => {
    const s = await setup({ proxy: true });
    const proxy = s.proxy!;
    let scrape = await s.steps.settled(s.keys);
    const parseErrors = () => scrape.value('cdn_exporter_parse_errors_total', { api: 'dvr-net' });
    expect(parseErrors()).toBe(0);
    const sport = { account: 'demo', stream: 'sport/4k', host: DVR2 };
    const recorded = scrape.value('cdn_dvr_recorded_seconds', sport)!;
    const isSport = (req: { method: string; path: string }) =>
      req.method === 'GET' && req.path.endsWith('/streams/sport/4k');

    // The second entry for DVR2 says the host is dead: dropped, counted, the first one stands.
    proxy.tamper = (req, up) => {
      if (!isSport(req)) return undefined;
      const body = JSON.parse(up.body) as { data: Record<string, unknown>[] };
      const first = body.data.find((e) => e.host === DVR2)!;
      body.data.push({ ...first, is_alive: false });
      return json(body);
    };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(parseErrors()).toBe(1);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_dvr_stream_alive', sport)).toBe(1);
    expect(scrape.value('cdn_dvr_recorded_seconds', sport)).toBeGreaterThanOrEqual(recorded);
    await expectAgreesWithSim(s, scrape, 'demo', 'sport/4k', 'demo-token');

    // An answer that echoes another stream is not this stream's: refused, counted, last values kept. Like any
    // stream whose answer cannot be read, that stream is down (cdn_dvr_stream_up 0) while the API, which answers
    // for the other streams, stays up (cdn_up 1).
    proxy.tamper = (req, up) => {
      if (!isSport(req)) return undefined;
      const body = JSON.parse(up.body) as { stream_name: string };
      return json({ ...body, stream_name: 'live/main' });
    };
    const kept = scrape.value('cdn_dvr_recorded_seconds', sport);
    const sportStream = { account: 'demo', stream: 'sport/4k' };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(parseErrors()).toBe(2);
    expect(scrape.value('cdn_dvr_stream_up', sportStream)).toBe(0);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_dvr_recorded_seconds', sport)).toBe(kept);

    proxy.tamper = undefined;
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(scrape.value('cdn_dvr_stream_up', sportStream)).toBe(1);
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(parseErrors()).toBe(2);
  });

  it('recorder-cloud: an id listed twice, or a setting of another account, is counted and dropped', async () => {
    const s = await setup({ proxy: true });
    const proxy = s.proxy!;
    let scrape = await s.steps.settled(s.keys);
    const parseErrors = () => scrape.value('cdn_exporter_parse_errors_total', { api: 'recorder-cloud' });
    expect(parseErrors()).toBe(0);
    const ids = scrape.all('cdn_recording_info', { account: 'demo' }).map((x) => x.labels.id!);
    expect(ids).toHaveLength(4);
    proxy.tamper = (req, up) => {
      if (req.method !== 'GET' || req.path !== '/app/recorder-cloud/v1/demo/record') return undefined;
      const list = JSON.parse(up.body) as Record<string, unknown>[];
      return json([
        ...list,
        { ...list[0]!, stream_type: 'short' },
        { ...list[1]!, id: 'other-1', account_name: 'acme' },
      ]);
    };
    scrape = await s.steps.step(INTERVAL, s.keys);
    expect(parseErrors()).toBe(2);
    expect(scrape.value('cdn_up', { api: 'recorder-cloud', account: 'demo' })).toBe(1);
    expect(
      scrape
        .all('cdn_recording_info', { account: 'demo' })
        .map((x) => x.labels.id)
        .sort(),
    ).toEqual([...ids].sort());
  });
});
