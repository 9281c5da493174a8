/**
 * The landing page's problem tables, end to end: what the simulator's DVR and recording APIs say is wrong is what
 * the page lists, row for row, and the rows follow the state as it changes (FakeClock shared by simulator and
 * exporter; each step is one poll interval).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { tableRows } from '../helpers/landing-html.js';
import { e2eWorld, type RoundKey, RoundStepper, simEntries } from '../helpers/poll-rounds.js';
import { type Stack, startStack } from '../helpers/stack.js';
import { startTamperProxy, type TamperProxy } from '../helpers/tamper-proxy.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const INTERVAL = 60_000;
const STREAMS = ['live/main', 'news/hd', 'sport/4k'];
const KEYS: RoundKey[] = [
  ['dvr-net', 'demo'],
  ['recorder-cloud', 'demo'],
];
/** The exporter lists a live host below this coverage (src/dvr/module.ts COVERAGE_PROBLEM). */
const COVERAGE_PROBLEM = 0.9;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Setup {
  stack: Stack;
  clock: FakeClock;
  steps: RoundStepper;
  proxy?: TamperProxy;
}

async function setup(o: { proxy?: boolean } = {}): Promise<Setup> {
  const clock = new FakeClock(T0);
  const sim = await startSimulator({ seed: 7, clock, slowMs: 300, accounts: e2eWorld() });
  cleanups.push(() => sim.close());
  let proxy: TamperProxy | undefined;
  if (o.proxy) {
    proxy = await startTamperProxy(sim.url);
    cleanups.push(() => proxy!.close());
  }
  const stack = await startStack({
    clock,
    simulator: sim,
    config: {
      // Many polls go by in little real time: the token's request ceiling must not be what paces the test.
      api: { base_url: proxy?.url ?? sim.url, requests_per_second: 1000 },
      metrics: { lookback: '10m', delay: '0m' },
      accounts: [{ name: 'demo', dvr_streams: STREAMS, recordings: true }],
    },
  });
  const steps = new RoundStepper(stack, clock);
  cleanups.push(() => stack.stop());
  return { stack, clock, steps, proxy };
}

async function page(s: Setup): Promise<string> {
  const res = await fetch(`${s.stack.url}/`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).not.toContain('demo-token');
  return html;
}

/** The DVR rows the page must show now, from the simulator's own answers, in configured stream order. */
async function expectedDvrRows(s: Setup): Promise<string[][]> {
  const rows: string[][] = [];
  for (const stream of STREAMS) {
    for (const e of await simEntries(s.stack.sim.url, 'demo', stream, 'demo-token')) {
      const recorded = e.dvr.ranges.reduce((n, r) => n + r.duration, 0);
      const coverage = recorded / e.dvr.window;
      if (!e.is_alive) rows.push(['demo', stream, e.host, 'not alive']);
      else if (coverage < COVERAGE_PROBLEM)
        rows.push(['demo', stream, e.host, `coverage ${Math.round(coverage * 100)}%`]);
    }
  }
  return rows;
}

/** The recording rows the page must show now: every setting the simulator lists in `error`. */
async function expectedRecordingRows(s: Setup): Promise<string[][]> {
  const res = await fetch(`${s.stack.sim.url}/app/recorder-cloud/v1/demo/record?extra_fields=status`, {
    headers: { 'CDN-AUTH-TOKEN': 'demo-token' },
  });
  const list = (await res.json()) as {
    id: string;
    status: string;
    source_domain: string;
    source_path: string;
    resource_id?: number | string;
  }[];
  // Named as a person knows it: source (domain and path) and resource; the id last.
  return list
    .filter((x) => x.status === 'error')
    .map((x) => [
      'demo',
      `${x.source_domain}${x.source_path}`,
      x.resource_id === undefined ? '-' : String(x.resource_id),
      'error',
      'recording in error',
      x.id,
    ]);
}

async function recordingIds(s: Setup): Promise<Record<string, string>> {
  const res = await fetch(`${s.stack.sim.url}/app/recorder-cloud/v1/demo/record?extra_fields=status`, {
    headers: { 'CDN-AUTH-TOKEN': 'demo-token' },
  });
  const list = (await res.json()) as { id: string; status: string }[];
  return Object.fromEntries(list.map((x) => [x.status, x.id]));
}

