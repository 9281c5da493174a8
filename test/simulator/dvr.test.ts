import { afterEach, describe, expect, it } from 'vitest';
import { createDvrSim } from '../../src/simulator/dvr.js';
import type { SimContext } from '../../src/simulator/types.js';
import type { FakeClock } from '../helpers/fake-clock.js';
import { closeServed, OTHER_TOKEN, startApi, ACME_TOKEN as TOKEN, twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function context(clock: FakeClock, seed = 7): SimContext {
  return twoAccounts(clock, seed, {
    recordings: [],
    streams: [
      { name: 'live/main', hosts: ['h1', 'h2'], window: 3600 },
      { name: 'news/hd', hosts: ['h1'], window: 3600, breakEverySec: 300 },
      { name: 'off', hosts: ['h1'], window: 600, alive: false },
    ],
  });
}

interface Entry {
  stream_name: string;
  host: string;
  is_alive: boolean;
  dvr: {
    enabled: boolean;
    window: number;
    duration: number;
    from?: number;
    ranges: { from: number; duration: number }[];
  };
}

afterEach(closeServed);

const start = (seed = 7) => startApi('/app/dvr-net/v1', T0, (clock) => context(clock, seed), createDvrSim);

type Started = Awaited<ReturnType<typeof start>>;

function nowSec(clock: FakeClock): number {
  return Math.floor(clock.now() / 1000);
}

async function getStream(ctx: Started, stream = 'live/main', token = TOKEN) {
  const res = await fetch(`${ctx.base}/acme/streams/${stream}`, { headers: { 'CDN-AUTH-TOKEN': token } });
  return {
    status: res.status,
    body: (await res.json()) as { status: string; stream_name: string; data: Entry[] },
  };
}

/** Ranges of one host as [from, to) pairs. */
async function ranges(ctx: Started, host: string, stream = 'live/main'): Promise<[number, number][]> {
  const { body } = await getStream(ctx, stream);
  const entry = body.data.find((e) => e.host === host);
  if (!entry) throw new Error(`no host ${host}`);
  return entry.dvr.ranges.map((r) => [r.from, r.from + r.duration]);
}

async function del(ctx: Started, body: unknown, stream = 'live/main', token = TOKEN) {
  const res = await fetch(`${ctx.base}/acme/streams/${stream}`, {
    method: 'DELETE',
    headers: { 'CDN-AUTH-TOKEN': token, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('dvr-net simulator: reading', () => {
  it('answers one entry per host with consistent DVR fields, the newest range ending now', async () => {
    const ctx = await start();
    const { status, body } = await getStream(ctx);
    expect(status).toBe(200);
    expect(body.status).toBe('Completed');
    expect(body.stream_name).toBe('live/main');
    expect(body.data.map((e) => e.host).sort()).toEqual(['h1', 'h2']);
    for (const e of body.data) {
      expect(e.stream_name).toBe('live/main');
      expect(e.is_alive).toBe(true);
      expect(e.dvr.enabled).toBe(true);
      expect(e.dvr.window).toBe(3600);
      expect(e.dvr.ranges.length).toBe(1);
      const sum = e.dvr.ranges.reduce((s, r) => s + r.duration, 0);
      expect(e.dvr.duration).toBe(sum);
      expect(e.dvr.from).toBe(e.dvr.ranges[0]?.from);
      const last = e.dvr.ranges.at(-1)!;
      expect(last.from + last.duration).toBe(nowSec(ctx.clock));
      expect(last.from).toBeGreaterThanOrEqual(nowSec(ctx.clock) - 3600);
    }
  });

  it('accepts the stream name with a plain slash and URL-encoded as one segment; 404 envelope for an unknown one', async () => {
    const ctx = await start();
    const plain = await getStream(ctx, 'live/main');
    const encoded = await getStream(ctx, encodeURIComponent('live/main'));
    expect(encoded.status).toBe(200);
    expect(encoded.body).toEqual(plain.body);
    const missing = await getStream(ctx, 'live/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ status: 'NotFound' });
    expect(typeof (missing.body as unknown as { description: unknown }).description).toBe('string');
  });

  it('grows the newest range while alive, stops when not alive, starts a new range when back', async () => {
    const ctx = await start();
    const before = await ranges(ctx, 'h1');
    await ctx.clock.advance(120_000);
    const grown = await ranges(ctx, 'h1');
    expect(grown.at(-1)).toEqual([before.at(-1)![0], before.at(-1)![1] + 120]);

    ctx.sim.setAlive('acme', 'live/main', false);
    const diedAt = nowSec(ctx.clock);
    await ctx.clock.advance(300_000);
    const { body } = await getStream(ctx);
    expect(body.data.every((e) => !e.is_alive)).toBe(true);
    expect((await ranges(ctx, 'h1')).at(-1)![1]).toBe(diedAt);

    ctx.sim.setAlive('acme', 'live/main', true);
    const backAt = nowSec(ctx.clock);
    await ctx.clock.advance(60_000);
    const after = await ranges(ctx, 'h1');
    expect(after.slice(-2)).toEqual([
      [grown.at(-1)![0], diedAt],
      [backAt, backAt + 60],
    ]);
  });

  it('drops what is older than the window: a dead stream ends up with no ranges', async () => {
    const ctx = await start();
    const { body } = await getStream(ctx, 'off');
    const entry = body.data[0]!;
    expect(entry.is_alive).toBe(false);
    expect(entry.dvr.ranges.length).toBeGreaterThan(0);
    expect(entry.dvr.ranges.at(-1)!.from + entry.dvr.ranges.at(-1)!.duration).toBeLessThan(nowSec(ctx.clock));
    await ctx.clock.advance(601_000);
    const later = (await getStream(ctx, 'off')).body.data[0]!;
    expect(later.dvr.ranges).toEqual([]);
    expect(later.dvr.duration).toBe(0);
    expect(later.dvr.from).toBeUndefined();
  });

  it('keeps only [now - window, now] of a live stream', async () => {
    const ctx = await start();
    await ctx.clock.advance(2 * 3600_000);
    const r = await ranges(ctx, 'h1');
    expect(r).toEqual([[nowSec(ctx.clock) - 3600, nowSec(ctx.clock)]]);
  });

  it('breaks a stream with breakEverySec into ranges with short pauses, the same for the same seed', async () => {
    const ctx = await start(7);
    await ctx.clock.advance(3600_000);
    const r = await ranges(ctx, 'h1', 'news/hd');
    // One hour with a break every 300 s: 12 breaks, so 12 or 13 ranges in the window.
    expect(r.length).toBeGreaterThanOrEqual(12);
    expect(r.length).toBeLessThanOrEqual(13);
    for (let i = 1; i < r.length; i++) {
      const gap = r[i]![0] - r[i - 1]![1];
      expect(gap).toBeGreaterThanOrEqual(3);
      expect(gap).toBeLessThanOrEqual(15);
      expect(r[i]![1] - r[i]![0]).toBeLessThanOrEqual(300);
    }
    expect(r.at(-1)![1]).toBeLessThanOrEqual(nowSec(ctx.clock));

    const again = await start(7);
    await again.clock.advance(3600_000);
    expect(await ranges(again, 'h1', 'news/hd')).toEqual(r);
  });
  it('gives the same ranges after one long jump in time as when read every few minutes', async () => {
    const jump = await start(3);
    await jump.clock.advance(3 * 3600_000);
    const once = await ranges(jump, 'h1', 'news/hd');
    const steps = await start(3);
    for (let i = 0; i < 36; i++) {
      await steps.clock.advance(300_000);
      await ranges(steps, 'h1', 'news/hd');
    }
    expect(once.length).toBeGreaterThanOrEqual(12);
    expect(once[0]![0]).toBeGreaterThanOrEqual(nowSec(jump.clock) - 3600);
    expect(await ranges(steps, 'h1', 'news/hd')).toEqual(once);
  });
});

describe('dvr-net simulator: DELETE', () => {
  it('cuts a slice in the middle of a range, exactly to the second', async () => {
    const ctx = await start();
    const [[from, to]] = (await ranges(ctx, 'h1')) as [[number, number]];
    const res = await del(ctx, { host: 'h1', from_ts: from + 100, duration_sec: 50 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'Completed',
      stream_name: 'live/main',
      host: 'h1',
      from_ts: from + 100,
      duration_sec: 50,
    });
    expect(await ranges(ctx, 'h1')).toEqual([
      [from, from + 100],
      [from + 150, to],
    ]);
  });

  it('trims the left edge with a border before any range', async () => {
    const ctx = await start();
    const [[from, to]] = (await ranges(ctx, 'h1')) as [[number, number]];
    const res = await del(ctx, { host: 'h1', from_ts: from - 1000, to_ts: from + 30 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'Completed',
      stream_name: 'live/main',
      host: 'h1',
      from_ts: from - 1000,
      to_ts: from + 30,
    });
    expect(await ranges(ctx, 'h1')).toEqual([[from + 30, to]]);
  });

  it('trims the right edge of a closed range with a border after it', async () => {
    const ctx = await start();
    const [[from]] = (await ranges(ctx, 'h1')) as [[number, number]];
    ctx.sim.setAlive('acme', 'live/main', false);
    const end = nowSec(ctx.clock);
    await ctx.clock.advance(60_000);
    expect((await del(ctx, { host: 'h1', from_ts: end - 40, to_ts: end + 500 })).status).toBe(200);
    expect(await ranges(ctx, 'h1')).toEqual([[from, end - 40]]);
  });

  it('cuts across a gap: the end of one range and the start of the next', async () => {
    const ctx = await start();
    const [[from]] = (await ranges(ctx, 'h1')) as [[number, number]];
    ctx.sim.setAlive('acme', 'live/main', false);
    const died = nowSec(ctx.clock);
    await ctx.clock.advance(100_000);
    ctx.sim.setAlive('acme', 'live/main', true);
    const back = nowSec(ctx.clock);
    await ctx.clock.advance(200_000);
    const now = nowSec(ctx.clock);
    expect(await ranges(ctx, 'h1')).toEqual([
      [from, died],
      [back, now],
    ]);
    expect((await del(ctx, { host: 'h1', from_ts: died - 10, to_ts: back + 20 })).status).toBe(200);
    expect(await ranges(ctx, 'h1')).toEqual([
      [from, died - 10],
      [back + 20, now],
    ]);
  });

  it('treats to_ts and duration_sec alike', async () => {
    const ctx = await start();
    const [[from1, to1]] = (await ranges(ctx, 'h1')) as [[number, number]];
    const [[from2, to2]] = (await ranges(ctx, 'h2')) as [[number, number]];
    expect((await del(ctx, { host: 'h1', from_ts: from1 + 10, duration_sec: 20 })).status).toBe(200);
    expect((await del(ctx, { host: 'h2', from_ts: from2 + 10, to_ts: from2 + 30 })).status).toBe(200);
    expect(await ranges(ctx, 'h1')).toEqual([
      [from1, from1 + 10],
      [from1 + 30, to1],
    ]);
    expect(await ranges(ctx, 'h2')).toEqual([
      [from2, from2 + 10],
      [from2 + 30, to2],
    ]);
    // Both forms together must agree.
    const bad = await del(ctx, { host: 'h1', from_ts: from1, duration_sec: 5, to_ts: from1 + 6 });
    expect(bad.status).toBe(422);
  });

  it('deletes on one host only, or on all hosts with *', async () => {
    const ctx = await start();
    const beforeH2 = await ranges(ctx, 'h2');
    const now = nowSec(ctx.clock);
    await del(ctx, { host: 'h1', from_ts: now - 200, to_ts: now - 100 });
    expect(await ranges(ctx, 'h2')).toEqual(beforeH2);
    expect((await ranges(ctx, 'h1')).some(([a, b]) => a < now - 100 && b > now - 200)).toBe(false);

    await del(ctx, { host: '*', from_ts: now - 50, to_ts: now - 40 });
    for (const host of ['h1', 'h2']) {
      const r = await ranges(ctx, host);
      expect(r.some(([a, b]) => a < now - 40 && b > now - 50)).toBe(false);
      expect(r.at(-1)).toEqual([now - 40, now]);
    }
  });

  it('empties the ranges with all, which then accumulate again from now', async () => {
    const ctx = await start();
    const res = await del(ctx, { all: true, host: '*' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'Completed', stream_name: 'live/main', host: '*', all: true });
    const { body } = await getStream(ctx);
    for (const e of body.data) {
      expect(e.dvr.ranges).toEqual([]);
      expect(e.dvr.duration).toBe(0);
    }
    const at = nowSec(ctx.clock);
    await ctx.clock.advance(30_000);
    expect(await ranges(ctx, 'h1')).toEqual([[at, at + 30]]);
    expect(await ranges(ctx, 'h2')).toEqual([[at, at + 30]]);
  });

  it('answers 500 with failed_hosts on an injected node failure; the other hosts still apply it', async () => {
    const ctx = await start();
    const beforeH2 = await ranges(ctx, 'h2');
    ctx.sim.failDeletesOn(['h2']);
    const res = await del(ctx, { all: true, host: '*' });
    expect(res.status).toBe(500);
    expect(res.body.failed_hosts).toEqual(['h2']);
    expect(typeof res.body.status).toBe('string');
    expect(await ranges(ctx, 'h1')).toEqual([]);
    expect(await ranges(ctx, 'h2')).toEqual(beforeH2);
    // One-shot: the retry succeeds.
    expect((await del(ctx, { all: true, host: 'h2' })).status).toBe(200);
    expect(await ranges(ctx, 'h2')).toEqual([]);
  });

  it('refuses missing or malformed parameters with a 422 envelope', async () => {
    const ctx = await start();
    const now = nowSec(ctx.clock);
    const bodies: unknown[] = [
      { from_ts: now - 10, to_ts: now },
      { host: 'h1', to_ts: now },
      { host: 'h1', from_ts: now - 10 },
      { host: 'h1', from_ts: 'yesterday', duration_sec: 5 },
      { host: 'h1', from_ts: now - 10, duration_sec: -5 },
      { host: 'h1', from_ts: now, to_ts: now - 10 },
      { host: 'h9', from_ts: now - 10, to_ts: now },
      { all: 'yes', host: 'h1' },
      { all: true },
      [1, 2],
    ];
    for (const body of bodies) {
      const res = await del(ctx, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.status).toBe('UnprocessableEntity');
      expect(typeof res.body.description).toBe('string');
    }
  });
});

describe('dvr-net simulator: auth', () => {
  it('answers the error envelope for a missing, unknown or not entitled token, never echoing it', async () => {
    const ctx = await start();
    const none = await fetch(`${ctx.base}/acme/streams/live/main`);
    expect(none.status).toBe(403);
    expect(await none.json()).toEqual({ status: 'Forbidden', description: 'Invalid token' });

    const wrong = await getStream(ctx, 'live/main', 'not-a-token');
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ status: 'Forbidden', description: 'Invalid token' });

    const other = await getStream(ctx, 'live/main', OTHER_TOKEN);
    expect(other.status).toBe(403);
    expect(other.body).toEqual({ status: 'Forbidden', description: 'Access denied' });
    expect(JSON.stringify(other.body)).not.toContain(OTHER_TOKEN);

    const deleting = await del(ctx, { all: true, host: '*' }, 'live/main', OTHER_TOKEN);
    expect(deleting.status).toBe(403);
    expect((await ranges(ctx, 'h1')).length).toBe(1);
  });
});
