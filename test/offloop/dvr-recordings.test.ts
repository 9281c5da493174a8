/**
 * Big DVR and recordings answers are parsed in a worker thread and come back packed (src/offloop/, with each
 * API's codec: src/dvr/codec.ts, src/recordings/codec.ts, src/discovery/codec.ts). Whatever path
 * an answer takes, the exporter must get the same object, key for key (a key the parser set to undefined
 * included), the same issues and unknown keys, and for a bad body the same `malformed` error; a worker that dies
 * costs only the parses it held. The bodies below are the shapes the parser tests use (test/dvr/response.test.ts,
 * test/recordings/response.test.ts), good and bad fields mixed.
 *
 * The worker runs from the build (dist/), which `npm test` makes before the tests run.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { inventoryParser } from '../../src/discovery/codec.js';
import { parseInventoryBody } from '../../src/discovery/response.js';
import { DvrClient } from '../../src/dvr/client.js';
import { dvrCodec, packDvrStreamResponse, unpackDvrStreamResponse } from '../../src/dvr/codec.js';
import { parseDvrBody } from '../../src/dvr/response.js';
import { ApiError } from '../../src/http/errors.js';
import { HttpClient } from '../../src/http/request.js';
import { ANSWER_POOL, type ParsePoolOptions } from '../../src/offloop/pool.js';
import { RecorderClient } from '../../src/recordings/client.js';
import { packRecordingList, recordingsCodec, unpackRecordingList } from '../../src/recordings/codec.js';
import { parseRecordingsBody } from '../../src/recordings/response.js';
import { entry, range, setting } from '../helpers/answer-fixtures.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { BUILT_WORKER, builtPools } from '../helpers/parse-pools.js';

const utf8 = new TextEncoder();
const json = (v: unknown) => utf8.encode(JSON.stringify(v));

/** DVR bodies as text: some are not JSON, or not of the documented shape. */
const DVR_BODIES: Record<string, string> = {
  good: JSON.stringify({
    status: 'Completed',
    stream_name: 'live/main',
    data: [entry('h1'), entry('h2', { is_alive: false }, { enabled: false })],
  }),
  'bad fields, unknown keys, dropped entries': JSON.stringify({
    status: 'Completed',
    stream_name: 'live/main',
    extra: 1,
    data: [
      entry('h1', { more: true }, { window: 'long', duration: -3, from: 1.5, speed: 2 }),
      entry('h2', {}, { ranges: [range(1, -1), 'x', { from: 5, duration: 0, why: 1 }, range(7, 8)] }),
      entry('h3', {}, { ranges: 'none', window: undefined, duration: undefined, from: undefined }),
      entry('h1'),
      entry('h4', { stream_name: 'live/other' }),
      entry('h5', { stream_name: undefined }),
      { host: 'h6', is_alive: true, dvr: null },
      { host: 7, is_alive: true, dvr: { enabled: true } },
      'not an entry',
      entry(
        '\ud83d\ude00 \ud800 host',
        {},
        { ranges: [range(1_767_268_800, 0), { from: -0, duration: -0 }] },
      ),
    ],
  }),
  'no optional numbers, DVR off': JSON.stringify({
    data: [{ stream_name: 'live/main', host: 'h', is_alive: false, dvr: { enabled: false } }],
  }),
  'empty data': JSON.stringify({ status: 'Completed', stream_name: 'live/main', data: [] }),
  'not JSON': '{"data": [1, 2',
  'top level an array': '[1, 2]',
  'no data array, with a description': '{"status":"Failed","description":"stream not found"}',
  'another stream echoed': JSON.stringify({ stream_name: 'live/other', data: [] }),
  empty: '  ',
};

