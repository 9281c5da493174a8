/**
 * One upstream per API token: the token source, an HTTP client reading it, and the request gate every request of
 * that token passes through. Accounts sharing a token share all of it. The API clients (src/traffic, src/dvr,
 * src/recordings, src/discovery) take it as a value, a Requester, and send through `request`.
 */
import type { Agent } from 'undici';
import type { Clock } from '../clock.js';
import type { TokenSource } from '../config/index.js';
import type { ApiName } from '../http/errors.js';
import { type ApiError, isApiError } from '../http/errors.js';
import { HttpClient, type HttpResult, type RequestSpec, reportingSends } from '../http/request.js';
import { RequestGate } from './request-gate.js';

/**
 * What an API client sends its requests through: an Upstream (gate, token, HTTP), or an HttpClient alone where
 * no gate is wanted (tests of a client). Failures are ApiError values.
 */
export interface Requester {
  /**
   * Sends one request; through an Upstream, it waits its turn in the gate, a 429 pauses and slows the gate, a
   * success lets it climb back. `priority`: see RequestGate.run (default 0).
   */
  request(spec: RequestSpec, priority?: number): Promise<HttpResult>;
  /** True while the gate has a full round of requests waiting for a place (RequestGate.crowded); none: never. */
  crowded?(): boolean;
}

export interface Upstream extends Requester {
  token: TokenSource;
  gate: RequestGate;
  /**
   * `request`'s `signal` (default: the exporter's stop) drops the request while it waits for its turn in the gate;
   * one already sent goes on.
   */
  request(spec: RequestSpec, priority?: number, signal?: AbortSignal): Promise<HttpResult>;
  /**
   * The requests of one account: this upstream's, dropped while they wait for their turn once `signal` (the
   * account's stop) aborts, so an account stopped alone does not wait for the turns of its queued requests.
   */
  forAccount(signal: AbortSignal): Requester;
}

export interface UpstreamOptions {
  baseUrl: string;
  requestsPerSecond: number;
  concurrency: number;
  clock: Clock;
  agent: Agent;
  /** api.timeout: deadline of a whole answer. */
  timeoutMs?: number;
  /** api.max_body_bytes. */
  maxBodyBytes?: number;
  onRequest: (api: ApiName, code: string, seconds: number) => void;
  /** Aborting it drops every request still waiting in the gate (they reject); requests already sent go on. */
  signal?: AbortSignal;
  /** Every failed request, after the gate has seen it (for counting malformed answers). */
  onError?: (err: ApiError) => void;
}

export function createUpstream(token: TokenSource, opts: UpstreamOptions): Upstream {
  const http = new HttpClient({
    baseUrl: opts.baseUrl,
    token: () => token.get(),
    clock: opts.clock,
    dispatcher: opts.agent,
    onRequest: opts.onRequest,
    timeoutMs: opts.timeoutMs,
    maxBodyBytes: opts.maxBodyBytes,
  });
  const gate = new RequestGate({
    requestsPerSecond: opts.requestsPerSecond,
    concurrency: opts.concurrency,
    clock: opts.clock,
  });
  const upstream: Upstream = {
    token,
    gate,
    crowded: () => gate.crowded,
    forAccount(signal: AbortSignal): Requester {
      return {
        request: (spec, priority) => upstream.request(spec, priority, signal),
        crowded: upstream.crowded,
      };
    },
    async request(spec: RequestSpec, priority?: number, signal?: AbortSignal): Promise<HttpResult> {
      for (let attempt = 0; ; attempt++) {
        // No token (a login refused or not done yet): fail before taking a place in the gate.
        token.get();
        let releasedAt: number | undefined;
        let generation = token.generation;
        try {
          const result = await gate.run(
            (ticket) => {
              releasedAt = ticket.releasedAt;
              generation = token.generation;
              return reportingSends(ticket.sent, () => http.request(spec));
            },
            signal ?? opts.signal,
            priority,
          );
          gate.succeeded();
          return result;
        } catch (err) {
          // Refused, but sent with a token that has been renewed since: the same request once more, with the new
          // one (a window in flight across a renewal is neither skipped nor counted twice).
          if (
            isApiError(err) &&
            err.kind === 'auth' &&
            attempt === 0 &&
            token.generation !== undefined &&
            token.generation !== generation
          ) {
            opts.onError?.(err);
            continue;
          }
          if (isApiError(err)) {
            if (err.kind === 'rate-limited') gate.rateLimited(err.retryAfterMs, releasedAt);
            opts.onError?.(err);
          }
          throw err;
        }
      }
    },
  };
  return upstream;
}
