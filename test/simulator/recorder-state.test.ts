/**
 * The recorder-cloud simulator's settings and their lifecycle without HTTP (src/simulator/recorder-state.ts), on
 * a fake clock, against the assumptions its header states where the API document is silent: the seeded starting
 * states, a stream_start setting that launches by itself, a short recording that ends by itself after 12 hours,
 * what start, stop, restart and deactivate do, and the settings object the API shows.
 */
import { describe, expect, it } from 'vitest';
import { formatDatetime, RecorderState, type Setting } from '../../src/simulator/recorder-state.js';
import { validateCreate } from '../../src/simulator/recorder-validate.js';
import type { SimRecordingSeed } from '../../src/simulator/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 10, 12, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;

const seedOf = (
  streamName: string,
  status: SimRecordingSeed['status'],
  more: Partial<SimRecordingSeed> = {},
) => ({
  streamName,
  source: `https://origin.example/${streamName}/playlist.m3u8`,
  streamType: 'long' as const,
  launchType: 'button' as const,
  status,
  ...more,
});

function stateWith(recordings: SimRecordingSeed[], seed = 7) {
  const clock = new FakeClock(T0);
  const state = new RecorderState(twoAccounts(clock, seed, { streams: [], recordings }));
  return { clock, state };
}

function inputOf(body: Record<string, unknown>) {
  const input = validateCreate(body);
  if (!input.ok) throw new Error(JSON.stringify(input.errors));
  return input.value;
}

function created(state: RecorderState, body: Record<string, unknown>): Setting {
  const s = state.create('acme', inputOf(body));
  if (!s) throw new Error('not created');
  return s;
}

const BODY = {
  stream_name: 'cam/1',
  stream_type: 'short',
  launch_type: 'button',
  source: 'https://origin.example/cam/1.m3u8',
  path: '/rec/{now}/{now}.m3u8',
};

describe('seeded settings', () => {
  it('start in their seeded status with a plausible past: a running instance, or one that ended, or none', () => {
    const { state } = stateWith([
      seedOf('running', 'progress'),
      seedOf('done', 'finish'),
      seedOf('broken', 'error'),
      seedOf('waiting', 'wait'),
    ]);
    const [running, done, broken, waiting] = state.list('acme');
    expect(running!.status).toBe('progress');
    expect(running!.records).toHaveLength(1);
    const open = running!.records[0]!;
    expect(open.stop).toBeNull();
    expect(T0 - open.start).toBeGreaterThanOrEqual(10 * MIN);
    expect(T0 - open.start).toBeLessThanOrEqual(120 * MIN);
    for (const [s, status] of [
      [done!, 'finish'],
      [broken!, 'error'],
    ] as const) {
      expect(s.status).toBe(status);
      const [r] = s.records;
      expect(r!.status).toBe(status);
      expect(T0 - r!.start).toBeGreaterThanOrEqual(2 * HOUR);
      expect(T0 - r!.start).toBeLessThanOrEqual(48 * HOUR);
      expect(r!.stop! - r!.start).toBeGreaterThanOrEqual(10 * MIN);
      expect(r!.stop! - r!.start).toBeLessThanOrEqual(100 * MIN);
    }
    expect(waiting).toMatchObject({ status: 'wait', records: [] });
  });

  it('have 24-hex-digit ids, the same for the same seed and others for another seed', () => {
    const seeds = [seedOf('a', 'wait'), seedOf('b', 'wait')];
    const ids = (seed: number) =>
      stateWith(seeds, seed)
        .state.list('acme')
        .map((s) => s.id);
    const first = ids(7);
    expect(first).toHaveLength(2);
    for (const id of first) expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(first).size).toBe(2);
    expect(ids(7)).toEqual(first);
    expect(ids(8)).not.toEqual(first);
  });

  it('a waiting stream_start setting launches by itself 5 to 30 seconds later; a button one waits', () => {
    const { clock, state } = stateWith([
      seedOf('auto', 'wait', { launchType: 'stream_start' }),
      seedOf('manual', 'wait'),
    ]);
    clock.set(T0 + 4_999);
    expect(state.list('acme').map((s) => s.status)).toEqual(['wait', 'wait']);
    clock.set(T0 + 30_000);
    const [auto, manual] = state.list('acme');
    expect(auto!.status).toBe('progress');
    const started = auto!.records[0]!.start;
    expect(started - T0).toBeGreaterThanOrEqual(5_000);
    expect(started - T0).toBeLessThanOrEqual(30_000);
    expect(manual!.status).toBe('wait');
  });
});

