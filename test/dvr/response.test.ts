import { describe, expect, it } from 'vitest';
import { parseDvrStreamResponse } from '../../src/dvr/response.js';
import { ApiError } from '../../src/http/errors.js';
import { entry } from '../helpers/answer-fixtures.js';
import { parseDvrDeleteResponse } from '../helpers/api-write-answers.js';

function body(data: unknown[]) {
  return { status: 'Completed', stream_name: 'live/main', data };
}

describe('parseDvrStreamResponse', () => {
  it('reads one entry per host with its DVR block and ranges', () => {
    const r = parseDvrStreamResponse(
      body([entry('h1'), entry('h2', { is_alive: false }, { enabled: false })]),
    );
    expect(r.streamName).toBe('live/main');
    expect(r.issues).toEqual([]);
    expect(r.unknownKeys).toEqual([]);
    expect(r.entries).toEqual([
      {
        streamName: 'live/main',
        host: 'h1',
        alive: true,
        dvr: {
          enabled: true,
          window: 3600,
          duration: 500,
          from: 1_767_268_800,
          ranges: [
            { from: 1_767_268_800, duration: 300 },
            { from: 1_767_269_200, duration: 200 },
          ],
        },
      },
      expect.objectContaining({ host: 'h2', alive: false, dvr: expect.objectContaining({ enabled: false }) }),
    ]);
  });

  it('accepts an entry without ranges or optional numbers (DVR off)', () => {
    const r = parseDvrStreamResponse(
      body([{ stream_name: 's', host: 'h', is_alive: false, dvr: { enabled: false } }]),
    );
    expect(r.entries[0]!.dvr).toEqual({ enabled: false, ranges: [] });
    expect(r.issues).toEqual([]);
  });

  it('drops a range with a negative duration or a bad start, keeps the others', () => {
    const r = parseDvrStreamResponse(
      body([
        entry(
          'h1',
          {},
          {
            ranges: [
              { from: 100, duration: 10 },
              { from: 200, duration: -5 },
              { from: '300', duration: 10 },
              'x',
              { from: 400, duration: 1.5 },
              { from: 500, duration: 20 },
            ],
          },
        ),
      ]),
    );
    expect(r.issues.map((i) => i.path)).toEqual([
      'data[0].dvr.ranges[1].duration',
      'data[0].dvr.ranges[2].from',
      'data[0].dvr.ranges[3]',
      'data[0].dvr.ranges[4].duration',
    ]);
    expect(r.entries[0]!.dvr.ranges).toEqual([
      { from: 100, duration: 10 },
      { from: 500, duration: 20 },
    ]);
  });

  it('drops bad optional numbers with an issue and keeps the entry', () => {
    const r = parseDvrStreamResponse(
      body([entry('h1', {}, { window: 'long', duration: -1, from: Number.NaN })]),
    );
    expect(r.issues.map((i) => i.path)).toEqual([
      'data[0].dvr.window',
      'data[0].dvr.duration',
      'data[0].dvr.from',
    ]);
    const dvr = r.entries[0]!.dvr;
    expect(dvr.window).toBeUndefined();
    expect(dvr.duration).toBeUndefined();
    expect(dvr.from).toBeUndefined();
    expect(dvr.ranges).toHaveLength(2);
  });

  it('drops numbers out of range with an issue: counts above 2^53, timestamps past the year 9999', () => {
    const r = parseDvrStreamResponse(
      body([
        entry(
          'h1',
          {},
          {
            window: 2 ** 53 + 2,
            duration: 1e300,
            from: 1e300,
            ranges: [
              { from: 1_767_268_800, duration: 300 },
              { from: 253_402_300_800, duration: 10 },
              { from: 1_767_269_200, duration: 1e20 },
            ],
          },
        ),
      ]),
    );
    expect(r.issues.map((i) => i.path)).toEqual([
      'data[0].dvr.window',
      'data[0].dvr.duration',
      'data[0].dvr.from',
      'data[0].dvr.ranges[1].from',
      'data[0].dvr.ranges[2].duration',
    ]);
    expect(r.issues.map((i) => i.problem).join('\n')).toMatch(/at most/);
    expect(r.entries[0]!.dvr.ranges).toEqual([{ from: 1_767_268_800, duration: 300 }]);
  });

  it.each([
    ['no host', { host: undefined }, 'data[1].host'],
    ['a numeric host', { host: 7 }, 'data[1].host'],
    ['is_alive as a string', { is_alive: 'yes' }, 'data[1].is_alive'],
    ['no dvr block', { dvr: undefined }, 'data[1].dvr'],
    ['dvr.enabled missing', { dvr: { ranges: [] } }, 'data[1].dvr.enabled'],
  ])('drops an entry with %s, keeps the other hosts', (_name, over, path) => {
    const r = parseDvrStreamResponse(body([entry('h1'), entry('h2', over), entry('h3')]));
    expect(r.entries.map((e) => e.host)).toEqual(['h1', 'h3']);
    expect(r.issues.map((i) => i.path)).toContain(path);
  });

  it('names an entry without stream_name after the body (with an issue)', () => {
    const r = parseDvrStreamResponse(body([entry('h1', { stream_name: undefined })]));
    expect(r.entries[0]!.streamName).toBe('live/main');
    expect(r.issues.map((i) => i.path)).toEqual(['data[0].stream_name']);
  });

  it('uses the stream asked for when the body does not echo it', () => {
    const r = parseDvrStreamResponse({ data: [] }, 'news/hd');
    expect(r.streamName).toBe('news/hd');
  });

  it('lists unknown keys once per place', () => {
    const r = parseDvrStreamResponse({
      ...body([
        { ...entry('h1', { bitrate: 5 }, { codec: 'h264' }) },
        entry('h2', { bitrate: 6 }, { ranges: [{ from: 1, duration: 2, kind: 'x' }] }),
      ]),
      took_ms: 3,
    });
    expect(r.unknownKeys.sort()).toEqual(
      ['took_ms', 'data[].bitrate', 'data[].dvr.codec', 'data[].dvr.ranges[].kind'].sort(),
    );
    expect(r.entries).toHaveLength(2);
  });

  it.each([
    ['an array', []],
    ['null', null],
    ['an error envelope', { status: 'Forbidden', description: 'Invalid token' }],
    ['data as an object', { data: {} }],
  ])('throws malformed for %s', (_name, raw) => {
    expect(() => parseDvrStreamResponse(raw)).toThrow(ApiError);
    try {
      parseDvrStreamResponse(raw);
    } catch (err) {
      expect(err).toMatchObject({ kind: 'malformed', api: 'dvr-net' });
    }
  });
});

