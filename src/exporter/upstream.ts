/**
 * One upstream per API token: the token source, an HTTP client reading it, the request gate every request of that
 * token passes through, and the three API clients. Accounts sharing a token share all of it.
 */
import type { Agent } from 'undici';
import type { Clock } from '../clock.js';
import type { TokenSource } from '../config/index.js';
import { InventoryClient } from '../discovery/client.js';
import { type DvrBodyParser, DvrClient } from '../dvr/client.js';
import type { ApiName } from '../http/errors.js';
import { type ApiError, isApiError } from '../http/errors.js';
import { HttpClient, reportingSends } from '../http/request.js';
import { RequestGate } from '../poll/request-gate.js';
import { RecorderClient, type RecordingsBodyParser } from '../recordings/client.js';
import { MetricsClient, type TrafficBodyParser } from '../traffic/client.js';

export interface Upstream {
  token: TokenSource;
  gate: RequestGate;
  metrics: MetricsClient;
  dvr: DvrClient;
  recorder: RecorderClient;
  inventory: InventoryClient;
  /**
   * Runs one request through the gate; a 429 pauses and slows the gate, a success lets it climb back. `priority`:
   * see RequestGate.run (default 0).
   */
  call<T>(fn: () => Promise<T>, priority?: number): Promise<T>;
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
  /** Reads traffic answers (default: inline). One is shared by every upstream: see src/offloop/pool.ts. */
  parseTraffic?: TrafficBodyParser;
  /** Read DVR and recordings answers (default: inline). One is shared by every upstream: src/offloop/pool.ts. */
  parseDvr?: DvrBodyParser;
  parseRecordings?: RecordingsBodyParser;
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
  return {
    token,
    gate,
    metrics: new MetricsClient(http, opts.parseTraffic),
    dvr: new DvrClient(http, opts.parseDvr),
    recorder: new RecorderClient(http, opts.parseRecordings),
    inventory: new InventoryClient(http),
    async call<T>(fn: () => Promise<T>, priority?: number): Promise<T> {
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
              return reportingSends(ticket.sent, fn);
            },
            opts.signal,
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
}
