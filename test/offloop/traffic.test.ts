/**
 * Big traffic answers are parsed in a worker thread and come back packed. Whatever path an answer takes, the
 * exporter must see the same records, and count the same series, as if it had been parsed inline; a bad body is
 * the same `malformed` error; a worker that dies costs only the parses it held.
 *
 * The worker runs from the build (dist/), which `npm test` makes before the tests run.
 */
import { describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../src/api/vocabulary.js';
import { MINUTE } from '../../src/clock.js';
import { ApiError } from '../../src/http/errors.js';
import { type ParsePoolOptions, TRAFFIC_POOL } from '../../src/offloop/pool.js';
import {
  packTrafficResponse,
  unpackTrafficResponse,
  unpackTrafficResponseSliced,
} from '../../src/offloop/traffic.js';
import { metricValues } from '../../src/simulator/traffic.js';
import { TrafficModel } from '../../src/simulator/traffic-model.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { parseTrafficBody } from '../../src/traffic/parse.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { BUILT_WORKER, builtPools } from '../helpers/parse-pools.js';
import { plainTraffic } from '../helpers/plain-traffic.js';

const T0 = Date.UTC(2026, 0, 1, 18, 0);
const OPTS = { account: 'acme', breakdown: 'resource' as const };
const utf8 = new TextEncoder();

/** A /resources answer as the simulator builds it; `shape` picks how request times appear. */
function body(resources: number, shape: 'object' | 'flat' | 'number' = 'object'): Uint8Array {
  const model = new TrafficModel(5, {});
  const data = Array.from({ length: resources }, (_, i) => {
    const id = String(5000 + i);
    const el: Record<string, unknown> = {
      resource: id,
      resource_name: `r-${i}`,
      ...metricValues(model.totals('acme', [id], T0, T0 + MINUTE), 60, METRIC_NAMES, shape),
    };
    if (i % 3 === 0) el.cname = `r${i}.cdn.example`; // absent on some: labels are optional
    if (i % 7 === 0) delete el.edge_status_404; // key lists differ between records
    if (i === 4) el.edge_status_200 = 'many'; // a bad field: an issue, the rest kept
    return el;
  });
  return utf8.encode(JSON.stringify({ account: 'acme', metrics: METRIC_NAMES, data, extra: 1 }));
}

/** The exposition a response gives when counted into a fresh store. */
async function exposed(r: TrafficResponse): Promise<string> {
  const store = new SeriesStore();
  new TrafficMapping(createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true }), {
    metrics: [],
    resources: [],
  }).apply('acme', T0, T0 + MINUTE, r, T0 + 2 * MINUTE);
  await store.refresh();
  return store.render('text').toString();
}

const { pool, crashingWorker } = builtPools();
const workerParser = (opts: ParsePoolOptions = {}) => pool(TRAFFIC_POOL, opts);

describe('packed responses', () => {
  it.each(['object', 'flat', 'number'] as const)(
    'unpack(pack(r)) reads as r (request times as %s)',
    async (shape) => {
      const r = await parseTrafficBody(body(60, shape), OPTS);
      const back = unpackTrafficResponse(packTrafficResponse(r));
      expect(plainTraffic(back)).toEqual(plainTraffic(r));
      expect(await exposed(back)).toBe(await exposed(r));
    },
  );

  it('unpacks in slices to the same answer, yielding between them', async () => {
    const r = await parseTrafficBody(body(2000, 'object'), OPTS);
    const packed = packTrafficResponse(r);
    let clock = 0;
    let yields = 0;
    const back = await unpackTrafficResponseSliced(packed, {
      sliceMs: 1,
      // Every look at the time costs 1 ms: each look (256 records) ends a slice.
      now: () => clock++,
      yieldToLoop: async () => {
        yields++;
      },
    });
    expect(plainTraffic(back)).toEqual(plainTraffic(unpackTrafficResponse(packed)));
    expect(yields).toBe(Math.ceil(2000 / 256) - 1);
  });

  it('keeps an answer without records, and records without resource or with nothing but labels', () => {
    const r: TrafficResponse = {
      account: 'acme',
      start: T0,
      end: T0 + MINUTE,
      metrics: [],
      records: [
        {
          edge: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
          origin: {
            codes: new Map([['200', 0]]),
            classes: new Map(),
            requestTimeSeconds: new Map(),
            requests: 0,
          },
        },
      ],
      issues: [{ path: 'data[1]', problem: 'expected an object, got a string' }],
      unknownKeys: ['extra'],
    };
    expect(plainTraffic(unpackTrafficResponse(packTrafficResponse(r)))).toEqual(plainTraffic(r));
    const empty = { ...r, records: [] };
    expect(plainTraffic(unpackTrafficResponse(packTrafficResponse(empty)))).toEqual(plainTraffic(empty));
  });
});

