/**
 * The three API clients against the simulator over loopback: every endpoint, the documented error shapes, and
 * each injected fault kind mapped onto ApiError. The tokens are recognisable so that their absence from every
 * error can be checked.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SIZE_RANGES } from '../../src/api/vocabulary.js';
import { streamPath } from '../../src/dvr/client.js';
import type { ErrorKind } from '../../src/http/errors.js';
import { HttpClient } from '../../src/http/request.js';
import { effectiveStatus } from '../../src/recordings/response.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { demoWorld } from '../../src/simulator/world.js';
import { formatApiTime, MetricsClient } from '../../src/traffic/client.js';
import { apiFailure, expectNoSecret } from '../helpers/api-errors.js';
import { DvrTestClient, RecorderTestClient } from '../helpers/api-writes.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;
const DEMO_TOKEN = 'demo-SECRET-7b3e91';
const ACME_TOKEN = 'acme-SECRET-40dd2a';
const TOKENS = [DEMO_TOKEN, ACME_TOKEN];

/** The default world with recognisable tokens. */
function world() {
  return demoWorld().map((a) => ({ ...a, token: a.name === 'demo' ? DEMO_TOKEN : ACME_TOKEN }));
}

interface Ctx {
  sim: Simulator;
  clock: FakeClock;
  http: HttpClient;
  metrics: MetricsClient;
  dvr: DvrTestClient;
  recorder: RecorderTestClient;
  calls: [string, string][];
  setToken(t: string): void;
}

const open: { sim: Simulator; http: HttpClient }[] = [];

async function start(extra: Partial<Parameters<typeof startSimulator>[0]> = {}, headersTimeoutMs?: number) {
  const clock = new FakeClock(T0);
  const sim = await startSimulator(
    { seed: 42, clock, accounts: world(), ...extra },
    { host: '127.0.0.1', port: 0 },
  );
  let token = DEMO_TOKEN;
  const calls: [string, string][] = [];
  const http = new HttpClient({
    baseUrl: sim.url,
    token: () => token,
    clock,
    headersTimeoutMs,
    onRequest: (api, code) => calls.push([api, code]),
  });
  open.push({ sim, http });
  const ctx: Ctx = {
    sim,
    clock,
    http,
    metrics: new MetricsClient(http),
    dvr: new DvrTestClient(http),
    recorder: new RecorderTestClient(http),
    calls,
    setToken: (t) => {
      token = t;
    },
  };
  return ctx;
}

async function closeAll() {
  for (const { sim, http } of open.splice(0)) {
    await http.close();
    await sim.close();
  }
}

const lastLog = (sim: Simulator) => sim.requestLog[sim.requestLog.length - 1]!;

