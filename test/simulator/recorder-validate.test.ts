/**
 * The recorder-cloud simulator's validation (src/simulator/recorder-validate.ts): the create (PUT) and change
 * (PATCH) bodies as the API document lists their fields, the messages of the 422 `{errors: {field: [messages]}}`
 * a client reads, the document's rules (launch_type schedule only with stream_type short; only dvr_enabled changes
 * during an active recording), the action, and which paths are the document's common 400 `Invalid path`.
 * (./recorder.test.ts checks over HTTP which fields a bad body names; this checks the values and the words.)
 */
import { describe, expect, it } from 'vitest';
import {
  ACTIONS,
  isValidPath,
  parseAction,
  validateChange,
  validateCreate,
} from '../../src/simulator/recorder-validate.js';

const MINIMAL = {
  stream_name: 'cam/1',
  stream_type: 'long',
  launch_type: 'stream_start',
  source: 'https://origin.example:8443/live/cam/1/playlist.m3u8?x=1',
};

function errorsOf(result: ReturnType<typeof validateCreate> | ReturnType<typeof validateChange>) {
  expect(result.ok).toBe(false);
  return result.ok ? {} : result.errors;
}

describe('validateCreate', () => {
  it('takes a minimal body and derives source_domain (host with its port) and source_path (no query) from source', () => {
    const result = validateCreate(MINIMAL);
    expect(result).toEqual({
      ok: true,
      value: {
        resourceId: undefined,
        streamName: 'cam/1',
        streamType: 'long',
        source: MINIMAL.source,
        sourceDomain: 'origin.example:8443',
        sourcePath: '/live/cam/1/playlist.m3u8',
        launchType: 'stream_start',
        schedule: undefined,
        path: undefined,
        stopTimeout: undefined,
        storageTime: undefined,
        dvrEnabled: undefined,
        dvrWindow: undefined,
        smil: undefined,
        qualities: undefined,
      },
    });
  });

  it('keeps every optional field given with a valid value', () => {
    const result = validateCreate({
      ...MINIMAL,
      stream_type: 'short',
      launch_type: 'schedule',
      resource_id: '1004',
      schedule: [{ start: '2026-01-01T00:00:00Z' }],
      path: '/rec/{now}.m3u8',
      stop_timeout: 1,
      storage_time: -1,
      dvr_enabled: true,
      dvr_window: 1,
      smil: false,
      qualities: { 'https://origin.example/720.m3u8': '720p' },
    });
    expect(result.ok && result.value).toMatchObject({
      streamType: 'short',
      launchType: 'schedule',
      resourceId: '1004',
      schedule: [{ start: '2026-01-01T00:00:00Z' }],
      path: '/rec/{now}.m3u8',
      stopTimeout: 1,
      storageTime: -1,
      dvrEnabled: true,
      dvrWindow: 1,
      smil: false,
      qualities: { 'https://origin.example/720.m3u8': '720p' },
    });
    expect(validateCreate({ ...MINIMAL, qualities: null })).toMatchObject({
      ok: true,
      value: { qualities: null },
    });
  });

  it('names every missing required field with the same message', () => {
    expect(errorsOf(validateCreate({}))).toEqual({
      stream_name: ['This field is required.'],
      stream_type: ['This field is required.'],
      launch_type: ['This field is required.'],
      source: ['This field is required.'],
    });
  });

  it('says what each field must be', () => {
    expect(
      errorsOf(
        validateCreate({
          stream_name: '  ',
          stream_type: 'medium',
          launch_type: 7,
          source: 'ftp://origin.example/cam.m3u8',
          resource_id: 1004,
          schedule: [{}, 'daily'],
          stop_timeout: 0,
          storage_time: 0,
          dvr_enabled: 'yes',
          dvr_window: 1.5,
          smil: 1,
          qualities: { 'https://origin.example/720.m3u8': 720 },
        }),
      ),
    ).toEqual({
      stream_name: ['Must be a non-empty string.'],
      stream_type: ['Must be one of: short, long.'],
      launch_type: ['Must be one of: stream_start, button, schedule.'],
      source: ['Must be a valid http or https URL.'],
      resource_id: ['Must be a non-empty string.'],
      schedule: ['Must be a list of schedule objects.'],
      stop_timeout: ['Must be an integer (seconds) greater than 0.'],
      storage_time: ['Must be an integer (days), -1 or at least 1.'],
      dvr_enabled: ['Must be a boolean.'],
      dvr_window: ['Must be an integer (seconds) greater than 0.'],
      smil: ['Must be a boolean.'],
      qualities: ['Must be an object mapping quality URLs to names.'],
    });
  });

  it('takes storage_time -1 (kept forever) and 1 and up, and refuses 0, -2 and fractions', () => {
    for (const ok of [-1, 1, 365])
      expect(validateCreate({ ...MINIMAL, storage_time: ok }).ok, String(ok)).toBe(true);
    for (const bad of [0, -2, 1.5, '7'])
      expect(errorsOf(validateCreate({ ...MINIMAL, storage_time: bad })), String(bad)).toHaveProperty(
        'storage_time',
      );
  });

  it('refuses launch_type schedule with stream_type long, naming launch_type', () => {
    expect(errorsOf(validateCreate({ ...MINIMAL, launch_type: 'schedule' }))).toEqual({
      launch_type: ['Launch type schedule is only allowed with stream_type short.'],
    });
  });

  it('refuses a body that is not a JSON object', () => {
    for (const body of [null, [], 'text', 3])
      expect(errorsOf(validateCreate(body)), JSON.stringify(body)).toEqual({
        body: ['Must be a JSON object.'],
      });
  });
});

