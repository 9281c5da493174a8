import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import { effectiveStatus, parseRecordingList, type RecordingSetting } from '../../src/recordings/response.js';
import { setting } from '../helpers/answer-fixtures.js';
import { parseCreateResponse } from '../helpers/api-write-answers.js';

const at = (iso: string) => Date.parse(iso);

describe('parseRecordingList', () => {
  it('reads every documented field into the typed setting', () => {
    const r = parseRecordingList([setting()]);
    expect(r.issues).toEqual([]);
    expect(r.unknownKeys).toEqual([]);
    expect(r.settings).toEqual([
      {
        id: 'rec-1',
        resourceId: '1004',
        accountName: 'acme',
        sourceDomain: 'live.example',
        sourcePath: '/live/main/playlist.m3u8',
        streamType: 'long',
        launchType: 'stream_start',
        stopTimeout: 1800,
        storageTime: -1,
        dvrEnabled: true,
        dvrWindow: 43200,
        smil: false,
        qualities: { 'https://live.example/720.m3u8': '720p' },
        records: [
          {
            start: at('2026-01-01T10:00:00Z'),
            stop: at('2026-01-01T11:00:00Z'),
            initPath: '/records/a.m3u8',
          },
        ],
        path: '/records/a.m3u8',
      },
    ]);
  });

  it('accepts null qualities and path, empty records and a running record without stop', () => {
    const r = parseRecordingList([
      setting({ qualities: null, path: null, records: [] }),
      setting({ id: 'rec-2', records: [{ start: '2026-01-01T12:00:00Z', stop: null }] }),
    ]);
    expect(r.issues).toEqual([]);
    expect(r.settings[0]).toMatchObject({ qualities: null, path: null, records: [] });
    expect(r.settings[1]!.records).toEqual([{ start: at('2026-01-01T12:00:00Z') }]);
  });

  it('reads status on the setting and on its records', () => {
    const r = parseRecordingList([
      setting({
        status: 'progress',
        records: [{ start: '2026-01-01T10:00:00Z', status: 'finish' }],
      }),
    ]);
    expect(r.settings[0]!.status).toBe('progress');
    expect(r.settings[0]!.records[0]!.status).toBe('finish');
  });

  it.each([
    ['storage_time below -1', { storage_time: -2 }, '[0].storage_time', 'storageTime'],
    ['stop_timeout as a string', { stop_timeout: '1800' }, '[0].stop_timeout', 'stopTimeout'],
    ['dvr_window negative', { dvr_window: -1 }, '[0].dvr_window', 'dvrWindow'],
    ['dvr_enabled as 1', { dvr_enabled: 1 }, '[0].dvr_enabled', 'dvrEnabled'],
    ['smil as a string', { smil: 'no' }, '[0].smil', 'smil'],
    ['an unknown status', { status: 'paused' }, '[0].status', 'status'],
    ['source_domain as a number', { source_domain: 5 }, '[0].source_domain', 'sourceDomain'],
  ])('drops %s with an issue, keeps the rest', (_name, over, path, field) => {
    const r = parseRecordingList([setting(over), setting({ id: 'rec-2' })]);
    expect(r.issues.map((i) => i.path)).toEqual([path]);
    const s = r.settings[0]!;
    expect(s[field as keyof RecordingSetting]).toBeUndefined();
    expect(s.id).toBe('rec-1');
    expect(s.resourceId).toBe('1004');
    expect(s.records).toHaveLength(1);
    expect(r.settings[1]!.id).toBe('rec-2');
  });

  it('reports bad dates, qualities and records by path', () => {
    const r = parseRecordingList([
      setting({
        qualities: { 'https://a/1.m3u8': '1080p', 'https://a/2.m3u8': 2 },
        records: [
          { start: '01/01/2026 10:00', stop: '2026-02-31T00:00:00Z', init_path: '/x' },
          7,
          { start: 1_767_261_600, status: 'done' },
        ],
      }),
    ]);
    expect(r.issues.map((i) => i.path)).toEqual([
      '[0].qualities["https://a/2.m3u8"]',
      '[0].records[0].start',
      '[0].records[0].stop',
      '[0].records[1]',
      '[0].records[2].start',
      '[0].records[2].status',
    ]);
    const s = r.settings[0]!;
    expect(s.qualities).toEqual({ 'https://a/1.m3u8': '1080p' });
    expect(s.records).toEqual([{ initPath: '/x' }, {}]);
  });

  it('drops numbers out of range with an issue: storage_time 1e304 days, counts above 2^53', () => {
    const r = parseRecordingList([
      setting({ id: 'a', storage_time: 1e304 }),
      setting({ id: 'b', stop_timeout: 2 ** 53 + 2, dvr_window: 1e300 }),
      setting({ id: 'c', storage_time: 104_249_991_375 }),
      setting({ id: 'd', storage_time: 36_500 }),
    ]);
    expect(r.issues.map((i) => i.path)).toEqual([
      '[0].storage_time',
      '[1].stop_timeout',
      '[1].dvr_window',
      '[2].storage_time',
    ]);
    expect(r.settings.map((s) => s.storageTime)).toEqual([undefined, -1, undefined, 36_500]);
    expect(r.settings[1]!.stopTimeout).toBeUndefined();
  });

  it('drops a setting without an id and an element that is not an object', () => {
    const r = parseRecordingList([setting({ id: undefined }), 'x', setting({ id: 'ok' })]);
    expect(r.settings.map((s) => s.id)).toEqual(['ok']);
    expect(r.issues.map((i) => i.path)).toEqual(['[0].id', '[1]']);
  });

  it('lists unknown keys once per place', () => {
    const r = parseRecordingList([
      setting({ created_at: 1, records: [{ start: '2026-01-01T10:00:00Z', size: 3 }] }),
      setting({ created_at: 2 }),
    ]);
    expect(r.unknownKeys.sort()).toEqual(['[].created_at', '[].records[].size']);
  });

  it.each([
    ['an object', { data: [] }],
    ['null', null],
    ['text', 'Invalid token'],
  ])('throws malformed when the top level is %s', (_name, raw) => {
    expect(() => parseRecordingList(raw)).toThrow(ApiError);
  });
});