describe('metrics client', () => {
  let c: Ctx;
  beforeAll(async () => {
    c = await start();
  });
  afterAll(closeAll);
  afterEach(() => c.setToken(DEMO_TOKEN));

  const start5 = T0 - 10 * MIN;
  const end5 = T0 - 5 * MIN;

  it('formats times as YYYY-MM-DDThh:mm:00 UTC and refuses a time off the minute before sending', async () => {
    expect(formatApiTime(Date.UTC(2026, 2, 5, 7, 4))).toBe('2026-03-05T07:04:00');
    expect(formatApiTime(new Date(Date.UTC(999, 0, 1)))).toBe('0999-01-01T00:00:00');
    const before = c.sim.requestLog.length;
    await expect(
      c.metrics.fetchTraffic({ account: 'demo', start: start5 + 30_000, end: end5, breakdown: 'account' }),
    ).rejects.toThrow(/whole minutes/);
    expect(() => formatApiTime(Number.NaN)).toThrow(RangeError);
    expect(c.sim.requestLog.length).toBe(before);
  });

  it('/resources: one record per resource, equal to the simulator truth', async () => {
    const r = await c.metrics.fetchTraffic({
      account: 'demo',
      start: new Date(start5),
      end: end5,
      breakdown: 'resource',
    });
    const log = lastLog(c.sim);
    expect(log.path).toBe('/app/metrics/v1/resources');
    expect(log.query).toEqual({
      account: ['demo'],
      start: ['2026-01-01T11:50:00'],
      end: ['2026-01-01T11:55:00'],
    });
    expect(r.account).toBe('demo');
    expect([r.start, r.end]).toEqual([start5, end5]);
    expect(r.issues).toEqual([]);
    expect(r.unknownKeys).toEqual([]);
    const ids = c.sim.accounts.find((a) => a.name === 'demo')!.resources.map((x) => x.id);
    expect(r.records.map((x) => x.resource)).toEqual(ids);
    for (const rec of r.records) {
      const truth = c.sim.truth('demo', rec.resource, start5, end5);
      expect(rec.edge.requests).toBe(truth.edge.requests);
      expect(rec.edge.codes.get('200')).toBe(truth.edge.codes['200']);
      expect(rec.edge.classes.get('5xx')).toBe(truth.edge.classes['5xx']);
      expect(rec.origin.codes.get('504')).toBe(truth.origin.codes['504']);
      expect(rec.edge.hitBytes).toBe(truth.edge.hitBytes);
      expect(rec.edge.bandwidthBitsPerSecond).toBeCloseTo((truth.edge.bytes * 8) / 300, 6);
      expect([...rec.edge.requestTimeSeconds.keys()]).toEqual([...SIZE_RANGES]);
      expect(rec.resourceName).toBeTruthy();
      expect(rec.cname).toBeTruthy();
    }
  });

  it('/: one record for the account, without resource', async () => {
    const r = await c.metrics.fetchTraffic({
      account: 'demo',
      start: start5,
      end: end5,
      breakdown: 'account',
    });
    expect(lastLog(c.sim).path).toBe('/app/metrics/v1/');
    expect(r.records).toHaveLength(1);
    expect(r.records[0]!.resource).toBeUndefined();
    expect(r.records[0]!.edge.requests).toBe(c.sim.truth('demo', undefined, start5, end5).edge.requests);
  });

  it('sends repeated metric= parameters and resource= only when given', async () => {
    const r = await c.metrics.fetchTraffic({
      account: 'demo',
      start: start5,
      end: end5,
      metrics: ['edge_status_200', 'edge_requests_total'],
      resource: '1003',
      breakdown: 'resource',
    });
    expect(lastLog(c.sim).query).toMatchObject({
      metric: ['edge_status_200', 'edge_requests_total'],
      resource: ['1003'],
    });
    expect(r.metrics.sort()).toEqual(['edge_requests_total', 'edge_status_200']);
    expect(r.records.map((x) => x.resource)).toEqual(['1003']);
    expect(r.records[0]!.edge.codes.size).toBe(1);
    expect(r.records[0]!.origin.requests).toBeUndefined();
  });

  it('422 (period over 10 minutes) is invalid, not retryable, with the API description', async () => {
    const err = await apiFailure(
      c.metrics.fetchTraffic({
        account: 'demo',
        start: T0 - 20 * MIN,
        end: T0 - 5 * MIN,
        breakdown: 'account',
      }),
    );
    expect(err).toMatchObject({ api: 'metrics', kind: 'invalid', status: 422, retryable: false });
    expect(err.description).toMatch(/1 to 10 minutes/);
    expectNoSecret(err, TOKENS);
  });

  it('403 JSON for a bad token and for an account the token may not see is auth', async () => {
    c.setToken('wrong-SECRET-token');
    const bad = await apiFailure(
      c.metrics.fetchTraffic({ account: 'demo', start: start5, end: end5, breakdown: 'account' }),
    );
    expect(bad).toMatchObject({ kind: 'auth', status: 403, retryable: false, description: 'Invalid token' });
    expect(bad.message).not.toContain('wrong-SECRET-token');
    c.setToken(DEMO_TOKEN);
    const other = await apiFailure(
      c.metrics.fetchTraffic({ account: 'acme', start: start5, end: end5, breakdown: 'account' }),
    );
    expect(other).toMatchObject({ kind: 'auth', status: 403 });
    expect(other.description).toMatch(/acme/);
    expectNoSecret(other, TOKENS);
  });

  it('reads the flat and the plain-number request_time shapes', async () => {
    for (const shape of ['flat', 'number'] as const) {
      const s = await start({ requestTimeShape: shape });
      const r = await s.metrics.fetchTraffic({
        account: 'demo',
        start: start5,
        end: end5,
        breakdown: 'account',
      });
      const keys = [...r.records[0]!.edge.requestTimeSeconds.keys()];
      expect(keys).toEqual(shape === 'flat' ? [...SIZE_RANGES] : ['all']);
      expect(r.issues).toEqual([]);
      expect(r.unknownKeys).toEqual([]);
    }
  });
});

