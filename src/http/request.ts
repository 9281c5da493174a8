/**
 * HTTP for the three API clients: one keep-alive undici Agent, the `CDN-AUTH-TOKEN` header, and the mapping of
 * every failure onto an ApiError (./errors.ts). The clients know the API documents; this module knows HTTP.
 *
 * Contracts:
 * - Timeouts default well under a scrape/poll timeout (connect 10 s, headers 20 s, body 20 s); a timeout is a
 *   `network` error, never a hang.
 * - The token is read from `token()` on every request, so a caller that rotates it needs no restart. It is sent
 *   only as a header; it never appears in a URL, a message or an error field (any text from the API that echoes
 *   it is scrubbed).
 * - `onRequest(api, code, seconds)` fires once per request: `code` is the HTTP status as a string, or `error`
 *   when no answer came. Seconds are wall time (performance.now), not the injected clock.
 * - Redirects are not followed: none of the documents shows one, and following one would send the token elsewhere.
 * - Inside `reportingSends(onSent, fn)`, every request `fn` makes calls `onSent` once it is written to a socket
 *   (the request gate's send time; see src/poll/request-gate.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import { type Clock, systemClock } from '../clock.js';
import { redactSecrets } from '../redact.js';
import { ApiError, type ApiName, kindForStatus, parseRetryAfter } from './errors.js';

export type RequestObserver = (api: ApiName, code: string, seconds: number) => void;

export interface AgentOptions {
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** Idle keep-alive sockets are closed after this long (server hints may shorten it). */
  keepAliveTimeoutMs?: number;
  /** Bodies larger than this fail as `network` errors instead of filling memory. */
  maxResponseBytes?: number;
  /** Sockets per origin. */
  connections?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 20_000;
export const DEFAULT_BODY_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export function createAgent(opts: AgentOptions = {}): Agent {
  return new Agent({
    connectTimeout: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    headersTimeout: opts.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    bodyTimeout: opts.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
    maxResponseSize: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    connections: opts.connections ?? null,
  });
}

export interface HttpClientOptions extends AgentOptions {
  /** Scheme, host and optional path prefix, e.g. `https://api.cdn.example`; a trailing slash is ignored. */
  baseUrl: string;
  /** Read on every request. */
  token: () => string;
  /** The clock Retry-After dates are measured against. */
  clock?: Clock;
  onRequest?: RequestObserver;
  /** A dispatcher to use instead of a new Agent (shared pools, tests). It is not closed by close(). */
  dispatcher?: Dispatcher;
}

/** A query parameter; a value of `null` sends the key alone (`?all`). Repeated keys are repeated entries. */
export type QueryParam = readonly [key: string, value: string | null];

export interface RequestSpec {
  api: ApiName;
  method: 'GET' | 'PUT' | 'PATCH' | 'DELETE';
  /** Already-encoded path starting with `/`. */
  path: string;
  query?: readonly QueryParam[];
  /** Sent as JSON. */
  json?: unknown;
  signal?: AbortSignal;
  /**
   * Reads a 2xx body instead of JSON.parse (a big one off the event loop, say); what it resolves to is the result's
   * `body`. A rejection is a `malformed` ApiError with the status and endpoint; an ApiError it throws keeps its
   * kind and words, with the token scrubbed from them.
   */
  decode?: (bytes: Uint8Array) => Promise<unknown>;
}

export interface HttpResult {
  status: number;
  /** The parsed JSON body; undefined for an empty body. */
  body: unknown;
}

/** Longest API text kept in a description. */
const MAX_DESCRIPTION = 500;

