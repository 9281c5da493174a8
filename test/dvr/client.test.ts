/**
 * The dvr-net client (src/dvr/client.ts) against the simulator's dvr-net API served alone on loopback
 * (test/helpers/sim-api.ts): a stream is read with one GET of its path, the answer is what the simulator holds for
 * it, and the body goes through the parser the client was given (the parse worker's, src/offloop/pool.ts) with
 * the stream asked for, so an answer for another stream is refused. A parser that fails makes the call a
 * `malformed` ApiError with status and endpoint. The endpoints' other errors and faults: test/http/clients.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type DvrBodyParser, DvrClient } from '../../src/dvr/client.js';
import { parseDvrBody } from '../../src/dvr/response.js';
import { createDvrSim } from '../../src/simulator/dvr.js';
import { apiFailure, expectNoSecret } from '../helpers/api-errors.js';
import { closeUpstreams, recordedUpstream } from '../helpers/recorded-upstream.js';
import { ACME_TOKEN, closeServed, OTHER_TOKEN, startApi, twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;

afterEach(async () => {
  await closeUpstreams();
  await closeServed();
});

/** The simulator with two of acme's streams, 30 minutes recorded; an HTTP client with `token`, every spec kept. */
async function start(token = ACME_TOKEN) {
  const { clock, sim, base } = await startApi(
    '/app/dvr-net/v1',
    T0,
    (c) =>
      twoAccounts(c, 7, {
        recordings: [],
        streams: [
          { name: 'live/main', hosts: ['h1', 'h2'], window: 3600 },
          { name: 'news/hd', hosts: ['h1'], window: 600 },
        ],
      }),
    createDvrSim,
  );
  await clock.advance(30 * MIN);
  const { upstream, sent } = recordedUpstream(base, clock, token);
  return { sim, upstream, sent };
}

describe('DvrClient.getStream', () => {
  it("reads a stream with one GET of its path: the simulator's hosts and ranges", async () => {
    const { sim, upstream, sent } = await start();
    const r = await new DvrClient(upstream).getStream('acme', 'live/main');
    expect(sent.map((s) => [s.api, s.method, s.path])).toEqual([
      ['dvr-net', 'GET', '/app/dvr-net/v1/acme/streams/live/main'],
    ]);
    expect(r).toMatchObject({ streamName: 'live/main', issues: [], unknownKeys: [] });
    const truth = sim.state.entries(sim.state.stream('acme', 'live/main')!);
    expect(r.entries.map((e) => [e.host, e.alive, e.dvr.window, e.dvr.ranges])).toEqual(
      truth.map((e) => [e.host, e.is_alive, e.dvr.window, e.dvr.ranges]),
    );
    expect(r.entries.map((e) => e.host)).toEqual(['h1', 'h2']);
    expect(r.entries.every((e) => e.dvr.ranges.length > 0)).toBe(true);
  });

  it('reads the body with the parser it was given, which is told the stream asked for', async () => {
    const { upstream } = await start();
    const seen: string[] = [];
    const parse: DvrBodyParser = async (bytes, stream) => {
      seen.push(stream);
      return parseDvrBody(bytes, stream);
    };
    const given = await new DvrClient(upstream, parse).getStream('acme', 'news/hd');
    expect(seen).toEqual(['news/hd']);
    expect(given).toStrictEqual(await new DvrClient(upstream).getStream('acme', 'news/hd'));
  });

  it('an answer for another stream than the one asked for is malformed, with status and endpoint', async () => {
    const { upstream } = await start();
    // The simulator answers for news/hd; the parser checks it against the stream the client says it asked for.
    const asIf: DvrBodyParser = async (bytes) => parseDvrBody(bytes, 'live/main');
    const err = await apiFailure(new DvrClient(upstream, asIf).getStream('acme', 'news/hd'));
    expect(err).toMatchObject({
      api: 'dvr-net',
      kind: 'malformed',
      status: 200,
      endpoint: 'GET /app/dvr-net/v1/acme/streams/news/hd',
    });
  });

  it('a parser that fails makes the call malformed, not a crash', async () => {
    const { upstream } = await start();
    const broken: DvrBodyParser = async () => {
      throw new Error('parse worker stopped: exit code 3');
    };
    const err = await apiFailure(new DvrClient(upstream, broken).getStream('acme', 'live/main'));
    expect(err).toMatchObject({ api: 'dvr-net', kind: 'malformed', status: 200 });
    expect(err.message).toContain('parse worker stopped');
  });

  it("another account's stream with this token is refused as auth, the token in no form of the error", async () => {
    const { upstream } = await start(OTHER_TOKEN);
    const err = await apiFailure(new DvrClient(upstream).getStream('acme', 'live/main'));
    expect(err).toMatchObject({ api: 'dvr-net', kind: 'auth', status: 403, retryable: false });
    expectNoSecret(err, [OTHER_TOKEN, ACME_TOKEN]);
  });
});