describe('dvr-net client', () => {
  let c: Ctx;
  beforeAll(async () => {
    c = await start();
    await c.clock.advance(30 * MIN);
  });
  afterAll(closeAll);
  afterEach(() => {
    c.setToken(DEMO_TOKEN);
    c.sim.dvr.failDeletesOn([]);
  });

  it('encodes each stream segment and keeps slashes as separators', () => {
    expect(streamPath('demo', 'live/main')).toBe('/app/dvr-net/v1/demo/streams/live/main');
    expect(streamPath('my acct', 'a b/c?d#e')).toBe('/app/dvr-net/v1/my%20acct/streams/a%20b/c%3Fd%23e');
  });

  it('getStream returns one entry per host with ranges', async () => {
    const r = await c.dvr.getStream('demo', 'live/main');
    expect(lastLog(c.sim).path).toBe('/app/dvr-net/v1/demo/streams/live/main');
    expect(r.streamName).toBe('live/main');
    expect(r.issues).toEqual([]);
    expect(r.entries.map((e) => e.host).sort()).toEqual(['dvr-1.demo.example', 'dvr-2.demo.example']);
    for (const e of r.entries) {
      expect(e.streamName).toBe('live/main');
      expect(e.alive).toBe(true);
      expect(e.dvr.enabled).toBe(true);
      expect(e.dvr.ranges.length).toBeGreaterThan(0);
    }
  });

  it('deleteRange with duration_sec and with to_ts, then deleteAll on every host', async () => {
    const before = await c.dvr.getStream('demo', 'sport/4k');
    const host = before.entries[0]!.host;
    const first = before.entries[0]!.dvr.ranges[0]!;
    const bySeconds = await c.dvr.deleteRange('demo', 'sport/4k', {
      host,
      fromTs: first.from,
      durationSec: 60,
    });
    expect(bySeconds).toMatchObject({
      status: 'Completed',
      streamName: 'sport/4k',
      echoed: { host, from_ts: first.from, duration_sec: 60 },
    });
    const byEnd = await c.dvr.deleteRange('demo', 'sport/4k', {
      host: '*',
      fromTs: first.from + 60,
      toTs: first.from + 120,
    });
    expect(byEnd.echoed).toEqual({ host: '*', from_ts: first.from + 60, to_ts: first.from + 120 });
    const sliced = await c.dvr.getStream('demo', 'sport/4k');
    const firstNow = sliced.entries.find((e) => e.host === host)!.dvr.ranges[0]!;
    expect(firstNow.from).toBeGreaterThanOrEqual(first.from + 120);

    const all = await c.dvr.deleteAll('demo', 'sport/4k', '*');
    expect(all).toMatchObject({ status: 'Completed', echoed: { host: '*', all: true } });
    const after = await c.dvr.getStream('demo', 'sport/4k');
    for (const e of after.entries) expect(e.dvr.ranges).toEqual([]);
  });

  it('500 with failed_hosts is a retryable server error carrying the hosts', async () => {
    c.sim.dvr.failDeletesOn(['dvr-2.demo.example']);
    const err = await apiFailure(c.dvr.deleteAll('demo', 'live/main', '*'));
    expect(err).toMatchObject({ api: 'dvr-net', kind: 'server', status: 500, retryable: true });
    expect(err.failedHosts).toEqual(['dvr-2.demo.example']);
    expect(err.message).toContain('dvr-2.demo.example');
    expectNoSecret(err, TOKENS);
  });

  it('the status/description envelope: 403 token, 404 stream, 422 body', async () => {
    c.setToken('nope-SECRET-token');
    const auth = await apiFailure(c.dvr.getStream('demo', 'live/main'));
    expect(auth).toMatchObject({ kind: 'auth', status: 403, description: 'Invalid token', retryable: false });
    c.setToken(DEMO_TOKEN);
    const missing = await apiFailure(c.dvr.getStream('demo', 'no/such'));
    expect(missing).toMatchObject({ kind: 'invalid', status: 404, description: 'Stream no/such not found' });
    const bad = await apiFailure(
      c.dvr.deleteRange('demo', 'live/main', { host: '*', fromTs: 100, toTs: 50 }),
    );
    expect(bad).toMatchObject({ kind: 'invalid', status: 422 });
    expect(bad.description).toMatch(/to_ts/);
    for (const e of [auth, missing, bad]) expectNoSecret(e, TOKENS);
  });
});