describe('the lifecycle', () => {
  it('start opens an instance whose init_path is the path with {now} in Unix seconds; stop closes it', () => {
    const { clock, state } = stateWith([]);
    const s = created(state, BODY);
    clock.set(T0 + 1_500);
    expect(state.act(s, 'start')).toEqual({ ok: true });
    const at = T0 + 1_500;
    expect(s.records).toEqual([
      {
        start: at,
        stop: null,
        initPath: `/rec/${Math.floor(at / 1000)}/${Math.floor(at / 1000)}.m3u8`,
        status: 'progress',
      },
    ]);
    clock.set(T0 + 10 * MIN);
    expect(state.act(s, 'stop')).toEqual({ ok: true });
    expect(s.status).toBe('finish');
    expect(s.records[0]).toMatchObject({ stop: T0 + 10 * MIN, status: 'finish' });
  });

  it('refuses start during a recording and stop without one, with the message the 422 carries', () => {
    const { state } = stateWith([]);
    const s = created(state, BODY);
    expect(state.act(s, 'stop')).toEqual({
      ok: false,
      field: 'action',
      message: 'No recording is in progress.',
    });
    state.act(s, 'start');
    expect(state.act(s, 'start')).toEqual({
      ok: false,
      field: 'action',
      message: 'Recording is already in progress.',
    });
    expect(s.records).toHaveLength(1);
  });

  it('restart closes the running instance and opens a new one; from a stopped setting it starts one', () => {
    const { clock, state } = stateWith([]);
    const s = created(state, BODY);
    state.act(s, 'restart');
    expect(s.records).toHaveLength(1);
    clock.set(T0 + MIN);
    state.act(s, 'restart');
    expect(s.records.map((r) => [r.start, r.stop, r.status])).toEqual([
      [T0, T0 + MIN, 'finish'],
      [T0 + MIN, null, 'progress'],
    ]);
    expect(s.status).toBe('progress');
  });

  it('ends a short recording by itself 12 hours after it started; a long one goes on', () => {
    const { clock, state } = stateWith([]);
    const short = created(state, BODY);
    const long = created(state, {
      ...BODY,
      stream_type: 'long',
      source: 'https://origin.example/cam/2.m3u8',
    });
    state.act(short, 'start');
    state.act(long, 'start');
    clock.set(T0 + 12 * HOUR - 1);
    expect(state.get('acme', short.id)!.status).toBe('progress');
    clock.set(T0 + 13 * HOUR);
    expect(state.get('acme', short.id)!.records[0]).toMatchObject({ stop: T0 + 12 * HOUR, status: 'finish' });
    expect(state.get('acme', short.id)!.status).toBe('finish');
    expect(state.get('acme', long.id)!.status).toBe('progress');
  });

  it('deactivate ends the recording, hides the setting and frees its source for a new one', () => {
    const { clock, state } = stateWith([]);
    const s = created(state, BODY);
    state.act(s, 'start');
    // A second active setting of the same source is refused (the API's 409).
    expect(state.create('acme', inputOf(BODY))).toBeUndefined();
    clock.set(T0 + MIN);
    expect(state.act(s, 'deactivate')).toEqual({ ok: true });
    expect(s.records[0]).toMatchObject({ stop: T0 + MIN, status: 'finish' });
    expect(state.get('acme', s.id)).toBeUndefined();
    expect(state.list('acme').map((x) => x.id)).not.toContain(s.id);
    expect(created(state, BODY).id).not.toBe(s.id);
  });

  it('setStatus error ends the running instance as error; a forced status stops a pending launch', () => {
    const { clock, state } = stateWith([seedOf('auto', 'wait', { launchType: 'stream_start' })]);
    const [auto] = state.list('acme');
    state.setStatus('acme', auto!.id, 'wait');
    clock.set(T0 + HOUR);
    expect(state.get('acme', auto!.id)).toMatchObject({ status: 'wait', records: [] });
    state.setStatus('acme', auto!.id, 'progress');
    clock.set(T0 + HOUR + MIN);
    state.setStatus('acme', auto!.id, 'error');
    expect(auto!.records).toEqual([
      expect.objectContaining({ start: T0 + HOUR, stop: T0 + HOUR + MIN, status: 'error' }),
    ]);
    expect(() => state.setStatus('acme', 'nope', 'error')).toThrow('unknown recording setting acme/nope');
  });
});

describe('view (the API settings object)', () => {
  it('shows the last instance only unless all, status only when asked, and times to the second in UTC', () => {
    const { clock, state } = stateWith([]);
    const s = created(state, BODY);
    clock.set(T0 + 999);
    state.act(s, 'restart');
    clock.set(T0 + MIN + 250);
    state.act(s, 'restart');
    const last = state.view(s, { all: false, status: false });
    expect(last.records).toEqual([
      { start: '2026-01-10T12:01:00Z', stop: null, init_path: expect.any(String) },
    ]);
    expect(last).not.toHaveProperty('status');
    const all = state.view(s, { all: true, status: true });
    expect((all.records as unknown[]).length).toBe(2);
    expect(all.records).toEqual([
      expect.objectContaining({
        start: '2026-01-10T12:00:00Z',
        stop: '2026-01-10T12:01:00Z',
        status: 'finish',
      }),
      expect.objectContaining({ start: '2026-01-10T12:01:00Z', stop: null, status: 'progress' }),
    ]);
    expect(all.status).toBe('progress');
    expect(formatDatetime(Date.UTC(2026, 0, 1, 0, 0, 5, 999))).toBe('2026-01-01T00:00:05Z');
  });
});