describe('validateChange', () => {
  const idle = { streamType: 'long' as const, launchType: 'button' as const };

  it('takes the changeable keys and ignores any other key (the document lists what a change may touch)', () => {
    const result = validateChange(
      { storage_time: 30, path: '/x/{now}.m3u8', source: 'https://elsewhere.example/', stop_timeout: 'x' },
      idle,
      false,
    );
    expect(result).toEqual({
      ok: true,
      value: {
        streamType: undefined,
        launchType: undefined,
        schedule: undefined,
        path: '/x/{now}.m3u8',
        storageTime: 30,
        dvrEnabled: undefined,
      },
    });
  });

  it("holds the schedule rule for the result: the setting's own types fill what the change leaves out", () => {
    expect(errorsOf(validateChange({ launch_type: 'schedule' }, idle, false))).toEqual({
      launch_type: ['Launch type schedule is only allowed with stream_type short.'],
    });
    expect(validateChange({ launch_type: 'schedule', stream_type: 'short' }, idle, false).ok).toBe(true);
    const scheduled = { streamType: 'short' as const, launchType: 'schedule' as const };
    expect(errorsOf(validateChange({ stream_type: 'long' }, scheduled, false))).toHaveProperty('launch_type');
  });

  it('during an active recording refuses every changeable key but dvr_enabled, each named, a bad value with both messages', () => {
    expect(validateChange({ dvr_enabled: true }, idle, true)).toMatchObject({
      ok: true,
      value: { dvrEnabled: true },
    });
    const errors = errorsOf(validateChange({ path: '/p', storage_time: 0, dvr_enabled: false }, idle, true));
    expect(errors).toEqual({
      path: ['Cannot be changed during an active recording.'],
      storage_time: [
        'Cannot be changed during an active recording.',
        'Must be an integer (days), -1 or at least 1.',
      ],
    });
  });
});

describe('parseAction', () => {
  it('is change by default, one of the documented actions, and otherwise an error listing them', () => {
    expect([...ACTIONS]).toEqual(['change', 'start', 'stop', 'restart', 'deactivate']);
    expect(parseAction({})).toEqual({ ok: true, value: 'change' });
    for (const action of ACTIONS) expect(parseAction({ action })).toEqual({ ok: true, value: action });
    for (const action of ['launch', 'START', 1, ''])
      expect(parseAction({ action }), String(action)).toEqual({
        ok: false,
        errors: { action: ['Must be one of: change, start, stop, restart, deactivate.'] },
      });
  });
});

describe('isValidPath', () => {
  it('takes well-formed paths, one trailing slash and the bare prefix; a path naming no endpoint is still well formed', () => {
    for (const path of [
      '',
      '/',
      '/acme/record',
      '/acme/record/',
      '/acme/record/0a1b',
      '/a%20b/record',
      '/x/y/z',
    ])
      expect(isValidPath(path), path).toBe(true);
  });

  it('refuses bad percent-encoding, empty segments, an encoded slash and control characters', () => {
    for (const path of [
      '/acme/record/%E0%A4%A',
      '/ac%ZZme/record',
      '/acme//record',
      '/acme/record//',
      '//',
      '/acme/record/a%2Fb',
      '/acme/record/a%2fb',
      '/acme/record/a%00',
      '/acme/record/a%0A',
      '/acme/record/a%7F',
    ])
      expect(isValidPath(path), path).toBe(false);
  });
});
