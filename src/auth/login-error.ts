/**
 * Why a login token (./login-token.ts) cannot give a token: the error its `get()` throws. Pollers treat it as a
 * refused token (its `kind` is an ApiError's `auth`); its text names the user, never a password or a token.
 */

/**
 * Why no token can be given: the login was refused, it failed (no answer, 5xx, ...), none was tried yet, or the
 * tokens it gives expire before the API's login limit allows their renewal.
 */
export type LoginReason = 'login-refused' | 'login-failed' | 'login-pending' | 'lifetime-too-short';

export class LoginError extends Error {
  override readonly name = 'LoginError';
  /** As an ApiError's kind: pollers treat it as a refused token (cdn_up 0, slow probing, woken by onToken). */
  readonly kind = 'auth';
  readonly reason: LoginReason;
  readonly login: string;
  readonly status: number | undefined;
  readonly description: string;

  constructor(login: string, reason: LoginReason, detail: string, status?: number) {
    const what =
      reason === 'login-refused'
        ? 'login refused'
        : reason === 'login-failed'
          ? 'login failed'
          : reason === 'lifetime-too-short'
            ? 'token lifetime too short'
            : 'not logged in yet';
    super(`${what} for user ${JSON.stringify(login)}: ${detail}`);
    this.reason = reason;
    this.login = login;
    this.status = status;
    this.description = this.message;
  }
}

export function isLoginError(err: unknown): err is LoginError {
  return err instanceof LoginError;
}
