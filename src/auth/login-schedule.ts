/**
 * When a login (./login.ts) may be sent: the numbers and rules of ./login-token.ts's schedule, apart from the state
 * it keeps.
 *
 * Contracts:
 * - The one guard against a login storm is the API's documented limit (docs/upstream-api.md, "Login"): at most
 *   LOGINS_PER_MINUTE (20) logins a minute. Two login requests are never closer than MIN_GAP_MS (3 s, 60 s / 20),
 *   whatever the cause (renewal, a 401/403, an error's retry, a new password), so no 60 s ever holds more than 20.
 * - Renewal (renewalDelay): at `t + min(85 % of L, L - 2 × the login's answer time)`, never sooner than MIN_GAP_MS
 *   after `t`, for a token of lifetime `L` whose login was sent at `t`. From the documented 6 hours (renewed 54
 *   minutes before expiry) down to a few seconds the renewal is answered before the token expires, as long as its
 *   answer takes no longer than the margin left: 15 % of L, or twice the answer time of the login before.
 * - A lifetime too short for the limit (lifetimeTooShort: `L <= max(MIN_GAP_MS, answer time) + answer time`): the
 *   token would expire before the earliest renewal the limit allows is answered.
 * - A renewal forced by a 401/403 of an API: at most once per FORCED_RENEWAL_MS (the limit's window: 1 of its 20
 *   logins); after FORCED_IN_A_ROW (3) such renewals in a row, once per FORCED_SLOW_MS (15 minutes).
 * - The ban rule (7 wrong passwords ban the user for hours, from the API and the web portal): a refused login is
 *   retried with the same password after 20 min, 40 min, 80 min, then every 3 hours (refusedRetryMs). That is at
 *   most 3 attempts in any hour and at most 4 in any 3 hours. A change of the password (the file's content, looked
 *   at every PASSWORD_CHECK_MS while refused) is tried at once.
 * - 429, 5xx, network failures and answers without a usable token back off exponentially (DEFAULT_BACKOFF: 5 s
 *   doubling to 5 min, full jitter, at least Retry-After).
 */
import type { BackoffPolicy } from '../poll/backoff.js';

export const RENEW_FRACTION = 0.85;
/** The API's documented limit (docs/upstream-api.md, "Login"): at most this many logins ... */
export const LOGINS_PER_MINUTE = 20;
/** ... in this window. */
export const LOGIN_LIMIT_WINDOW_MS = 60_000;
/** Two login requests are never closer than this (3 s): 20 evenly spaced, so no 60 s window holds more than 20. */
export const MIN_GAP_MS = LOGIN_LIMIT_WINDOW_MS / LOGINS_PER_MINUTE;
/** A renewal leaves at least this many times the login's answer time before expiry (when 85 % leaves less). */
export const ANSWER_MARGIN = 2;
/**
 * After a 401/403 of an API, a renewal at once, at most once per window of the login limit: 1 of its 20 logins,
 * the other 19 left to scheduled renewals. It is MIN_GAP_MS after the previous login like any other.
 */
export const FORCED_RENEWAL_MS = LOGIN_LIMIT_WINDOW_MS;
/**
 * After this many forced renewals in a row (no scheduled renewal between), at most one every FORCED_SLOW_MS: a
 * 403 that a new token does not cure (an account the user may not see) must not cost a login every minute.
 */
export const FORCED_IN_A_ROW = 3;
export const FORCED_SLOW_MS = 15 * 60_000;
/** How often the password file is looked at while the login is refused or the file is unreadable. */
export const PASSWORD_CHECK_MS = 10_000;
/** Waits before retrying a refused login with the same password, by consecutive refusals; the last repeats. */
export const REFUSED_RETRY_MS: readonly number[] = [20 * 60_000, 40 * 60_000, 80 * 60_000, 180 * 60_000];
/** Retries after a login that failed (no answer, 429, 5xx, no usable token). */
export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 5_000, capMs: 300_000 };

/**
 * When a token of `lifetimeMs`, whose login was answered in `answerMs`, is renewed (ms after that login was sent):
 * at 85 % of the lifetime, sooner when that leaves less than ANSWER_MARGIN answer times, never sooner than the
 * login limit allows (MIN_GAP_MS).
 */
export function renewalDelay(lifetimeMs: number, answerMs: number): number {
  const due = Math.min(Math.floor(lifetimeMs * RENEW_FRACTION), lifetimeMs - ANSWER_MARGIN * answerMs);
  return Math.max(MIN_GAP_MS, due);
}

/**
 * A lifetime too short for the login limit: a renewal sent as early as it can be (MIN_GAP_MS after the login, as
 * the limit allows, and not before the login's answer: one login at a time) and answered as fast as this login was
 * would arrive when the token has already expired.
 */
export function lifetimeTooShort(lifetimeMs: number, answerMs: number): boolean {
  return lifetimeMs <= Math.max(MIN_GAP_MS, answerMs) + answerMs;
}

/** Our words on a lifetime too short for the login limit (a LoginError's detail, the login's status). */
export function tooShortText(lifetimeMs: number, answerMs: number): string {
  return (
    `the login answered a lifetime of ${lifetimeMs} ms (answer in ${answerMs} ms); the API allows a login ` +
    `every ${MIN_GAP_MS} ms (${LOGINS_PER_MINUTE} a minute), so its token expires before it can be renewed`
  );
}

/** The wait before retrying the same password after `refusals` (1, 2, ...) refusals in a row (the ban rule). */
export function refusedRetryMs(refusals: number): number {
  return REFUSED_RETRY_MS[Math.min(refusals, REFUSED_RETRY_MS.length) - 1]!;
}
