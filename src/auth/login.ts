/**
 * The login request (docs/upstream-api.md, "Login"): `POST /app/oauth/v1/token/` with the form fields `username`
 * and `password`, answered with a token and its lifetime.
 *
 * The API documents do not show this endpoint; what is publicly known is thin, so the answer is read tolerantly:
 * - the token is `token` or `auth_token` (one public page names each), at the top level or inside a `data` object;
 * - `lifetime` is milliseconds (21,599,000 is just under 6 hours), a number or a numeric string; absent or
 *   unreadable, the documented 6 hours is assumed and the answer is reported as incomplete (`lifetimeAssumed`);
 * - `status`, when present (a number or a numeric string), must be 200: any other value is a refused login even
 *   under HTTP 200 (the CDN's own Terraform provider checks this field, not only the HTTP code);
 * - HTTP 401, 403, 400 and other 4xx (but 429) are refused logins: retrying them unchanged cannot help and every
 *   wrong password counts towards the user's ban. 429, 5xx, a network failure and a 200 without a usable token
 *   are errors that are retried with backoff.
 *
 * Bounds (a hostile or broken login endpoint must not take the exporter down):
 * - the answer is read like every upstream answer (src/http/request.ts `readAnswer`): within `api.timeout` whole,
 *   and at most LOGIN_MAX_BYTES (a real answer is about 150 bytes), else it is an error retried with backoff;
 * - a token longer than MAX_TOKEN_LENGTH, or with a character other than visible ASCII (a header cannot carry CR,
 *   LF, NUL, spaces or non-ASCII), is `refused` with `unusable: true`: the endpoint says yes with something no
 *   request can use, and retrying at once would not help (the caller retries on the ban-safe schedule);
 * - `lifetime` is clamped at the top only, to MAX_LIFETIME_MS (`lifetimeClamped` then): 1e16 ms is a date JavaScript
 *   cannot represent. A short lifetime is believed as stated: raising it would send the token after the CDN has
 *   expired it. The guard against a login storm is the API's limit of 20 logins a minute, kept by the caller
 *   (./login-token.ts), which also reports a lifetime too short for that limit.
 *
 * Nothing here puts the password or the token into an error: messages carry the HTTP status and our own words.
 */
import type { Dispatcher } from 'undici';
import { parseRetryAfter } from '../http/errors.js';
import { parseBoundedJson } from '../http/parse.js';
import { AnswerFailure, DEFAULT_ANSWER_TIMEOUT_MS, readAnswer } from '../http/request.js';

export const LOGIN_PATH = '/app/oauth/v1/token/';
/** The documented validity of a token, assumed when an answer gives no readable `lifetime`. */
export const DEFAULT_LIFETIME_MS = 6 * 3600_000;
/** Largest login answer read (a real one is about 150 bytes). */
export const LOGIN_MAX_BYTES = 64 * 1024;
/** Longest token accepted (a real one is 35 characters); the secret registry costs about 1 KiB per character. */
export const MAX_TOKEN_LENGTH = 8 * 1024;
/** `lifetime` is clamped to at most this: 30 days, far beyond the documented 6 hours, a date JavaScript holds. */
export const MAX_LIFETIME_MS = 30 * 24 * 3600_000;
/** What a header value may carry of a token: visible ASCII, no space. */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

export type LoginOutcome =
  | {
      ok: true;
      token: string;
      lifetimeMs: number;
      lifetimeAssumed: boolean;
      /** The answer's lifetime (ms) when it was out of range and `lifetimeMs` is the clamped one. */
      lifetimeClamped?: number;
    }
  | {
      ok: false;
      /** `refused`: the API said no to these credentials; `error`: no usable answer (retry with backoff). */
      result: 'refused' | 'error';
      /** Refused because the token given cannot be used (too long, characters no header may carry). */
      unusable?: boolean;
      /** HTTP status, or the body's `status` when that is what refused. Undefined: no answer. */
      status?: number;
      retryAfterMs?: number;
      /** Our words on what happened; never the password or a token. */
      detail: string;
    };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function numberOf(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v)) return Number(v);
  return undefined;
}

function tokenOf(o: Record<string, unknown>): string | undefined {
  for (const key of ['token', 'auth_token']) {
    const v = o[key];
    if (typeof v === 'string' && v.trim() !== '') return v.trim();
  }
  return undefined;
}

