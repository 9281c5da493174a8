/**
 * The upstream an API client is given (src/poll/upstream.ts's Requester), over an HttpClient to one API of the
 * simulator served alone (./sim-api.ts), keeping every request spec the client sends. `closeUpstreams` (afterEach)
 * closes every HttpClient `recordedUpstream` made.
 */
import type { Clock } from '../../src/clock.js';
import { HttpClient, type RequestSpec } from '../../src/http/request.js';
import type { Requester } from '../../src/poll/upstream.js';

const made: HttpClient[] = [];

/** `base`: what startApi returned (the client names the API's path itself, so only its origin is used). */
export function recordedUpstream(
  base: string,
  clock: Clock,
  token: string,
): { upstream: Requester; sent: RequestSpec[] } {
  const http = new HttpClient({ baseUrl: new URL(base).origin, token: () => token, clock });
  made.push(http);
  const sent: RequestSpec[] = [];
  const upstream: Requester = {
    request: (spec) => {
      sent.push(spec);
      return http.request(spec);
    },
  };
  return { upstream, sent };
}

export async function closeUpstreams(): Promise<void> {
  for (const http of made.splice(0)) await http.close();
}
