/**
 * HTTP for the three API clients: one keep-alive undici Agent, the `CDN-AUTH-TOKEN` header, and the mapping of
 * every failure onto an ApiError (./errors.ts). The clients know the API documents; this module knows HTTP.
 *
 * Contracts:
 * - Timeouts default well under a scrape/poll timeout (connect 10 s, headers 20 s, body idle 20 s); a timeout is a
 *   `network` error, never a hang. Above those, `timeoutMs` (api.timeout) is one deadline for the WHOLE answer,
 *   headers and body together: undici's body timeout is per chunk, so a body trickled a byte at a time would
 *   never end without it. Missing it is a `network` error with code `ANSWER_TIMEOUT`.
 * - A body over `maxBodyBytes` (api.max_body_bytes), as sent or once decoded, is a `too_large` error; it is read
 *   as a stream and given up at the limit, never buffered whole.
 * - Requests ask for `Accept-Encoding: gzip, deflate, br` and the body is decoded as its `Content-Encoding` says
 *   (undici does not decode by itself). A body that does not decode is `malformed`.
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
import { BodyProblem, readBody } from './body.js';
import { ApiError, type ApiName, kindForStatus, parseRetryAfter } from './errors.js';
import { parseBoundedJson } from './parse.js';

export type RequestObserver = (api: ApiName, code: string, seconds: number) => void;

export interface AgentOptions {
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** Idle keep-alive sockets are closed after this long (server hints may shorten it). */
  keepAliveTimeoutMs?: number;
  /** Sockets per origin. */
  connections?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 20_000;
export const DEFAULT_BODY_TIMEOUT_MS = 20_000;
/** api.timeout's default. */
export const DEFAULT_ANSWER_TIMEOUT_MS = 30_000;
/** api.max_body_bytes' default: the largest plausible traffic answer (15k resources) is about 22 MB. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

export function createAgent(opts: AgentOptions = {}): Agent {
  return new Agent({
    connectTimeout: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    headersTimeout: opts.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    bodyTimeout: opts.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
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
  /** Deadline of a whole answer (connect, headers and body), real milliseconds. Default 30 s. */
  timeoutMs?: number;
  /** Largest body read, as sent and once decoded. Default 64 MiB. */
  maxBodyBytes?: number;
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

/** One request to send through `readAnswer`: the HTTP part of every upstream answer, the login's included. */
export interface AnswerRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** Undefined: undici's global dispatcher. */
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
  /** Deadline of the whole answer, headers and body (real ms). */
  timeoutMs: number;
  /** Largest body read, as sent and once decoded. */
  maxBodyBytes: number;
  /** The setting that sets `maxBodyBytes`, for messages (`api.max_body_bytes`). */
  limitName: string;
}

/** An answer read whole: its status, the headers callers use, and the body as decoded. */
export interface RawAnswer {
  status: number;
  contentType: string;
  retryAfter: string | undefined;
  bytes: Uint8Array;
}

/**
 * Why `readAnswer` has no answer: `network` (no answer, cut off, or the deadline missed: code `ANSWER_TIMEOUT`),
 * `too_large` or `malformed` (a body given up on for what it is). `message` is our words; the caller scrubs it.
 */
export class AnswerFailure extends Error {
  constructor(
    readonly kind: 'network' | 'too_large' | 'malformed',
    message: string,
    readonly status?: number,
    readonly code?: string,
    readonly contentType = '',
    readonly retryAfter?: string,
  ) {
    super(message);
  }
}

/**
 * Sends one request and reads its answer whole, bounded: one deadline for the whole answer (`timeoutMs`), the
 * body read as a stream and given up at `maxBodyBytes` as sent or once decoded. Every upstream answer goes
 * through here: the API clients (HttpClient) and the login (src/auth/login.ts) alike. Throws AnswerFailure only.
 */
export async function readAnswer(req: AnswerRequest): Promise<RawAnswer> {
  let status: number | undefined;
  let contentType = '';
  let retryAfter: string | undefined;
  const { timeoutMs } = req;
  // One controller per request, aborted by the deadline or the caller's signal; its listener and timer are
  // removed when the answer is in, so a long-lived caller signal collects nothing.
  const controller = new AbortController();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    controller.abort(new Error(`whole answer not received within ${timeoutMs}ms`));
  }, timeoutMs);
  timer.unref();
  const callerAborted = () => controller.abort(req.signal?.reason);
  if (req.signal?.aborted) callerAborted();
  else req.signal?.addEventListener('abort', callerAborted, { once: true });
  try {
    const res = await undiciRequest(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      dispatcher: req.dispatcher,
      signal: controller.signal,
    });
    status = res.statusCode;
    contentType = headerValue(res.headers['content-type']) ?? '';
    retryAfter = headerValue(res.headers['retry-after']);
    // A connection that breaks off after the headers (reset, body timeout) is a network failure like any other.
    const bytes = await readBody(
      res.body,
      headerValue(res.headers['content-encoding']),
      req.maxBodyBytes,
      req.limitName,
      headerValue(res.headers['content-length']),
    );
    return { status, contentType, retryAfter, bytes };
  } catch (err) {
    if (err instanceof BodyProblem)
      throw new AnswerFailure(err.kind, err.message, status, undefined, contentType, retryAfter);
    const detail = late ? `whole answer not received within ${timeoutMs}ms (api.timeout)` : errorText(err);
    throw new AnswerFailure(
      'network',
      status === undefined ? detail : `body cut off after ${status}: ${detail}`,
      status,
      late ? 'ANSWER_TIMEOUT' : errorCode(err),
    );
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', callerAborted);
  }
}

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
    const headers: Record<string, string> = {
      'cdn-auth-token': token,
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
    };
    let body: string | undefined;
    if (spec.json !== undefined) {
      body = JSON.stringify(spec.json);
      headers['content-type'] = 'application/json';
    }
    const started = performance.now();
    const observe = (code: string) =>
      this.opts.onRequest?.(spec.api, code, (performance.now() - started) / 1000);

    let answer: RawAnswer;
    try {
      answer = await readAnswer({
        url,
        method: spec.method,
        headers,
        body,
        dispatcher: this.dispatcher,
        signal: spec.signal,
        timeoutMs: this.opts.timeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
        maxBodyBytes: this.opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
        limitName: 'api.max_body_bytes',
      });
    } catch (err) {
      if (!(err instanceof AnswerFailure)) throw err;
      const { status } = err;
      observe(err.kind === 'network' ? 'error' : String(status));
      // An error answer whose body cannot be read is still that status's error, without the API's words.
      if (err.kind !== 'network' && status !== undefined && (status < 200 || status >= 300))
        throw this.failure(spec.api, endpoint, status, err.contentType, err.retryAfter, '', token);
      throw new ApiError({
        api: spec.api,
        kind: err.kind,
        status: err.kind === 'network' ? undefined : status,
        endpoint,
        detail: scrub(err.message, token),
        code: err.code,
      });
    }
    const { status, contentType, retryAfter, bytes } = answer;
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
        return { status, body: parseBoundedJson(text) };
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
      parsed = parseBoundedJson(trimmed);
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