/** Reads one answer of the login request (pure; the HTTP part is in `login`). */
export function parseLoginAnswer(httpStatus: number, text: string, retryAfterMs?: number): LoginOutcome {
  if (httpStatus === 429) {
    return { ok: false, result: 'error', status: 429, retryAfterMs, detail: 'too many login requests (429)' };
  }
  if (httpStatus >= 500)
    return { ok: false, result: 'error', status: httpStatus, detail: `server error (${httpStatus})` };
  if (httpStatus < 200 || httpStatus >= 300) {
    return { ok: false, result: 'refused', status: httpStatus, detail: `login refused (${httpStatus})` };
  }
  let body: unknown;
  try {
    body = parseBoundedJson(text);
  } catch {
    return { ok: false, result: 'error', status: httpStatus, detail: 'login answer is not JSON' };
  }
  if (!isRecord(body))
    return { ok: false, result: 'error', status: httpStatus, detail: 'login answer is not an object' };
  const status = numberOf(body.status);
  if (body.status !== undefined && status !== 200) {
    const shown = status === undefined ? 'unreadable' : String(status);
    return { ok: false, result: 'refused', status, detail: `login refused (status ${shown} in the answer)` };
  }
  const inner = isRecord(body.data) ? body.data : {};
  const token = tokenOf(body) ?? tokenOf(inner);
  if (token === undefined) {
    return { ok: false, result: 'error', status: httpStatus, detail: 'login answer has no token' };
  }
  const unusable = (detail: string): LoginOutcome => ({
    ok: false,
    result: 'refused',
    unusable: true,
    status: httpStatus,
    detail,
  });
  if (token.length > MAX_TOKEN_LENGTH)
    return unusable(`login answer has a token of ${token.length} characters (at most ${MAX_TOKEN_LENGTH})`);
  if (!TOKEN_CHARS.test(token))
    return unusable('login answer has a token with characters a header cannot carry (only visible ASCII)');
  const lifetime = numberOf(body.lifetime ?? inner.lifetime);
  if (lifetime === undefined || lifetime <= 0) {
    return { ok: true, token, lifetimeMs: DEFAULT_LIFETIME_MS, lifetimeAssumed: true };
  }
  if (lifetime > MAX_LIFETIME_MS)
    return {
      ok: true,
      token,
      lifetimeMs: MAX_LIFETIME_MS,
      lifetimeAssumed: false,
      lifetimeClamped: lifetime,
    };
  return { ok: true, token, lifetimeMs: lifetime, lifetimeAssumed: false };
}

export interface LoginRequest {
  baseUrl: string;
  username: string;
  password: string;
  dispatcher?: Dispatcher;
  /** For Retry-After dates. */
  now: number;
  /** Deadline of the whole answer (api.timeout), real ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Sends one login request; never throws (every failure is a LoginOutcome). */
export async function login(req: LoginRequest): Promise<LoginOutcome> {
  const body = new URLSearchParams({ username: req.username, password: req.password }).toString();
  try {
    const answer = await readAnswer({
      url: `${req.baseUrl.replace(/\/+$/, '')}${LOGIN_PATH}`,
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'accept-encoding': 'gzip, deflate, br',
      },
      body,
      dispatcher: req.dispatcher,
      signal: req.signal,
      timeoutMs: req.timeoutMs ?? DEFAULT_ANSWER_TIMEOUT_MS,
      maxBodyBytes: LOGIN_MAX_BYTES,
      limitName: 'the login answer limit',
    });
    const text = answer.status >= 200 && answer.status < 300 ? utf8.decode(answer.bytes) : '';
    return parseLoginAnswer(answer.status, text, parseRetryAfter(answer.retryAfter, req.now));
  } catch (err) {
    if (!(err instanceof AnswerFailure))
      return { ok: false, result: 'error', detail: 'login request failed' };
    // Only our words and the error's code: an undici message may quote the request.
    if (err.code === 'ANSWER_TIMEOUT')
      return { ok: false, result: 'error', detail: 'login answer not received within api.timeout' };
    if (err.kind === 'too_large')
      return {
        ok: false,
        result: 'error',
        status: err.status,
        detail: `login answer larger than ${LOGIN_MAX_BYTES} bytes`,
      };
    if (err.kind === 'malformed')
      return { ok: false, result: 'error', status: err.status, detail: 'login answer does not decode' };
    return { ok: false, result: 'error', detail: `login request failed (${err.code ?? 'network'})` };
  }
}

const utf8 = new TextDecoder();