const RECORDINGS_BODIES: Record<string, string> = {
  good: JSON.stringify([
    setting(),
    setting({ id: 'rec-2', qualities: null, path: null, records: [], status: 'progress' }),
    setting({
      id: 'rec-3',
      records: [
        { start: '2026-01-01T12:00:00Z', stop: null, status: 'finish' },
        { start: '2026-01-01T13:00:00.250Z', status: 'error' },
      ],
    }),
  ]),
  'bad fields, unknown keys, dropped settings': JSON.stringify([
    setting({ id: 42, schedule: 'x', color: 'red' }),
    setting({ id: 'b', resource_id: 5, stop_timeout: -1, storage_time: -5, dvr_enabled: 'yes', smil: 0 }),
    setting({ id: 'c', storage_time: 'forever', dvr_window: 1.5, active: false, status: 'paused' }),
    setting({ id: 'd', qualities: ['720p'], records: 'many', path: 7, stream_type: null }),
    setting({ id: 'e', qualities: { a: '720p', b: 1, 10: 'x', 2: 'y', __proto__: 'z' } }),
    setting({
      id: 'f',
      records: [
        { start: '2026-02-31T10:00:00Z', stop: 'soon', init_path: 5, status: 'bogus', more: 1 },
        'not a record',
        { init_path: null },
        {},
      ],
    }),
    setting({ id: 'f' }),
    setting({ id: 'g', account_name: 'other' }),
    setting({ id: '' }),
    setting({ id: null }),
    'not a setting',
    setting({ id: '\ud800 \ud83d\ude00', source_path: '' }),
  ]),
  'empty list': '[]',
  'not JSON': '[{"id": ',
  'top level an object': '{"settings": []}',
  empty: '',
};

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const { pool, crashingWorker } = builtPools();
const workerParser = (opts: ParsePoolOptions = {}) => pool(ANSWER_POOL, opts);

/** What a parse (inline or off the loop) gives: the value, or the error's class, kind, api and detail. */
async function outcome(parse: () => unknown): Promise<unknown> {
  try {
    const value = await parse();
    return { value, text: JSON.stringify(value) };
  } catch (err) {
    if (!(err instanceof ApiError)) return { thrown: String(err) };
    return { error: { kind: err.kind, api: err.api, detail: err.detail, message: err.message } };
  }
}