describe('landing page problem rows', () => {
  it('lists exactly the DVR hosts that are down or poorly covered and the recordings in error', async () => {
    const s = await setup();
    await s.steps.settled(KEYS);
    let html = await page(s);
    const dvr = await expectedDvrRows(s);
    // The seeded world has a dead stream, so the table is not trivially empty.
    expect(dvr).toContainEqual(['demo', 'news/hd', 'dvr-1.demo.example', 'not alive']);
    expect(tableRows(html, 'dvr problems')).toEqual(dvr);
    const recordings = await expectedRecordingRows(s);
    expect(recordings).toHaveLength(1);
    expect(recordings[0]![1]).toMatch(/^[a-z0-9.-]+\/\S+/);
    expect(tableRows(html, 'recording problems')).toEqual(recordings);

    // An hour later every live host's window is full: only the dead stream is left.
    for (let i = 0; i < 60; i++) await s.steps.step(INTERVAL, KEYS);
    html = await page(s);
    expect(tableRows(html, 'dvr problems')).toEqual(await expectedDvrRows(s));
    expect(tableRows(html, 'dvr problems').map((r) => r[1])).not.toContain('live/main');
  });

  it('a stream set not alive is listed on each host, and leaves the list when it is back', async () => {
    const s = await setup();
    for (let i = 0; i <= 60; i++) await (i === 0 ? s.steps.settled(KEYS) : s.steps.step(INTERVAL, KEYS));
    const liveRows = (html: string) => tableRows(html, 'dvr problems').filter((r) => r[1] === 'live/main');
    expect(liveRows(await page(s))).toEqual([]);

    s.stack.sim.dvr.setAlive('demo', 'live/main', false);
    await s.steps.step(INTERVAL, KEYS);
    expect(liveRows(await page(s))).toEqual([
      ['demo', 'live/main', 'dvr-1.demo.example', 'not alive'],
      ['demo', 'live/main', 'dvr-2.demo.example', 'not alive'],
    ]);

    s.stack.sim.dvr.setAlive('demo', 'live/main', true);
    await s.steps.step(INTERVAL, KEYS);
    // Back alive after two minutes off: still covered above 90 %, so no row.
    const html = await page(s);
    expect(liveRows(html)).toEqual([]);
    expect(tableRows(html, 'dvr problems')).toEqual(await expectedDvrRows(s));
  });

  it('a stream whose poll fails keeps its row (a failed poll is not a recovery)', async () => {
    const s = await setup({ proxy: true });
    await s.steps.settled(KEYS);
    const before = tableRows(await page(s), 'dvr problems');
    expect(before).toContainEqual(['demo', 'news/hd', 'dvr-1.demo.example', 'not alive']);
    s.proxy!.tamper = (req) =>
      req.path.endsWith('/streams/news/hd')
        ? {
            status: 503,
            contentType: 'application/json',
            body: '{"status":"Unavailable","description":"try later"}',
          }
        : undefined;
    const scrape = await s.steps.step(INTERVAL, KEYS);
    // The API answers the other streams; the one that fails is named by its own series.
    expect(scrape.value('cdn_up', { api: 'dvr-net', account: 'demo' })).toBe(1);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'demo', stream: 'news/hd' })).toBe(0);
    const html = await page(s);
    expect(tableRows(html, 'dvr problems')).toContainEqual([
      'demo',
      'news/hd',
      'dvr-1.demo.example',
      'not alive',
    ]);
    expect(tableRows(html, 'dvr problems')).toContainEqual([
      'demo',
      'news/hd',
      '-',
      'poll failed: 503: try later',
    ]);
    // The account row says why, and is not shown as up while a stream fails.
    const account = tableRows(html, 'accounts').find((r) => r[0] === 'demo' && r[1] === 'dvr-net')!;
    expect(account[2]).toBe('failing');
    expect(account[7]).toContain('1× since the last success');
    expect(account[7]).toContain('news/hd: 503: try later');
  });

  it('a recording that goes into error is listed with its id, and leaves when it records again', async () => {
    const s = await setup();
    await s.steps.settled(KEYS);
    const ids = await recordingIds(s);
    let rows = tableRows(await page(s), 'recording problems');
    expect(rows.map((r) => r.at(-1))).toEqual([ids.error!]);
    expect(rows).toEqual(await expectedRecordingRows(s));

    s.stack.sim.recorder.setStatus('demo', ids.wait!, 'error');
    s.stack.sim.recorder.setStatus('demo', ids.error!, 'progress');
    await s.steps.step(INTERVAL, KEYS);
    rows = tableRows(await page(s), 'recording problems');
    expect(rows.map((r) => r.at(-1))).toEqual([ids.wait!]);
    expect(rows).toEqual(await expectedRecordingRows(s));

    s.stack.sim.recorder.setStatus('demo', ids.wait!, 'finish');
    await s.steps.step(INTERVAL, KEYS);
    const html = await page(s);
    expect(tableRows(html, 'recording problems')).toEqual([]);
    expect(html).toContain('<h2>Recordings with problems</h2>\n<p class="none">None.</p>');
  });
});