describe('effectiveStatus', () => {
  const base = parseRecordingList([setting()]).settings[0]!;
  const rec = (start: string, status?: 'wait' | 'progress' | 'finish' | 'error') => ({
    start: at(start),
    ...(status ? { status } : {}),
  });

  it("is the setting's own status when it has one", () => {
    expect(
      effectiveStatus({ ...base, status: 'error', records: [rec('2026-01-01T10:00:00Z', 'progress')] }),
    ).toBe('error');
  });

  it("else the newest record's by start, whatever the order of the list", () => {
    const records = [
      rec('2026-01-01T12:00:00Z', 'progress'),
      rec('2026-01-01T10:00:00Z', 'finish'),
      rec('2026-01-01T13:00:00Z'),
    ];
    expect(effectiveStatus({ ...base, records })).toBe('progress');
  });

  it('else undefined', () => {
    expect(effectiveStatus({ ...base, records: [rec('2026-01-01T12:00:00Z')] })).toBeUndefined();
    expect(effectiveStatus({ ...base, records: [] })).toBeUndefined();
  });
});

describe('parseCreateResponse', () => {
  it('returns the id, and refuses an answer without one', () => {
    expect(parseCreateResponse({ id: 'abc' })).toEqual({ id: 'abc' });
    expect(parseCreateResponse({ id: 12 })).toEqual({ id: '12' });
    expect(() => parseCreateResponse({})).toThrow(/malformed/);
    expect(() => parseCreateResponse([])).toThrow(/malformed/);
  });
});

describe('parseRecordingList: repeated ids and other accounts', () => {
  it('drops a second setting with the same id, and one of another account, each with an issue', () => {
    const r = parseRecordingList(
      [
        setting({ id: 'a' }),
        setting({ id: 'b' }),
        setting({ id: 'a', stream_type: 'short' }),
        setting({ id: 'c', account_name: 'beta' }),
      ],
      'acme',
    );
    expect(r.settings.map((s) => [s.id, s.streamType])).toEqual([
      ['a', 'long'],
      ['b', 'long'],
    ]);
    expect(r.issues.map((i) => i.path)).toEqual(['[2].id', '[3].account_name']);
  });
});
