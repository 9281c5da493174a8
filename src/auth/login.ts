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
 * Nothing here puts the password or the token into an error: messages carry the HTTP status and our own words.
 */
import { type Dispatcher, request } from 'undici';
import { parseRetryAfter } from '../http/errors.js';

export const LOGIN_PATH = '/app/oauth/v1/token/';
/** The documented validity of a token, assumed when an answer gives no readable `lifetime`. */
export const DEFAULT_LIFETIME_MS = 6 * 3600_000;

export type LoginOutcome =
  | { ok: true; token: string; lifetimeMs: number; lifetimeAssumed: boolean }
  | {
      ok: false;
      /** `refused`: the API said no to these credentials; `error`: no usable answer (retry with backoff). */
      result: 'refused' | 'error';
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
    body = JSON.parse(text);
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
  const lifetime = numberOf(body.lifetime ?? inner.lifetime);
  if (lifetime === undefined || lifetime <= 0) {
    return { ok: true, token, lifetimeMs: DEFAULT_LIFETIME_MS, lifetimeAssumed: true };
  }
  return { ok: true, token, lifetimeMs: lifetime, lifetimeAssumed: false };
}

export interface LoginRequest {
  baseUrl: string;
  username: string;
  password: string;
  dispatcher?: Dispatcher;
  /** For Retry-After dates. */
  now: number;
  signal?: AbortSignal;
}

/** Sends one login request; never throws (every failure is a LoginOutcome). */
export async function login(req: LoginRequest): Promise<LoginOutcome> {
  const body = new URLSearchParams({ username: req.username, password: req.password }).toString();
  try {
    const res = await request(`${req.baseUrl.replace(/\/+$/, '')}${LOGIN_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      dispatcher: req.dispatcher,
      signal: req.signal,
    });
    const text = await res.body.text();
    const ra = res.headers['retry-after'];
    return parseLoginAnswer(res.statusCode, text, parseRetryAfter(Array.isArray(ra) ? ra[0] : ra, req.now));
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // Only the error's code or name: an undici message may quote the request.
    const what = typeof code === 'string' ? code : err instanceof Error ? err.name : 'failed';
    return { ok: false, result: 'error', detail: `login request failed (${what})` };
  }
}