describe('the DVR and recordings parse pool', () => {
  it('stops a worker idle for idleMs (its heap is not kept between polls) and starts one for the next body', async () => {
    const clock = new FakeClock();
    const p = workerParser({ idleMs: 5000, clock });
    const bytes = () => utf8.encode(DVR_BODIES[Object.keys(DVR_BODIES)[0]!]!);
    const first = await outcome(() => p.parser(dvrCodec)(bytes(), 'live/main'));
    await clock.advance(4999);
    // Within idleMs: the same worker parses the next body.
    expect(await outcome(() => p.parser(dvrCodec)(bytes(), 'live/main'))).toStrictEqual(first);
    expect(p.started).toBe(1);
    await clock.advance(5000);
    const listing = utf8.encode(RECORDINGS_BODIES[Object.keys(RECORDINGS_BODIES)[0]!]!);
    const inline = await outcome(() => parseRecordingsBody(listing.slice(), 'acme'));
    expect(await outcome(() => p.parser(recordingsCodec)(listing, 'acme'))).toStrictEqual(inline);
    expect(p.started).toBe(2);
  });

  it.each(Object.keys(DVR_BODIES))('DVR %s: the same answer or error as inline', async (name) => {
    const p = workerParser();
    const bytes = utf8.encode(DVR_BODIES[name]!);
    const inline = await outcome(() => parseDvrBody(bytes.slice(), 'live/main'));
    const off = await outcome(() => p.parser(dvrCodec)(bytes, 'live/main'));
    expect(off).toStrictEqual(inline);
    expect(p.started).toBe(1);
  });

  it.each(
    Object.entries({
      'a list': JSON.stringify([
        { status: 'active', utoken: 'x', uid: '1', name: 'acme' },
        { status: 'Blocked', name: 'b\u00e9ta' },
        { name: '' },
        { status: 'active', name: 'last' },
      ]),
      'a data object': JSON.stringify({ data: [{ status: 'active', name: 'acme' }] }),
      'not a list': '{"description":"nope"}',
      'not JSON': '[{"name":',
      'nested too deep': '['.repeat(100),
    }),
  )('inventory %s: the same answer or error as inline', async (_name, body) => {
    const p = workerParser();
    const bytes = utf8.encode(body);
    const inline = await outcome(async () => parseInventoryBody(bytes.slice()));
    expect(await outcome(() => inventoryParser(p)(bytes))).toStrictEqual(inline);
    expect(p.started).toBe(1);
  });

  it.each(Object.keys(RECORDINGS_BODIES))(
    'recordings %s: the same answer or error as inline',
    async (name) => {
      const p = workerParser();
      const bytes = utf8.encode(RECORDINGS_BODIES[name]!);
      const inline = await outcome(() => parseRecordingsBody(bytes.slice(), 'acme'));
      const off = await outcome(() => p.parser(recordingsCodec)(bytes, 'acme'));
      expect(off).toStrictEqual(inline);
      expect(p.started).toBe(1);
    },
  );

  it('the bodies above do what their names say (issues, unknown keys, malformed)', async () => {
    const dvr = await parseDvrBody(
      utf8.encode(DVR_BODIES['bad fields, unknown keys, dropped entries']!),
      'live/main',
    );
    expect(dvr.issues.length).toBeGreaterThan(10);
    expect(dvr.unknownKeys).toEqual(['extra', 'data[].more', 'data[].dvr.speed', 'data[].dvr.ranges[].why']);
    expect(dvr.entries.map((e) => e.host)).toEqual(['h1', 'h2', 'h3', 'h5', '\ud83d\ude00 \ud800 host']);
    const rec = await parseRecordingsBody(
      utf8.encode(RECORDINGS_BODIES['bad fields, unknown keys, dropped settings']!),
      'acme',
    );
    expect(rec.issues.length).toBeGreaterThan(10);
    expect(rec.unknownKeys).toEqual(['[].color', '[].records[].more']);
    // A bad value leaves its key set to undefined: the packed answer must keep that too.
    expect(Object.hasOwn(rec.settings[1]!, 'resourceId')).toBe(true);
    expect(rec.settings[1]!.resourceId).toBeUndefined();
    expect(() => parseDvrBody(utf8.encode(DVR_BODIES['not JSON']!), 's')).toThrow(
      expect.objectContaining({ kind: 'malformed', detail: expect.stringMatching(/^body is not JSON/) }),
    );
  });

  it('parses small bodies inline and big ones in the worker', async () => {
    const p = workerParser({ minBytes: 10_000 });
    await p.parser(dvrCodec)(utf8.encode(DVR_BODIES.good!), 'live/main');
    await p.parser(recordingsCodec)(utf8.encode(RECORDINGS_BODIES.good!), 'acme');
    expect(p.started).toBe(0);
    const many = Array.from({ length: 2000 }, (_, i) => range(1_767_000_000 + 20 * i, 15));
    const big = json({ stream_name: 'live/main', data: [entry('h1', {}, { ranges: many })] });
    expect(big.byteLength).toBeGreaterThan(10_000);
    const r = await p.parser(dvrCodec)(big, 'live/main');
    expect(p.started).toBe(1);
    expect(r.entries[0]!.dvr.ranges).toHaveLength(2000);
  });

  it('fails only the parses a dying worker held, then starts a new one', async () => {
    const p = workerParser({ workerUrl: crashingWorker() });
    expect((await p.parser(dvrCodec)(utf8.encode(DVR_BODIES.good!), 'live/main')).entries).toHaveLength(2);
    await expect(p.parser(recordingsCodec)(utf8.encode('"CRASH"'), 'acme')).rejects.toThrow(
      /parse worker stopped: exit code 3/,
    );
    expect(
      (await p.parser(recordingsCodec)(utf8.encode(RECORDINGS_BODIES.good!), 'acme')).settings,
    ).toHaveLength(3);
    expect(p.started).toBe(2);
  });

  it('parses inline once closed, and when its worker file is missing (saying so once)', async () => {
    const p = workerParser();
    await p.close();
    expect((await p.parser(dvrCodec)(utf8.encode(DVR_BODIES.good!), 'live/main')).entries).toHaveLength(2);
    expect(p.started).toBe(0);

    const { log, lines } = captureLog();
    const missing = workerParser({ workerUrl: new URL('./missing-worker.js', BUILT_WORKER), log });
    expect(
      (await missing.parser(recordingsCodec)(utf8.encode(RECORDINGS_BODIES.good!), 'acme')).settings,
    ).toHaveLength(3);
    expect(missing.started).toBe(0);
    expect(lines.filter((l) => l.includes('parse worker not found'))).toHaveLength(1);
  });
});

