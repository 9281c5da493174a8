import { SECRETS } from '../redact.js';

/**
 * The one error type of the API clients. Callers decide what to do from `kind` and `retryable` (docs/architecture.md,
 * "Failures and the token"), never from the message. The message and every field are built without the token: the request
 * helper also scrubs it from any text the API sends back, in case an upstream echoes it.
 */

/** `inventory`: the account list that accounts_discovery reads (src/discovery). */
export type ApiName = 'metrics' | 'dvr-net' | 'recorder-cloud' | 'inventory';

export type ErrorKind =
  /** 429: wait for Retry-After, slow the token's queue down. */
  | 'rate-limited'
  /** 500, 502, 503 and other 5xx: retry with backoff. */
  | 'server'
  /** 504 (execution timeout): ask for less. */
  | 'timeout'
  /** 401, 403: the token or the account is refused. */
  | 'auth'
  /** 400, 404, 405, 409, 422, other 4xx and 3xx: the request is wrong; retrying it unchanged does not help. */
  | 'invalid'
  /** No HTTP answer: reset, refused, DNS, connect/headers/body timeout. */
  | 'network'
  /** An answer that is not the documented shape: non-JSON, truncated, wrong top-level shape, undecodable. */
  | 'malformed'
  /** A body over api.max_body_bytes, as sent or decoded: given up at the limit; traffic asks for less. */
  | 'too_large';

const RETRYABLE: Record<ErrorKind, boolean> = {
  'rate-limited': true,
  server: true,
  timeout: true,
  auth: false,
  invalid: false,
  network: true,
  malformed: true,
  too_large: true,
};

export interface ApiErrorInit {
  api: ApiName;
  kind: ErrorKind;
  status?: number;
  /** `METHOD /path` without the query string; never holds the token. */
  endpoint?: string;
  retryAfterMs?: number;
  description?: string;
  failedHosts?: string[];
  /** A low-level code for network errors (`ECONNRESET`, `UND_ERR_HEADERS_TIMEOUT`, ...). */
  code?: string;
  /** Extra words for the message when there is no description (e.g. the JSON parse problem). */
  detail?: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly api: ApiName;
  readonly kind: ErrorKind;
  /** HTTP status; undefined when no answer came (kind `network`). */
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly endpoint: string | undefined;
  readonly retryAfterMs: number | undefined;
  /** The API's own text: JSON `description`, the dvr-net envelope's, or recorder-cloud's text/plain body. */
  readonly description: string | undefined;
  readonly failedHosts: string[] | undefined;
  readonly code: string | undefined;
  /** The exporter's own words on what was wrong (a JSON parse problem, a wrong top level). */
  readonly detail: string | undefined;

  constructor(init: ApiErrorInit) {
    // Texts an upstream wrote (a description, a parser's quote of the body) may echo a secret: masked here, once.
    super(SECRETS.redact(formatMessage(init), 'error'));
    this.api = init.api;
    this.kind = init.kind;
    this.status = init.status;
    this.retryable = RETRYABLE[init.kind];
    this.endpoint = init.endpoint;
    this.retryAfterMs = init.retryAfterMs;
    this.description = init.description === undefined ? undefined : SECRETS.redact(init.description, 'error');
    this.failedHosts = init.failedHosts?.map((h) => SECRETS.redact(h, 'error'));
    this.code = init.code;
    this.detail = init.detail === undefined ? undefined : SECRETS.redact(init.detail, 'error');
  }

  /** The same error with fields replaced (used to attach the HTTP status to a parser's `malformed`). */
  with(changes: Partial<ApiErrorInit>): ApiError {
    return new ApiError({
      api: this.api,
      kind: this.kind,
      status: this.status,
      endpoint: this.endpoint,
      retryAfterMs: this.retryAfterMs,
      description: this.description,
      failedHosts: this.failedHosts,
      code: this.code,
      detail: this.detail,
      ...changes,
    });
  }
}

function formatMessage(init: ApiErrorInit): string {
  const where = init.endpoint ? ` ${init.endpoint}` : '';
  const what = init.status !== undefined ? `${init.status} ${init.kind}` : init.kind;
  const why = [init.description, init.detail, init.code].filter((s) => s !== undefined && s !== '');
  const hosts = init.failedHosts?.length ? ` (failed hosts: ${init.failedHosts.join(', ')})` : '';
  return `${init.api}${where}: ${what}${why.length > 0 ? `: ${why.join('; ')}` : ''}${hosts}`;
}

/**
 * The kind of a non-2xx HTTP status. A 3xx is not documented and is not followed (the token would go along):
 * it is `invalid`, as a wrong base URL is a configuration problem that retrying does not fix.
 */
export function kindForStatus(status: number): ErrorKind {
  if (status === 429) return 'rate-limited';
  if (status === 504) return 'timeout';
  if (status === 401 || status === 403) return 'auth';
  if (status >= 500) return 'server';
  return 'invalid';
}

/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP date. A date in the past gives 0; anything
 * unreadable gives undefined (the caller falls back to its own backoff).
 */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  // An HTTP date always names a weekday or month in letters; this keeps bare numbers like "-5" out of Date.parse.
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

/**
 * A 401/403: the API refused the token (or the account). Decided on the structured error, never on its text: it is
 * the one signal that a token rotated where `stat` cannot see it must be read again.
 */
export function isRefusal(err: unknown): boolean {
  return isApiError(err) && err.kind === 'auth';
}

/** One line for logs and pages: the HTTP status (or the kind when none came) and the API's own words. */
export function describeError(err: unknown): string {
  return SECRETS.redact(describe(err), 'error');
}

function describe(err: unknown): string {
  if (isApiError(err)) return `${err.status ?? err.kind}: ${err.description ?? err.message}`;
  // Other failures that say what kind they are (a TokenError is `configuration`) keep that word in front.
  const kind = err instanceof Error ? (err as { kind?: unknown }).kind : undefined;
  if (typeof kind === 'string') return `${kind}: ${(err as Error).message}`;
  return err instanceof Error ? err.message : String(err);
}

/** Runs a body parser; its `malformed` ApiError gets the HTTP status and endpoint of the answer it came from. */
export function parseAnswer<T>(status: number, endpoint: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw err instanceof ApiError ? err.with({ status, endpoint }) : err;
  }
}
