/**
 * The upstream an API client is given (src/poll/upstream.ts's Requester), over an HttpClient to one API of the
 * simulator served alone (./sim-api.ts), keeping every request spec the client sends. `closeUpstreams` (afterEach)
 * closes every HttpClient `recordedUpstream` made.
 */
import type { Clock } from '../../src/clock.js';
import { HttpClient, type RequestSpec } from '../../src/http/request.js';
import type { Requester } from '../../src/poll/upstream.js';
import { createRecorderSim } from '../../src/simulator/recorder.js';
import type { SimRecordingSeed } from '../../src/simulator/types.js';
import type { FakeClock } from './fake-clock.js';
import { ACME_TOKEN, startApi, twoAccounts } from './sim-api.js';

const made: HttpClient[] = [];

/**
 * `base`: what startApi returned (the client names the API's path itself, so only its origin is used). `token`: a
 * function is asked at each request (a test changes the token between rounds). `http`: the client under the
 * upstream, for a test's own writes to the simulator.
 */
export function recordedUpstream(
  base: string,
  clock: Clock,
  token: string | (() => string),
): { upstream: Requester; sent: RequestSpec[]; http: HttpClient } {
  const http = new HttpClient({
    baseUrl: new URL(base).origin,
    token: typeof token === 'string' ? () => token : token,
    clock,
  });
  made.push(http);
  const sent: RequestSpec[] = [];
  const upstream: Requester = {
    request: (spec) => {
      sent.push(spec);
      return http.request(spec);
    },
  };
  return { upstream, sent, http };
}

/**
 * The simulator's recorder-cloud API served alone on a fake clock at `t0`, `acme` with the recording settings
 * `seeds`, and a recorded upstream to it with `token` (acme's unless given). closeServed (./sim-api.ts) closes the
 * server, closeUpstreams the client.
 */
export async function recorderUpstream(
  t0: number,
  seeds: SimRecordingSeed[],
  token: string | (() => string) = ACME_TOKEN,
): Promise<{ clock: FakeClock; upstream: Requester; sent: RequestSpec[]; http: HttpClient }> {
  const { clock, base } = await startApi(
    '/app/recorder-cloud/v1',
    t0,
    (c) => twoAccounts(c, 11, { streams: [], recordings: seeds }),
    createRecorderSim,
  );
  return { clock, ...recordedUpstream(base, clock, token) };
}

export async function closeUpstreams(): Promise<void> {
  for (const http of made.splice(0)) await http.close();
}
