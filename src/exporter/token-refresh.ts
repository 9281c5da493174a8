/**
 * The token-refresh policy. A token file is re-read when `stat` shows a change (src/config/token.ts); on mounts
 * that cache attributes a rotated file can look unchanged, so a refusal (401/403, `isRefusal`) of ANY API is the
 * other trigger: the token is read again at once, and the poller's next request, at the latest one poll interval
 * later, carries the new one. Accounts sharing a token share its source, so one refusal refreshes it for all.
 */
import { isLoginError } from '../auth/login-error.js';
import type { TokenSource } from '../config/index.js';
import { describeError, isRefusal } from '../http/errors.js';
import type { Logger } from '../log.js';

/**
 * Reads the token again after a refusal; a token file that cannot be read is logged (the next request says so).
 * A login (src/auth) renews instead, at most once a minute, and logs its own failures once per change.
 */
export function rereadToken(token: TokenSource, log: Logger): void {
  try {
    token.refresh();
  } catch (err) {
    if (isLoginError(err)) return;
    log.error({ error: describeError(err) }, 'reading the token again failed');
  }
}

/** After a poll round: when any of its failures is a refusal, the token is read again (once per round). */
export function rereadIfRefused(failures: readonly unknown[], token: TokenSource, log: Logger): void {
  if (failures.some(isRefusal)) rereadToken(token, log);
}