describe('packed answers', () => {
  it('unpack in slices, yielding between them, to the same answer', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => range(1_767_000_000 + 20 * i, 15));
    const dvr = await parseDvrBody(
      json({ stream_name: 'live/main', data: [entry('h1', {}, { ranges: many }), entry('h2')] }),
      'live/main',
    );
    const records = Array.from({ length: 3000 }, () => ({ start: '2026-01-01T10:00:00Z', status: 'finish' }));
    const rec = await parseRecordingsBody(json([setting({ records }), setting({ id: 'b' })]), 'acme');
    let clock = 0;
    let yields = 0;
    // Every look at the time costs 1 ms: each look ends a slice.
    const opts = {
      sliceMs: 1,
      now: () => clock++,
      yieldToLoop: async () => {
        yields++;
      },
    };
    expect(await unpackDvrStreamResponse(packDvrStreamResponse(dvr), opts)).toStrictEqual(dvr);
    expect(yields).toBeGreaterThan(10);
    yields = 0;
    expect(await unpackRecordingList(packRecordingList(rec), opts)).toStrictEqual(rec);
    expect(yields).toBeGreaterThan(5);
  });
});

/** A loopback API answering each path with the given text. */
async function serve(bodies: Record<string, string>): Promise<string> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const body = bodies[path];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the DVR and recordings clients, big answers off the loop', () => {
  it('give the same answers, and the same errors with status and endpoint, as inline', async () => {
    const base = await serve({
      '/app/dvr-net/v1/acme/streams/live/main': DVR_BODIES['bad fields, unknown keys, dropped entries']!,
      '/app/dvr-net/v1/acme/streams/live/other': DVR_BODIES['not JSON']!,
      '/app/recorder-cloud/v1/acme/record': RECORDINGS_BODIES['bad fields, unknown keys, dropped settings']!,
      '/app/recorder-cloud/v1/bad/record': RECORDINGS_BODIES['top level an object']!,
    });
    const http = new HttpClient({ baseUrl: base, token: () => 'secret-token' });
    const p = workerParser();
    try {
      const ask = async (dvr: DvrClient, rec: RecorderClient) => [
        await outcome(() => dvr.getStream('acme', 'live/main')),
        await outcome(() => dvr.getStream('acme', 'live/other')),
        await outcome(() => rec.listSettings('acme', { all: true })),
        await outcome(() => rec.listSettings('bad')),
      ];
      const inline = await ask(new DvrClient(http), new RecorderClient(http));
      const off = await ask(
        new DvrClient(http, p.parser(dvrCodec)),
        new RecorderClient(http, p.parser(recordingsCodec)),
      );
      expect(off).toStrictEqual(inline);
      expect(off[0]).toMatchObject({ value: { entries: expect.any(Array) } });
      expect(off[1]).toMatchObject({
        error: {
          kind: 'malformed',
          message: expect.stringMatching(
            /GET \/app\/dvr-net\/v1\/acme\/streams\/live\/other: 200 malformed: body is not JSON/,
          ),
        },
      });
      expect(off[2]).toMatchObject({ value: { settings: expect.any(Array) } });
      expect(off[3]).toMatchObject({
        error: { kind: 'malformed', detail: expect.stringMatching(/top level/) },
      });
      expect(p.started).toBe(1);
    } finally {
      await http.close();
    }
  });
});