export function buildQuery(params: readonly QueryParam[]): string {
  if (params.length === 0) return '';
  const parts = params.map(([k, v]) =>
    v === null ? encodeURIComponent(k) : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`,
  );
  return `?${parts.join('&')}`;
}

const utf8 = new TextDecoder();

const sendReporter = new AsyncLocalStorage<() => void>();

/** Runs `fn`; each request it makes through an HttpClient calls `onSent` when it has been written to a socket. */
export function reportingSends<T>(onSent: () => void, fn: () => Promise<T>): Promise<T> {
  return sendReporter.run(onSent, fn);
}

/** Passes every event on to `inner`, and reports the moment the request was written (`onRequestSent`). */
function reportingHandler(inner: Dispatcher.DispatchHandler, onSent: () => void): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller, context) => inner.onRequestStart?.(controller, context),
    onRequestUpgrade: (controller, status, headers, socket) =>
      inner.onRequestUpgrade?.(controller, status, headers, socket),
    onResponseStart: (controller, status, headers, message) =>
      inner.onResponseStart?.(controller, status, headers, message),
    onResponseData: (controller, chunk) => inner.onResponseData?.(controller, chunk),
    onResponseEnd: (controller, trailers) => inner.onResponseEnd?.(controller, trailers),
    onResponseError: (controller, error) => inner.onResponseError?.(controller, error),
    onResponseStarted: () => inner.onResponseStarted?.(),
    onBodySent: (chunk) => inner.onBodySent?.(chunk),
    onRequestSent: () => {
      onSent();
      inner.onRequestSent?.();
    },
  };
}

const reportSends: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const onSent = sendReporter.getStore();
  return dispatch(opts, onSent ? reportingHandler(handler, onSent) : handler);
};

export class HttpClient {
  private readonly base: string;
  /** What requests go through: the dispatcher below, with send reporting. */
  private readonly dispatcher: Dispatcher;
  private readonly own: Dispatcher | undefined;
  private readonly clock: Clock;

  constructor(private readonly opts: HttpClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.clock = opts.clock ?? systemClock;
    this.own = opts.dispatcher === undefined ? createAgent(opts) : undefined;
    this.dispatcher = (opts.dispatcher ?? this.own!).compose(reportSends);
  }

  /**
   * Sends one request. Resolves for 2xx with the JSON body (undefined when empty); throws ApiError for
   * everything else, including a 2xx body that is not JSON (`malformed`, with its status).
   */
  async request(spec: RequestSpec): Promise<HttpResult> {
    const token = this.opts.token();
    const endpoint = `${spec.method} ${spec.path}`;
    const url = `${this.base}${spec.path}${buildQuery(spec.query ?? [])}`;
    const headers: Record<string, string> = { 'cdn-auth-token': token, accept: 'application/json' };
    let body: string | undefined;
    if (spec.json !== undefined) {
      body = JSON.stringify(spec.json);
      headers['content-type'] = 'application/json';
    }
    const started = performance.now();
    const observe = (code: string) =>
      this.opts.onRequest?.(spec.api, code, (performance.now() - started) / 1000);

    let status: number | undefined;
    let contentType: string;
    let retryAfter: string | undefined;
    let bytes: Uint8Array;
    try {
      const res = await undiciRequest(url, {
        method: spec.method,
        headers,
        body,
        dispatcher: this.dispatcher,
        signal: spec.signal,
      });
      status = res.statusCode;
      contentType = headerValue(res.headers['content-type']) ?? '';
      retryAfter = headerValue(res.headers['retry-after']);
      // A connection that breaks off after the headers (reset, body timeout) is a network failure like any other.
      bytes = new Uint8Array(await res.body.arrayBuffer());
    } catch (err) {
      observe('error');
      const detail = scrub(errorText(err), token);
      throw new ApiError({
        api: spec.api,
        kind: 'network',
        endpoint,
        detail: status === undefined ? detail : `body cut off after ${status}: ${detail}`,
        code: errorCode(err),
      });
    }
    observe(String(status));

    if (status >= 200 && status < 300 && spec.decode) {
      try {
        return { status, body: await spec.decode(bytes) };
      } catch (err) {
        const detail = scrub(err instanceof ApiError ? (err.detail ?? '') : errorText(err), token);
        if (err instanceof ApiError) throw err.with({ status, endpoint, detail });
        throw new ApiError({ api: spec.api, kind: 'malformed', status, endpoint, detail });
      }
    }
    const text = utf8.decode(bytes);
    if (status >= 200 && status < 300) {
      if (text.trim() === '') return { status, body: undefined };
      try {
        return { status, body: JSON.parse(text) as unknown };
      } catch (err) {
        throw new ApiError({
          api: spec.api,
          kind: 'malformed',
          status,
          endpoint,
          detail: `body is not JSON (${scrub(errorText(err), token)})`,
        });
      }
    }
    throw this.failure(spec.api, endpoint, status, contentType, retryAfter, text, token);
  }

  private failure(
    api: ApiName,
    endpoint: string,
    status: number,
    contentType: string,
    retryAfter: string | undefined,
    text: string,
    token: string,
  ): ApiError {
    const { description, failedHosts } = describeBody(contentType, text);
    return new ApiError({
      api,
      kind: kindForStatus(status),
      status,
      endpoint,
      retryAfterMs: parseRetryAfter(retryAfter, this.clock.now()),
      description: description === undefined ? undefined : scrub(description, token),
      failedHosts: failedHosts?.map((h) => scrub(h, token)),
    });
  }

  async close(): Promise<void> {
    await this.own?.close();
  }
}

/**
 * The API's own words from an error body: JSON `description` (metrics, dvr-net envelope), `failed_hosts`
 * (dvr-net DELETE), recorder-cloud's `{errors}` (422: shape not documented, kept as compact JSON), or a
 * text/plain body (recorder-cloud 4xx). An HTML body (recorder-cloud 500) says nothing useful and is dropped.
 */
function describeBody(contentType: string, text: string): { description?: string; failedHosts?: string[] } {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  if (/json/i.test(contentType) || /^[{[]/.test(trimmed)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      return /html/i.test(contentType) ? {} : { description: clip(trimmed) };
    }
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      const o = parsed as Record<string, unknown>;
      const out: { description?: string; failedHosts?: string[] } = {};
      if (typeof o.description === 'string') out.description = clip(o.description);
      else if (o.errors !== undefined) out.description = clip(JSON.stringify(o.errors));
      else if (typeof o.status === 'string' && !Array.isArray(o.failed_hosts))
        out.description = clip(o.status);
      if (Array.isArray(o.failed_hosts)) out.failedHosts = o.failed_hosts.map(String);
      return out;
    }
    return { description: clip(JSON.stringify(parsed)) };
  }
  if (/html/i.test(contentType)) return {};
  return { description: clip(trimmed) };
}

function clip(s: string): string {
  return s.length > MAX_DESCRIPTION ? `${s.slice(0, MAX_DESCRIPTION)}…` : s;
}

/** Replaces the token anywhere in a text (an upstream that echoes it must not carry it into our errors). */
function scrub(s: string, token: string): string {
  return redactSecrets(s, [token]);
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: unknown }).cause;
  return cause === err ? undefined : errorCode(cause);
}
