/**
 * The recorder-cloud client (src/recordings/client.ts) against the simulator's recorder-cloud API served alone on
 * loopback (test/helpers/sim-api.ts): the listing and one setting are each one GET (reads only), the options become
 * the documented query (`resource_id`, a bare `all`, `extra_fields=status`), and the body goes through the parser
 * the client was given (the parse worker's, src/offloop/pool.ts) with the account asked for, so a setting of
 * another account is dropped. A parser that fails makes the call a `malformed` ApiError with status and endpoint.
 * The endpoints' errors and faults: test/http/clients.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RecorderClient, type RecordingsBodyParser } from '../../src/recordings/client.js';
import { parseRecordingsBody } from '../../src/recordings/response.js';
import type { SimRecordingSeed } from '../../src/simulator/types.js';
import { apiFailure } from '../helpers/api-errors.js';
import { closeUpstreams, recorderUpstream } from '../helpers/recorded-upstream.js';
import { closeServed } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

const SEEDS: SimRecordingSeed[] = [
  {
    streamName: 'live/main',
    source: 'https://src.example/live/main.m3u8',
    streamType: 'short',
    launchType: 'button',
    resourceId: '1004',
  },
  {
    streamName: 'archive',
    source: 'https://src.example/archive.m3u8',
    streamType: 'long',
    launchType: 'stream_start',
    status: 'finish',
  },
];

afterEach(async () => {
  await closeUpstreams();
  await closeServed();
});

/** The simulator with acme's two settings; the client's upstream, every request spec kept. */
const start = () => recorderUpstream(T0, SEEDS);

describe('RecorderClient', () => {
  it("listSettings: one GET without query by default, the simulator's settings", async () => {
    const { upstream, sent } = await start();
    const r = await new RecorderClient(upstream).listSettings('acme');
    expect(sent.map((s) => [s.api, s.method, s.path, s.query])).toEqual([
      ['recorder-cloud', 'GET', '/app/recorder-cloud/v1/acme/record', []],
    ]);
    expect(r).toMatchObject({ issues: [], unknownKeys: [] });
    expect(r.settings.map((s) => [s.streamType, s.launchType, s.sourceDomain, s.sourcePath])).toEqual([
      ['short', 'button', 'src.example', '/live/main.m3u8'],
      ['long', 'stream_start', 'src.example', '/archive.m3u8'],
    ]);
    // Without extra_fields=status the API leaves the status out.
    expect(r.settings.every((s) => s.status === undefined)).toBe(true);
  });

  it('sends the options as the documented query, in order, and the API answers to it', async () => {
    const { upstream, sent } = await start();
    const client = new RecorderClient(upstream);
    const r = await client.listSettings('acme', { resourceId: '1004', all: true, extraFields: ['status'] });
    expect(sent[0]!.query).toEqual([
      ['resource_id', '1004'],
      ['all', null],
      ['extra_fields', 'status'],
    ]);
    expect(r.settings.map((s) => [s.resourceId, s.status])).toEqual([['1004', 'wait']]);
    await client.listSettings('acme', { extraFields: [], all: false });
    expect(sent[1]!.query).toEqual([]);
  });

  it('getSetting: one GET of the setting, its id a path segment, an array of one', async () => {
    const { upstream, sent } = await start();
    const client = new RecorderClient(upstream);
    const archive = (await client.listSettings('acme')).settings[1]!;
    const r = await client.getSetting('acme', archive.id, { extraFields: ['status'] });
    expect(sent[1]!.path).toBe(`/app/recorder-cloud/v1/acme/record/${encodeURIComponent(archive.id)}`);
    expect(r.settings).toHaveLength(1);
    expect(r.settings[0]).toMatchObject({ id: archive.id, status: 'finish' });
  });

  it('reads each body with the parser it was given, which is told the account asked for', async () => {
    const { upstream } = await start();
    const seen: (string | undefined)[] = [];
    const parse: RecordingsBodyParser = async (bytes, account) => {
      seen.push(account);
      return parseRecordingsBody(bytes, account);
    };
    const client = new RecorderClient(upstream, parse);
    const listed = await client.listSettings('acme');
    await client.getSetting('acme', listed.settings[0]!.id);
    expect(seen).toEqual(['acme', 'acme']);
    expect(listed).toStrictEqual(await new RecorderClient(upstream).listSettings('acme'));
    // Read as if for another account, every setting (each names acme) is dropped with an issue.
    const asIf: RecordingsBodyParser = async (bytes) => parseRecordingsBody(bytes, 'other');
    const other = await new RecorderClient(upstream, asIf).listSettings('acme');
    expect(other.settings).toEqual([]);
    expect(other.issues.map((i) => i.path)).toEqual(['[0].account_name', '[1].account_name']);
  });

  it('a parser that fails makes the call malformed with status and endpoint, not a crash', async () => {
    const { upstream } = await start();
    const broken: RecordingsBodyParser = async () => {
      throw new Error('answer parse worker closed');
    };
    const err = await apiFailure(new RecorderClient(upstream, broken).listSettings('acme', { all: true }));
    expect(err).toMatchObject({ api: 'recorder-cloud', kind: 'malformed', status: 200 });
    expect(err.endpoint).toMatch(/^GET \/app\/recorder-cloud\/v1\/acme\/record/);
    expect(err.message).toContain('answer parse worker closed');
  });
});