describe('the traffic parse pool', () => {
  it('gives what inline parsing gives, and the same series when counted', async () => {
    const p = workerParser();
    const bytes = body(400);
    const inline = await parseTrafficBody(bytes.slice(), OPTS);
    const viaWorker = await p.traffic(bytes, OPTS);
    expect(p.started).toBe(1);
    expect(viaWorker.issues.map((i) => i.path)).toEqual(['data[4].edge_status_200']);
    expect(viaWorker.unknownKeys).toEqual(['extra']);
    expect(plainTraffic(viaWorker)).toEqual(plainTraffic(inline));
    expect(await exposed(viaWorker)).toBe(await exposed(inline));
  });

  it('parses small bodies inline and big ones in the worker', async () => {
    const p = workerParser({ minBytes: 50_000 });
    await p.traffic(body(2), OPTS);
    expect(p.started).toBe(0);
    await p.traffic(body(200), OPTS);
    expect(p.started).toBe(1);
  });

  it('refuses a body that is not JSON, or not of the documented shape, as malformed with the reason', async () => {
    const p = workerParser();
    const notJson = p.traffic(utf8.encode('{"data": [1, 2'), OPTS);
    await expect(notJson).rejects.toBeInstanceOf(ApiError);
    await expect(notJson).rejects.toMatchObject({ kind: 'malformed', api: 'metrics' });
    await expect(notJson).rejects.toThrow(/body is not JSON/);
    await expect(p.traffic(utf8.encode('[1, 2]'), OPTS)).rejects.toMatchObject({
      kind: 'malformed',
      detail: expect.stringMatching(/top level/),
    });
    // The worker is still there for the next answer.
    expect((await p.traffic(body(3), OPTS)).records).toHaveLength(3);
    expect(p.started).toBe(1);
  });

  it('fails only the parses a dying worker held, then starts a new one', async () => {
    const p = workerParser({ workerUrl: crashingWorker() });
    expect((await p.traffic(body(2), OPTS)).records).toHaveLength(2);
    await expect(p.traffic(utf8.encode('"CRASH"'), OPTS)).rejects.toThrow(
      /traffic parse worker stopped: exit code 3/,
    );
    expect((await p.traffic(body(2), OPTS)).records).toHaveLength(2);
    expect(p.started).toBe(2);
  });

  it('recycle drops the idle worker at once, a busy one after its last parse, and the next body starts a new one', async () => {
    const p = workerParser();
    expect((await p.traffic(body(2), OPTS)).records).toHaveLength(2);
    p.recycle();
    expect((await p.traffic(body(3), OPTS)).records).toHaveLength(3);
    expect(p.started).toBe(2);
    // Asked while two parses are in flight: both complete in the worker that had them, then it goes.
    const inFlight = [p.traffic(body(40), OPTS), p.traffic(body(41), OPTS)];
    p.recycle();
    expect((await Promise.all(inFlight)).map((r) => r.records.length)).toEqual([40, 41]);
    expect(p.started).toBe(2);
    expect((await p.traffic(body(4), OPTS)).records).toHaveLength(4);
    expect(p.started).toBe(3);
    // Nothing to drop: no worker is started by it.
    await p.close();
    p.recycle();
    expect(p.started).toBe(3);
  });

  it('parses inline once closed, and when its worker file is missing (saying so once)', async () => {
    const p = workerParser();
    await p.close();
    expect((await p.traffic(body(2), OPTS)).records).toHaveLength(2);
    expect(p.started).toBe(0);

    const { log, lines } = captureLog();
    const missing = workerParser({ workerUrl: new URL('./missing-worker.js', BUILT_WORKER), log });
    expect((await missing.traffic(body(2), OPTS)).records).toHaveLength(2);
    expect(missing.started).toBe(0);
    expect(lines.filter((l) => l.includes('traffic parse worker not found'))).toHaveLength(1);
  });

  it('stops a worker idle for idleMs, and starts a new one for the next big body', async () => {
    const clock = new FakeClock();
    const p = workerParser({ idleMs: 5000, clock });
    expect((await p.traffic(body(3), OPTS)).records).toHaveLength(3);
    await clock.advance(4999);
    expect(p.retired).toBe(0);
    // A parse within idleMs keeps the worker, and its idle time starts again from its answer.
    expect((await p.traffic(body(2), OPTS)).records).toHaveLength(2);
    expect(p.started).toBe(1);
    await clock.advance(4999);
    expect(p.retired).toBe(0);
    await clock.advance(1);
    expect(p.retired).toBe(1);
    const again = await p.traffic(body(4), OPTS);
    expect(again.records).toHaveLength(4);
    expect(plainTraffic(again)).toEqual(plainTraffic(await parseTrafficBody(body(4), OPTS)));
    expect(p.started).toBe(2);
  });

  it('does not stop a worker while it still holds a parse', async () => {
    const clock = new FakeClock();
    const p = workerParser({ idleMs: 0, clock });
    const a = p.traffic(body(300), OPTS);
    const b = p.traffic(body(5), OPTS);
    expect((await a).records).toHaveLength(300);
    await clock.advance(0);
    expect((await b).records).toHaveLength(5);
    expect(p.started).toBe(1);
    await clock.advance(0);
    expect(p.retired).toBe(1);
  });
});
