/**
 * The traffic metrics API's client (src/traffic/client.ts): the request it makes for a window (endpoint by
 * breakdown, the documented query, whole-minute UTC times) and the answer it gives back, against the simulator on
 * loopback, whose truth is exact; and what it hands its Requester (the gate's priority, the decode) and its parser.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { HttpClient, type RequestSpec } from '../../src/http/request.js';
import type { Requester } from '../../src/poll/upstream.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { formatApiTime, MetricsClient, type TrafficBodyParser } from '../../src/traffic/client.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0);
let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function simulator() {
  const clock = new FakeClock(T0);
  sim = await startSimulator({ seed: 11, clock });
  const http = new HttpClient({ baseUrl: sim.url, token: () => 'demo-token', clock });
  return { sim, clock, client: new MetricsClient(http) };
}

/** The codes with requests (an answer may list a documented code with 0). */
const nonZero = (codes: Record<string, number>) =>
  Object.fromEntries(Object.entries(codes).filter(([, n]) => n > 0));

describe('formatApiTime', () => {
  it('writes the API time format, UTC and without a zone suffix', () => {
    expect(formatApiTime(Date.UTC(2026, 0, 5, 3, 7))).toBe('2026-01-05T03:07:00');
    expect(formatApiTime(new Date(Date.UTC(999, 11, 31, 23, 59)))).toBe('0999-12-31T23:59:00');
  });

  it('refuses a time that is not a whole minute, rather than round it (a rounded window counts minutes twice)', () => {
    expect(() => formatApiTime(T0 + 1000)).toThrow(/whole minutes \(seconds 00\): 2026-11-28T12:00:01.000Z/);
    expect(() => formatApiTime(T0 + 1)).toThrow(RangeError);
    expect(() => formatApiTime(Number.NaN)).toThrow(/not a valid time/);
    expect(() => formatApiTime(new Date('nonsense'))).toThrow(/not a valid time/);
  });
});

describe('MetricsClient.fetchTraffic against the simulator', () => {
  it('asks the per-resource endpoint for a window and gives back each resource, exact to the truth', async () => {
    const { sim, clock, client } = await simulator();
    clock.set(T0 + 30 * MINUTE);
    const start = T0;
    const end = T0 + 5 * MINUTE;
    const answer = await client.fetchTraffic({ account: 'demo', start, end, breakdown: 'resource' });

    const request = sim.requestLog.at(-1)!;
    expect(request.path).toBe('/app/metrics/v1/resources');
    expect(request.query).toEqual({
      account: ['demo'],
      start: ['2026-11-28T12:00:00'],
      end: ['2026-11-28T12:05:00'],
    });
    expect(answer.account).toBe('demo');
    expect([answer.start, answer.end]).toEqual([start, end]);
    const resources = sim.accounts.find((a) => a.name === 'demo')!.resources.map((r) => r.id);
    expect(answer.records.map((r) => r.resource).sort()).toEqual([...resources].sort());
    // As the API reports those minutes now (late data still to come is not in the answer).
    for (const r of answer.records) {
      const truth = sim.truth('demo', r.resource, start, end, { asOf: clock.now() });
      expect(r.edge.requests, `edge requests of ${r.resource}`).toBe(truth.edge.requests);
      expect(nonZero(Object.fromEntries(r.edge.codes)), `edge codes of ${r.resource}`).toEqual(
        nonZero(truth.edge.codes),
      );
      expect(r.origin.requests, `origin requests of ${r.resource}`).toBe(truth.origin.requests);
    }
    expect(answer.issues).toEqual([]);
  });

  it('asks the account endpoint for an account breakdown, with each metric and the one resource asked for', async () => {
    const { sim, clock, client } = await simulator();
    clock.set(T0 + 30 * MINUTE);
    const metrics = ['edge_requests_total', 'edge_status_200'];
    const answer = await client.fetchTraffic({
      account: 'demo',
      start: new Date(T0),
      end: new Date(T0 + MINUTE),
      metrics,
      resource: '1001',
      breakdown: 'account',
    });
    const request = sim.requestLog.at(-1)!;
    expect(request.path).toBe('/app/metrics/v1/');
    expect(request.query.metric).toEqual(metrics);
    expect(request.query.resource).toEqual(['1001']);
    expect(answer.records).toHaveLength(1);
    expect(answer.records[0]!.resource).toBeUndefined();
    const truth = sim.truth('demo', '1001', T0, T0 + MINUTE, { asOf: clock.now() });
    expect(answer.records[0]!.edge.requests).toBe(truth.edge.requests);
    expect(answer.records[0]!.edge.codes.get('200')).toBe(truth.edge.codes['200']);
    // Only what was asked for: no other side's or code's numbers.
    expect(answer.records[0]!.origin.requests).toBeUndefined();
    expect([...answer.records[0]!.edge.codes.keys()]).toEqual(['200']);
  });

  it('refuses a window off the minute before anything is sent', async () => {
    const { sim, client } = await simulator();
    await expect(
      client.fetchTraffic({ account: 'demo', start: T0 + 500, end: T0 + MINUTE, breakdown: 'resource' }),
    ).rejects.toThrow(RangeError);
    expect(sim.requestLog).toEqual([]);
  });
});

describe('MetricsClient and its Requester', () => {
  it("hands the gate's priority on, and reads the 2xx body with its parser, told the window and breakdown", async () => {
    const sent: { spec: RequestSpec; priority?: number }[] = [];
    const parsed: unknown[] = [];
    const bytes = new TextEncoder().encode('{"any":"body"}');
    const canned: TrafficResponse = {
      account: 'acme',
      metrics: [],
      records: [],
      issues: [],
      unknownKeys: [],
    };
    const requester: Requester = {
      async request(spec, priority) {
        sent.push({ spec, priority });
        return { status: 200, body: await spec.decode!(bytes) };
      },
    };
    const parser: TrafficBodyParser = async (b, opts) => {
      parsed.push({ text: new TextDecoder().decode(b), ...opts });
      return canned;
    };
    const client = new MetricsClient(requester, parser);
    const got = await client.fetchTraffic(
      { account: 'acme', start: T0, end: T0 + 2 * MINUTE, breakdown: 'account' },
      7,
    );
    expect(got).toBe(canned);
    expect(sent.map((s) => [s.spec.api, s.spec.method, s.spec.path, s.priority])).toEqual([
      ['metrics', 'GET', '/app/metrics/v1/', 7],
    ]);
    expect(parsed).toEqual([
      { text: '{"any":"body"}', account: 'acme', breakdown: 'account', start: T0, end: T0 + 2 * MINUTE },
    ]);
  });
});
