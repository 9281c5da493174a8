/**
 * The parse pool (src/offloop/pool.ts) at its documented edges: a body of at least 256 KiB (the default
 * `minBytes`) goes to the worker, one byte less is parsed inline, with the same answer either way; parses in
 * flight together in one worker each get their own answer; a codec's parser is made once (an account's poller
 * asks for it at every start), `traffic` being the traffic codec's; the exporter's two pools, the traffic one
 * with its young generation capped. The worker's life under the pool (crash, idle, recycle, close, missing file):
 * test/offloop/traffic.test.ts and dvr-recordings.test.ts; the worker's codec modules: worker.test.ts.
 *
 * The worker runs from the build (dist/), which `npm test` makes before the tests run.
 */
import { describe, expect, it } from 'vitest';
import { dvrCodec } from '../../src/dvr/codec.js';
import { parseDvrBody } from '../../src/dvr/response.js';
import { ANSWER_POOL, PARSE_WORKER_LIMITS, TRAFFIC_POOL } from '../../src/offloop/pool.js';
import { trafficCodec } from '../../src/offloop/traffic.js';
import { entry, range } from '../helpers/answer-fixtures.js';
import { builtPools } from '../helpers/parse-pools.js';

const { pool } = builtPools();
const utf8 = new TextEncoder();

/** A DVR answer for `host` of exactly `bytes` bytes (JSON white space fills it up). */
function dvrBody(host: string, bytes: number): Uint8Array {
  const many = Array.from({ length: 50 }, (_, i) => range(1_767_000_000 + 20 * i, 15));
  const text = JSON.stringify({
    status: 'Completed',
    stream_name: 'live/main',
    data: [entry(host, {}, { ranges: many })],
  });
  expect(text.length).toBeLessThan(bytes);
  return utf8.encode(text + ' '.repeat(bytes - text.length));
}

describe('ParsePool', () => {
  it('parses a body of 256 KiB in the worker and one byte less inline, to the same answer', async () => {
    const p = pool(ANSWER_POOL, { minBytes: undefined });
    const small = dvrBody('h1', 256 * 1024 - 1);
    const inline = parseDvrBody(small.slice(), 'live/main');
    expect(await p.parser(dvrCodec)(small, 'live/main')).toStrictEqual(inline);
    expect(p.started).toBe(0);
    const big = dvrBody('h1', 256 * 1024);
    expect(await p.parser(dvrCodec)(big, 'live/main')).toStrictEqual(inline);
    expect(p.started).toBe(1);
  });

  it('gives each of many parses in flight together its own answer', async () => {
    const p = pool(ANSWER_POOL);
    const hosts = Array.from({ length: 20 }, (_, i) => `host-${i}`);
    const answers = await Promise.all(
      hosts.map((h) => p.parser(dvrCodec)(dvrBody(h, 4000 + 97 * h.length), 'live/main')),
    );
    expect(answers.map((a) => a.entries[0]!.host)).toEqual(hosts);
    expect(p.started).toBe(1);
  });

  it("makes a codec's parser once; traffic is the traffic codec's", () => {
    const p = pool(TRAFFIC_POOL);
    expect(p.parser(dvrCodec)).toBe(p.parser(dvrCodec));
    expect(p.parser(trafficCodec)).toBe(p.traffic);
  });

  it("the exporter's two pools: the traffic worker's young generation capped, the answer worker's Node's", () => {
    expect(TRAFFIC_POOL).toEqual({
      name: 'traffic parse worker',
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    expect(TRAFFIC_POOL.resourceLimits).toBe(PARSE_WORKER_LIMITS);
    expect(ANSWER_POOL).toEqual({ name: 'answer parse worker' });
  });
});