describe('recorder-cloud client', () => {
  let c: Ctx;
  beforeAll(async () => {
    c = await start();
  });
  afterAll(closeAll);
  afterEach(() => c.setToken(DEMO_TOKEN));

  it('listSettings: every setting, filters, ?all and extra_fields=status', async () => {
    const plain = await c.recorder.listSettings('demo');
    expect(lastLog(c.sim).query).toEqual({});
    expect(plain.issues).toEqual([]);
    expect(plain.unknownKeys).toEqual([]);
    expect(plain.settings).toHaveLength(4);
    expect(plain.settings.every((s) => s.status === undefined)).toBe(true);

    const full = await c.recorder.listSettings('demo', {
      resourceId: '1004',
      all: true,
      extraFields: ['status'],
    });
    expect(lastLog(c.sim).query).toEqual({ resource_id: ['1004'], all: [''], extra_fields: ['status'] });
    expect(full.settings).toHaveLength(3);
    expect(full.settings.every((s) => s.resourceId === '1004')).toBe(true);
    const statuses = full.settings.map((s) => effectiveStatus(s));
    expect(statuses).toEqual(['progress', 'wait', 'finish']);
  });

  it('create, get, duplicate 409, patch and 400 for an unknown id', async () => {
    const body = {
      streamName: 'client/test',
      streamType: 'short' as const,
      source: 'https://live.cdn.demo.example/client/test/playlist.m3u8',
      launchType: 'button' as const,
      dvrEnabled: true,
      storageTime: 7,
      qualities: { 'https://live.cdn.demo.example/client/test/720.m3u8': '720p' },
    };
    const { id } = await c.recorder.createSetting('demo', body);
    expect(id).toBeTruthy();

    const got = await c.recorder.getSetting('demo', id, { extraFields: ['status'] });
    expect(got.settings).toHaveLength(1);
    expect(got.settings[0]).toMatchObject({
      id,
      streamType: 'short',
      launchType: 'button',
      dvrEnabled: true,
      storageTime: 7,
      stopTimeout: 1800,
      dvrWindow: 43200,
      sourceDomain: 'live.cdn.demo.example',
      qualities: body.qualities,
      status: 'wait',
    });

    const dup = await apiFailure(c.recorder.createSetting('demo', body));
    expect(dup).toMatchObject({ api: 'recorder-cloud', kind: 'invalid', status: 409, retryable: false });

    await c.recorder.patchSetting('demo', id, { action: 'start' });
    const started = await c.recorder.getSetting('demo', id, { extraFields: ['status'], all: true });
    expect(effectiveStatus(started.settings[0]!)).toBe('progress');
    expect(started.settings[0]!.records.length).toBeGreaterThan(0);

    await c.recorder.patchSetting('demo', id, { dvrEnabled: false });
    const changed = await c.recorder.getSetting('demo', id);
    expect(changed.settings[0]!.dvrEnabled).toBe(false);

    const unknown = await apiFailure(c.recorder.patchSetting('demo', 'no-such-id', { action: 'stop' }));
    expect(unknown).toMatchObject({ kind: 'invalid', status: 400, retryable: false });
  });

  it('422 errors data becomes the description', async () => {
    const err = await apiFailure(
      c.recorder.createSetting('demo', {
        streamName: 'x',
        streamType: 'medium' as 'short',
        source: 'https://a.example/x.m3u8',
        launchType: 'button',
      }),
    );
    expect(err).toMatchObject({ kind: 'invalid', status: 422 });
    expect(err.description).toMatch(/stream_type/);
  });

  it('text/plain 401, 403 and 404 bodies become the description', async () => {
    c.setToken('bad-SECRET-token');
    const e401 = await apiFailure(c.recorder.listSettings('demo'));
    expect(e401).toMatchObject({ kind: 'auth', status: 401, description: 'Invalid token', retryable: false });
    expect(e401.message).not.toContain('bad-SECRET-token');
    c.setToken(DEMO_TOKEN);
    const e403 = await apiFailure(c.recorder.listSettings('acme'));
    expect(e403).toMatchObject({ kind: 'auth', status: 403, description: 'Invalid account' });
    const e404 = await apiFailure(c.recorder.getSetting('demo', 'missing'));
    expect(e404).toMatchObject({ kind: 'invalid', status: 404, description: 'Not found' });
    for (const e of [e401, e403, e404]) expectNoSecret(e, TOKENS);
  });

  it('each PATCH action shows its documented effect in the next getSetting and listSettings', async () => {
    const account = 'demo';
    const before = (await c.recorder.listSettings(account)).settings.map((x) => x.id);
    const { id } = await c.recorder.createSetting(account, {
      streamName: 'client/actions',
      streamType: 'long',
      source: 'https://live.cdn.demo.example/client/actions/playlist.m3u8',
      launchType: 'button',
      path: '/rec/{now}.m3u8',
    });
    const read = async () => {
      const r = await c.recorder.getSetting(account, id, { extraFields: ['status'], all: true });
      expect(r.issues).toEqual([]);
      expect(r.settings).toHaveLength(1);
      return r.settings[0]!;
    };
    const sec = (ms: number) => Math.floor(ms / 1000);
    expect(await read()).toMatchObject({ status: 'wait', records: [] });

    // start: wait -> progress, one open instance from now, its path from the template.
    const t1 = c.clock.now();
    await c.recorder.patchSetting(account, id, { action: 'start' });
    const started = await read();
    expect(started.status).toBe('progress');
    // A running instance has no stop yet.
    expect(started.records).toEqual([{ start: t1, initPath: `/rec/${sec(t1)}.m3u8`, status: 'progress' }]);
    const twice = await apiFailure(c.recorder.patchSetting(account, id, { action: 'start' }));
    expect(twice).toMatchObject({ api: 'recorder-cloud', kind: 'invalid', status: 422 });
    expect(twice.description).toMatch(/action/);

    // change during a recording: only dvr_enabled.
    const refused = await apiFailure(
      c.recorder.patchSetting(account, id, { action: 'change', storageTime: 7 }),
    );
    expect(refused).toMatchObject({ kind: 'invalid', status: 422 });
    expect(refused.description).toMatch(/storage_time/);
    await c.recorder.patchSetting(account, id, { action: 'change', dvrEnabled: true });
    expect(await read()).toMatchObject({ storageTime: -1, dvrEnabled: true, status: 'progress' });

    // stop: progress -> finish, the instance closes now.
    await c.clock.advance(10 * MIN);
    const t2 = c.clock.now();
    await c.recorder.patchSetting(account, id, { action: 'stop' });
    expect(await read()).toMatchObject({
      status: 'finish',
      records: [{ start: t1, stop: t2, status: 'finish' }],
    });
    const stopAgain = await apiFailure(c.recorder.patchSetting(account, id, { action: 'stop' }));
    expect(stopAgain).toMatchObject({ kind: 'invalid', status: 422 });

    // change (the default action) outside a recording: every documented field.
    await c.recorder.patchSetting(account, id, {
      streamType: 'short',
      launchType: 'schedule',
      storageTime: 30,
      path: '/vod/{now}.m3u8',
      dvrEnabled: false,
    });
    expect(await read()).toMatchObject({
      streamType: 'short',
      launchType: 'schedule',
      storageTime: 30,
      path: '/vod/{now}.m3u8',
      dvrEnabled: false,
      status: 'finish',
    });

    // restart (reset DVR): starts a recording when none runs; when one runs, closes it and opens a new one.
    await c.clock.advance(MIN);
    const t3 = c.clock.now();
    await c.recorder.patchSetting(account, id, { action: 'restart' });
    await c.clock.advance(MIN);
    const t4 = c.clock.now();
    await c.recorder.patchSetting(account, id, { action: 'restart' });
    const restarted = await read();
    expect(restarted.status).toBe('progress');
    expect(restarted.records.map((r) => [r.start, r.stop, r.status])).toEqual([
      [t1, t2, 'finish'],
      [t3, t4, 'finish'],
      [t4, undefined, 'progress'],
    ]);
    expect(restarted.records[2]!.initPath).toBe(`/vod/${sec(t4)}.m3u8`);
    // Without `all` only the current instance.
    expect((await c.recorder.getSetting(account, id)).settings[0]!.records.map((r) => r.start)).toEqual([t4]);

    // deactivate: gone from the active list, no longer addressable, its source free again.
    const listed = await c.recorder.listSettings(account, { all: true });
    expect(listed.settings.map((x) => x.id)).toEqual([...before, id]);
    await c.recorder.patchSetting(account, id, { action: 'deactivate' });
    const after = await c.recorder.listSettings(account, { all: true, extraFields: ['status'] });
    expect(after.settings.map((x) => x.id)).toEqual(before);
    const gone = await apiFailure(c.recorder.getSetting(account, id));
    expect(gone).toMatchObject({ kind: 'invalid', status: 404, description: 'Not found' });
    const patchGone = await apiFailure(c.recorder.patchSetting(account, id, { action: 'start' }));
    expect(patchGone).toMatchObject({ kind: 'invalid', status: 400, description: undefined });
    const again = await c.recorder.createSetting(account, {
      streamName: 'client/actions',
      streamType: 'long',
      source: 'https://live.cdn.demo.example/client/actions/playlist.m3u8',
      launchType: 'button',
    });
    expect(again.id).not.toBe(id);
    await c.recorder.patchSetting(account, again.id, { action: 'deactivate' });
  });

  it('400 Invalid path (text/plain) for an id that cannot be a path segment, before anything is done', async () => {
    const { id } = await c.recorder.createSetting('demo', {
      streamName: 'client/paths',
      streamType: 'long',
      source: 'https://live.cdn.demo.example/client/paths/playlist.m3u8',
      launchType: 'button',
    });
    const calls: [string, () => Promise<unknown>][] = [
      ['getSetting', () => c.recorder.getSetting('demo', `${id}/records`)],
      ['patchSetting start', () => c.recorder.patchSetting('demo', `${id}/x`, { action: 'start' })],
      [
        'patchSetting deactivate',
        () => c.recorder.patchSetting('demo', `${id}\u0000`, { action: 'deactivate' }),
      ],
    ];
    for (const [name, call] of calls) {
      const err = await apiFailure(call());
      expect(err, name).toMatchObject({
        api: 'recorder-cloud',
        kind: 'invalid',
        status: 400,
        description: 'Invalid path',
        retryable: false,
      });
      expect(lastLog(c.sim).status).toBe(400);
      expectNoSecret(err, TOKENS);
    }
    // The setting was neither started nor deactivated.
    const s = await c.recorder.getSetting('demo', id, { extraFields: ['status'] });
    expect(s.settings[0]).toMatchObject({ id, status: 'wait', records: [] });
    await c.recorder.patchSetting('demo', id, { action: 'deactivate' });
  });

  it('405 Method is not allowed (text/plain) is invalid, not retryable, with the API text', async () => {
    // An empty id leaves the PATCH on the list endpoint, which takes only GET and PUT.
    const err = await apiFailure(c.recorder.patchSetting('demo', '', { action: 'start' }));
    expect(lastLog(c.sim)).toMatchObject({
      method: 'PATCH',
      path: '/app/recorder-cloud/v1/demo/record/',
      status: 405,
    });
    expect(err).toMatchObject({
      api: 'recorder-cloud',
      kind: 'invalid',
      status: 405,
      description: 'Method is not allowed',
      retryable: false,
    });
    expect(err.message).toContain('Method is not allowed');
    expectNoSecret(err, TOKENS);
  });
});