describe('parseDvrDeleteResponse', () => {
  it('reads status, stream name and the echoed parameters', () => {
    const r = parseDvrDeleteResponse({
      status: 'Completed',
      stream_name: 'live/main',
      host: '*',
      from_ts: 100,
      duration_sec: 60,
    });
    expect(r).toEqual({
      status: 'Completed',
      streamName: 'live/main',
      echoed: { host: '*', from_ts: 100, duration_sec: 60 },
      issues: [],
    });
  });

  it('accepts an empty body and rejects a non-object', () => {
    expect(parseDvrDeleteResponse(undefined).issues).toEqual([]);
    expect(() => parseDvrDeleteResponse('Completed')).toThrow(/malformed/);
  });
});

describe('parseDvrStreamResponse: repeated hosts and other streams', () => {
  it('drops a second entry for the same host with an issue', () => {
    const r = parseDvrStreamResponse(
      body([entry('h1'), entry('h2'), entry('h1', { is_alive: false })]),
      'live/main',
    );
    expect(r.entries.map((e) => [e.host, e.alive])).toEqual([
      ['h1', true],
      ['h2', true],
    ]);
    expect(r.issues).toEqual([
      { path: 'data[2].host', problem: 'host "h1" listed twice; the second entry dropped' },
    ]);
  });

  it('drops an entry of another stream with an issue, and refuses an answer echoing another stream', () => {
    const r = parseDvrStreamResponse(
      body([entry('h1'), entry('h2', { stream_name: 'news/hd' })]),
      'live/main',
    );
    expect(r.entries.map((e) => e.host)).toEqual(['h1']);
    expect(r.issues.map((i) => i.path)).toEqual(['data[1].stream_name']);
    expect(() =>
      parseDvrStreamResponse({ ...body([entry('h1')]), stream_name: 'news/hd' }, 'live/main'),
    ).toThrow('the answer echoes stream_name "news/hd", asked for "live/main"');
  });
});
