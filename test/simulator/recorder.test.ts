import { afterEach, describe, expect, it } from 'vitest';
import { createRecorderSim } from '../../src/simulator/recorder.js';
import type { SimContext } from '../../src/simulator/types.js';
import type { FakeClock } from '../helpers/fake-clock.js';
import { closeServed, OTHER_TOKEN, startApi, ACME_TOKEN as TOKEN, twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const DATETIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

function context(clock: FakeClock, seed = 11): SimContext {
  return twoAccounts(clock, seed, {
    streams: [],
    recordings: [
      {
        streamName: 'live/main',
        source: 'https://src.example/live/main.m3u8',
        streamType: 'short',
        launchType: 'button',
        resourceId: 'r1',
      },
      {
        streamName: 'news',
        source: 'https://src.example/news.m3u8',
        streamType: 'long',
        launchType: 'stream_start',
      },
      {
        streamName: 'archive',
        source: 'https://src.example/archive.m3u8',
        streamType: 'long',
        launchType: 'button',
        status: 'finish',
      },
    ],
  });
}

afterEach(closeServed);

const start = (seed = 11) =>
  startApi('/app/recorder-cloud/v1', T0, (clock) => context(clock, seed), createRecorderSim);

type Started = Awaited<ReturnType<typeof start>>;
type Setting = Record<string, unknown> & { id: string; records: Record<string, unknown>[] };

async function call(
  ctx: Started,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = TOKEN,
) {
  const headers: Record<string, string> = {};
  if (token !== null) headers['cdn-auth-token'] = token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${ctx.base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const raw = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', raw };
}

async function json<T>(
  ctx: Started,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await call(ctx, method, path, body);
  return { status: res.status, body: JSON.parse(res.raw) as T };
}

async function create(ctx: Started, body: Record<string, unknown>): Promise<string> {
  const res = await json<{ id: string }>(ctx, 'PUT', '/acme/record', body);
  expect(res.status).toBe(201);
  expect(typeof res.body.id).toBe('string');
  return res.body.id;
}

async function one(ctx: Started, id: string, query = '?extra_fields=status'): Promise<Setting> {
  const res = await json<Setting[]>(ctx, 'GET', `/acme/record/${id}${query}`);
  expect(res.status).toBe(200);
  expect(res.body.length).toBe(1);
  return res.body[0]!;
}

async function patch(ctx: Started, id: string, body: Record<string, unknown>) {
  return call(ctx, 'PATCH', `/acme/record/${id}`, body);
}

const MINIMAL = {
  stream_name: 'cam/1',
  stream_type: 'long',
  source: 'https://origin.example/cam/1/playlist.m3u8',
  launch_type: 'button',
};

function iso(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

describe('recorder-cloud simulator: create', () => {
  it('applies the documented defaults and derives the source domain and path', async () => {
    const ctx = await start();
    const id = await create(ctx, { ...MINIMAL, resource_id: 'r9' });
    const s = await one(ctx, id);
    expect(s).toEqual({
      id,
      resource_id: 'r9',
      account_name: 'acme',
      source_domain: 'origin.example',
      source_path: '/cam/1/playlist.m3u8',
      stream_type: 'long',
      launch_type: 'button',
      stop_timeout: 1800,
      storage_time: -1,
      dvr_enabled: false,
      dvr_window: 43200,
      smil: false,
      qualities: null,
      records: [],
      path: '/records/{now}.m3u8',
      status: 'wait',
    });
    const list = await json<Setting[]>(ctx, 'GET', '/acme/record');
    expect(list.body.map((x) => x.id)).toContain(id);
  });

  it('keeps given values instead of the defaults', async () => {
    const ctx = await start();
    const given = {
      ...MINIMAL,
      path: '/vod/cam1-{now}.m3u8',
      stop_timeout: 60,
      storage_time: 30,
      dvr_enabled: true,
      dvr_window: 600,
      smil: true,
      qualities: { 'https://origin.example/cam/1/720.m3u8': '720p' },
    };
    const s = await one(ctx, await create(ctx, given));
    expect(s).toMatchObject({
      path: given.path,
      stop_timeout: 60,
      storage_time: 30,
      dvr_enabled: true,
      dvr_window: 600,
      smil: true,
      qualities: given.qualities,
    });
  });

  it('answers 409 without a body for a second active setting of the same source, and allows it after deactivate', async () => {
    const ctx = await start();
    const id = await create(ctx, MINIMAL);
    const dup = await call(ctx, 'PUT', '/acme/record', { ...MINIMAL, stream_name: 'other name' });
    expect(dup.status).toBe(409);
    expect(dup.raw).toBe('');

    expect((await patch(ctx, id, { action: 'deactivate' })).status).toBe(200);
    const list = await json<Setting[]>(ctx, 'GET', '/acme/record?all');
    expect(list.body.map((x) => x.id)).not.toContain(id);
    expect((await call(ctx, 'GET', `/acme/record/${id}`)).status).toBe(404);
    expect((await patch(ctx, id, { action: 'start' })).status).toBe(400);

    const again = await create(ctx, MINIMAL);
    expect(again).not.toBe(id);
  });

  it('refuses bad values with 422 and an errors object naming each field', async () => {
    const ctx = await start();
    const cases: [Record<string, unknown>, string[]][] = [
      [{ ...MINIMAL, launch_type: 'schedule' }, ['launch_type']],
      [{ ...MINIMAL, stream_type: 'medium' }, ['stream_type']],
      [{ ...MINIMAL, launch_type: 'whenever' }, ['launch_type']],
      [
        { ...MINIMAL, stop_timeout: '1800', dvr_enabled: 'yes', storage_time: 0 },
        ['dvr_enabled', 'stop_timeout', 'storage_time'],
      ],
      [{ ...MINIMAL, source: 'not a url' }, ['source']],
      [{ ...MINIMAL, qualities: { a: 1 }, schedule: 'daily' }, ['qualities', 'schedule']],
      [{ stream_type: 'short' }, ['launch_type', 'source', 'stream_name']],
    ];
    for (const [body, fields] of cases) {
      const res = await json<{ errors: Record<string, string[]> }>(ctx, 'PUT', '/acme/record', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.errors).sort()).toEqual(fields);
      for (const messages of Object.values(res.body.errors)) {
        expect(messages.length).toBeGreaterThan(0);
        expect(messages.every((m) => typeof m === 'string')).toBe(true);
      }
    }
    const list = await json<Setting[]>(ctx, 'GET', '/acme/record');
    expect(list.body.length).toBe(3);
  });

  it('accepts launch_type schedule with stream_type short; its path is null until a first instance', async () => {
    const ctx = await start();
    const id = await create(ctx, {
      ...MINIMAL,
      stream_type: 'short',
      launch_type: 'schedule',
      schedule: [{}],
    });
    expect((await one(ctx, id)).path).toBeNull();
  });
});

describe('recorder-cloud simulator: actions', () => {
  it('start, stop and restart move the status and append instances', async () => {
    const ctx = await start();
    const id = await create(ctx, { ...MINIMAL, path: '/rec/{now}.m3u8' });
    const t1 = ctx.clock.now();
    expect((await patch(ctx, id, { action: 'start' })).status).toBe(200);
    let s = await one(ctx, id);
    expect(s.status).toBe('progress');
    expect(s.records).toEqual([
      { start: iso(t1), stop: null, init_path: `/rec/${t1 / 1000}.m3u8`, status: 'progress' },
    ]);
    expect(s.records[0]!.start).toMatch(DATETIME);
    expect((await patch(ctx, id, { action: 'start' })).status).toBe(422);

    await ctx.clock.advance(600_000);
    expect((await patch(ctx, id, { action: 'stop' })).status).toBe(200);
    s = await one(ctx, id);
    expect(s.status).toBe('finish');
    expect(s.records).toEqual([
      { start: iso(t1), stop: iso(t1 + 600_000), init_path: `/rec/${t1 / 1000}.m3u8`, status: 'finish' },
    ]);
    expect((await patch(ctx, id, { action: 'stop' })).status).toBe(422);

    await ctx.clock.advance(60_000);
    const t2 = ctx.clock.now();
    expect((await patch(ctx, id, { action: 'restart' })).status).toBe(200);
    await ctx.clock.advance(60_000);
    const t3 = ctx.clock.now();
    expect((await patch(ctx, id, { action: 'restart' })).status).toBe(200);
    s = await one(ctx, id, '?extra_fields=status&all');
    expect(s.status).toBe('progress');
    expect(s.records.map((r) => [r.start, r.stop, r.status])).toEqual([
      [iso(t1), iso(t1 + 600_000), 'finish'],
      [iso(t2), iso(t3), 'finish'],
      [iso(t3), null, 'progress'],
    ]);
    // Without ?all only the current instance is shown.
    expect((await one(ctx, id)).records.map((r) => r.start)).toEqual([iso(t3)]);

    expect((await patch(ctx, id, { action: 'deactivate' })).status).toBe(200);
    expect((await call(ctx, 'GET', `/acme/record/${id}`)).status).toBe(404);
  });

  it('refuses change during an active recording except for dvr_enabled', async () => {
    const ctx = await start();
    const id = await create(ctx, MINIMAL);
    expect((await patch(ctx, id, { action: 'start' })).status).toBe(200);

    const refused = await patch(ctx, id, { action: 'change', storage_time: 7, dvr_enabled: true });
    expect(refused.status).toBe(422);
    expect(Object.keys((JSON.parse(refused.raw) as { errors: object }).errors)).toEqual(['storage_time']);
    expect((await one(ctx, id)).storage_time).toBe(-1);
    expect((await one(ctx, id)).dvr_enabled).toBe(false);

    // `change` is the default action.
    expect((await patch(ctx, id, { dvr_enabled: true })).status).toBe(200);
    expect((await one(ctx, id)).dvr_enabled).toBe(true);

    expect((await patch(ctx, id, { action: 'stop' })).status).toBe(200);
    const changed = await patch(ctx, id, { storage_time: 7, stream_type: 'short', launch_type: 'schedule' });
    expect(changed.status).toBe(200);
    expect(await one(ctx, id)).toMatchObject({
      storage_time: 7,
      stream_type: 'short',
      launch_type: 'schedule',
    });
    // The schedule rule holds for the result of a change.
    expect((await patch(ctx, id, { stream_type: 'long' })).status).toBe(422);
    expect((await patch(ctx, id, { action: 'launch' })).status).toBe(422);
  });

  it('launches a stream_start setting by itself a few seconds after creation', async () => {
    const ctx = await start();
    const created = ctx.clock.now();
    const id = await create(ctx, { ...MINIMAL, launch_type: 'stream_start' });
    expect((await one(ctx, id)).status).toBe('wait');
    await ctx.clock.advance(60_000);
    const s = await one(ctx, id);
    expect(s.status).toBe('progress');
    const startedAt = Date.parse(String(s.records[0]!.start));
    expect(startedAt).toBeGreaterThan(created);
    expect(startedAt).toBeLessThanOrEqual(created + 30_000);
  });

  it('setStatus forces error and ends the running instance', async () => {
    const ctx = await start();
    const id = await create(ctx, MINIMAL);
    await patch(ctx, id, { action: 'start' });
    await ctx.clock.advance(5_000);
    ctx.sim.setStatus('acme', id, 'error');
    const s = await one(ctx, id);
    expect(s.status).toBe('error');
    expect(s.records[0]).toMatchObject({ stop: iso(ctx.clock.now()), status: 'error' });
  });

  it('answers 400 without a body for an unknown id', async () => {
    const ctx = await start();
    const res = await patch(ctx, 'ffffffffffffffffffffffff', { action: 'start' });
    expect(res.status).toBe(400);
    expect(res.raw).toBe('');
  });
});

describe('recorder-cloud simulator: reading', () => {
  it('shows status on the setting and its instances only with extra_fields=status', async () => {
    const ctx = await start();
    const plain = await json<Setting[]>(ctx, 'GET', '/acme/record?all');
    expect(plain.body.length).toBe(3);
    for (const s of plain.body) {
      expect(s).not.toHaveProperty('status');
      for (const r of s.records) expect(r).not.toHaveProperty('status');
    }
    const withStatus = await json<Setting[]>(ctx, 'GET', '/acme/record?all&extra_fields=status');
    const finished = withStatus.body.find((s) => s.source_path === '/archive.m3u8')!;
    expect(finished.status).toBe('finish');
    expect(finished.records.length).toBe(1);
    expect(finished.records[0]).toMatchObject({ status: 'finish' });
    expect(finished.records[0]!.stop).toMatch(DATETIME);
    for (const s of withStatus.body) expect(['wait', 'progress', 'finish', 'error']).toContain(s.status);
  });

  it('seeds settings with ids stable for the seed, filters by resource_id, launches seeded stream_start ones', async () => {
    const a = await start(11);
    const b = await start(11);
    const ids = (await json<Setting[]>(a, 'GET', '/acme/record')).body.map((s) => s.id);
    expect(ids.length).toBe(3);
    expect(new Set(ids).size).toBe(3);
    expect((await json<Setting[]>(b, 'GET', '/acme/record')).body.map((s) => s.id)).toEqual(ids);

    const filtered = await json<Setting[]>(a, 'GET', '/acme/record?resource_id=r1');
    expect(filtered.body.map((s) => s.resource_id)).toEqual(['r1']);

    await a.clock.advance(60_000);
    const news = (await json<Setting[]>(a, 'GET', '/acme/record?extra_fields=status')).body.find(
      (s) => s.source_path === '/news.m3u8',
    )!;
    expect(news.status).toBe('progress');
    expect(news.records.length).toBe(1);
  });
});

describe('recorder-cloud simulator: auth and paths', () => {
  it('answers 401 and 403 in text/plain, matching the header name in any case', async () => {
    const ctx = await start();
    const missing = await call(ctx, 'GET', '/acme/record', undefined, null);
    expect([missing.status, missing.raw]).toEqual([401, 'Invalid token']);
    expect(missing.type).toMatch(/^text\/plain/);

    const unknown = await call(ctx, 'GET', '/acme/record', undefined, 'nope');
    expect([unknown.status, unknown.raw]).toEqual([401, 'Invalid token']);

    const wrong = await call(ctx, 'PUT', '/acme/record', MINIMAL, OTHER_TOKEN);
    expect([wrong.status, wrong.raw]).toEqual([403, 'Invalid account']);
    expect(wrong.type).toMatch(/^text\/plain/);
    expect((await json<Setting[]>(ctx, 'GET', '/acme/record')).body.length).toBe(3);

    const upper = await fetch(`${ctx.base}/acme/record`, { headers: { 'CDN-AUTH-TOKEN': TOKEN } });
    expect(upper.status).toBe(200);
    await upper.arrayBuffer();
  });

  it('answers 404 Not found for an unknown path and 405 for a wrong method, in text/plain', async () => {
    const ctx = await start();
    const notFound = await call(ctx, 'GET', '/acme/recordings');
    expect([notFound.status, notFound.raw]).toEqual([404, 'Not found']);
    expect(notFound.type).toMatch(/^text\/plain/);
    const method = await call(ctx, 'DELETE', '/acme/record');
    expect([method.status, method.raw]).toEqual([405, 'Method is not allowed']);
    expect(method.type).toMatch(/^text\/plain/);
    const methodOne = await call(ctx, 'POST', '/acme/record/abc');
    expect([methodOne.status, methodOne.raw]).toEqual([405, 'Method is not allowed']);
  });

  it('answers 400 Invalid path in text/plain for a malformed path, before the token, and changes nothing', async () => {
    const ctx = await start();
    const id = await create(ctx, MINIMAL);
    const malformed: [string, string, unknown][] = [
      ['GET', '/acme/record/%E0%A4%A', undefined],
      ['GET', `/acme/record/${id}%2Fx`, undefined],
      ['GET', '/acme//record', undefined],
      ['PATCH', `/acme/record/${id}%00`, { action: 'start' }],
      ['PATCH', '/acme/record//', { action: 'deactivate' }],
      ['PUT', '/ac%ZZme/record', { ...MINIMAL, source: 'https://origin.example/cam/2.m3u8' }],
    ];
    for (const [method, path, body] of malformed) {
      for (const token of [TOKEN, null]) {
        const res = await call(ctx, method, path, body, token);
        expect([res.status, res.raw], `${method} ${path} token ${token}`).toEqual([400, 'Invalid path']);
        expect(res.type).toMatch(/^text\/plain/);
      }
    }
    // Nothing was created, started or deactivated.
    expect((await json<Setting[]>(ctx, 'GET', '/acme/record')).body.length).toBe(4);
    expect(await one(ctx, id)).toMatchObject({ status: 'wait', records: [] });
    // A well-formed path is not an invalid one: unknown endpoint 404, unknown id 400 without a body, and one
    // trailing slash is the same URL.
    expect((await call(ctx, 'GET', '/acme/record/x/y')).status).toBe(404);
    const unknown = await patch(ctx, 'ffffffffffffffffffffffff', { action: 'start' });
    expect([unknown.status, unknown.raw]).toEqual([400, '']);
    const slash = await json<Setting[]>(ctx, 'GET', '/acme/record/');
    expect([slash.status, slash.body.length]).toEqual([200, 4]);
  });
});