describe('injected faults become ApiError kinds', () => {
  let c: Ctx;
  beforeAll(async () => {
    c = await start({ slowMs: 2000 }, 200);
  });
  afterAll(closeAll);
  afterEach(() => c.sim.setFaults({}));

  const calls: [string, (x: Ctx) => Promise<unknown>][] = [
    [
      'metrics',
      (x) =>
        x.metrics.fetchTraffic({
          account: 'demo',
          start: T0 - 10 * MIN,
          end: T0 - 5 * MIN,
          breakdown: 'resource',
        }),
    ],
    ['dvr-net', (x) => x.dvr.getStream('demo', 'live/main')],
    [
      'dvr-net DELETE',
      (x) => x.dvr.deleteRange('demo', 'live/main', { host: '*', fromTs: 1, durationSec: 1 }),
    ],
    ['recorder-cloud', (x) => x.recorder.listSettings('demo', { extraFields: ['status'] })],
    ['recorder-cloud PATCH', (x) => x.recorder.patchSetting('demo', 'no-such-id', {})],
  ];
  const faults: [string, ErrorKind, number | undefined, boolean][] = [
    ['429', 'rate-limited', 429, true],
    ['500', 'server', 500, true],
    ['502', 'server', 502, true],
    ['503', 'server', 503, true],
    ['504', 'timeout', 504, true],
    ['reset', 'network', undefined, true],
    ['slow', 'network', undefined, true],
    ['malformed', 'malformed', 200, true],
  ];

  for (const [fault, kind, status, retryable] of faults) {
    it(`${fault} -> kind ${kind}, status ${status}, retryable ${retryable}`, async () => {
      c.sim.setFaults({ [fault]: 1 });
      for (const [name, call] of calls) {
        // The simulator's malformed fault rewrites bodies sent with res.send; a PATCH answers with res.end and
        // no body, so it is not cut (a simulator limitation, reported).
        if (fault === 'malformed' && name.endsWith('PATCH')) continue;
        // A slow answer costs a real headers timeout (about a second with undici's timers): one API is enough.
        if (fault === 'slow' && name !== 'dvr-net') continue;
        c.calls.length = 0;
        const err = await apiFailure(call(c));
        expect(err, name).toMatchObject({ kind, status, retryable });
        expect(err.api).toBe(name.split(' ')[0]);
        if (fault === '429') expect(err.retryAfterMs).toBe(1000);
        expect(c.calls).toEqual([[err.api, status === undefined ? 'error' : String(status)]]);
        expectNoSecret(err, TOKENS);
      }
    });
  }
});
