/**
 * A token that comes from a login (./login.ts) and is renewed before it expires: a TokenSource (src/config/token.ts)
 * like a fixed token, so the API clients and request gates use it unchanged.
 *
 * Contracts:
 * - Renewal: a token obtained with a request sent at `t` and a `lifetime` of `L` ms is renewed at `t + 0.85 L`
 *   (the lifetime is counted from the moment the request was sent, so the answer's own travel time is margin too).
 *   That works from lifetimes of seconds (renewed after 85 % of them) to the documented 6 hours (renewed 54 minutes
 *   before expiry). Two logins are never closer than MIN_GAP_MS (the API allows 20 logins per minute), so a
 *   lifetime under about 4 s cannot be covered.
 * - `refresh()` (called after a 401/403 of any API) asks for a renewal at once, at most once per minute (after 3
 *   such renewals in a row, once per 15 minutes), and never while the login is refused (the ban rule decides then).
 * - The ban rule (7 wrong passwords ban the user for hours, from the API and the web portal): a refused login is
 *   retried with the same password after 20 min, 40 min, 80 min, then every 3 hours. That is at most 3 attempts in
 *   any hour and at most 4 in any 3 hours. A change of the password (the file's content, read on a cheap `stat`
 *   every PASSWORD_CHECK_MS while refused) is tried at once.
 * - 429, 5xx, network failures and answers without a usable token back off exponentially (5 s doubling to 5 min,
 *   full jitter, at least Retry-After).
 * - While no valid token exists, `get()` throws a LoginError (kind `auth`, with a structured `reason`); a token
 *   still valid is served while its renewal fails, until it expires.
 * - `onToken(listener)`: called after every new token, so pollers waiting out an auth backoff go on at once.
 * - The password and tokens never appear in an error, a log line or `description`.
 */
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock.js';
import {
  type LoginCredential,
  nodeFs,
  type TokenFs,
  type TokenSource,
  unreadableReason,
} from '../config/token.js';
import type { Logger } from '../log.js';
import { type BackoffPolicy, backoffDelay } from '../poll/backoff.js';
import { SECRETS } from '../redact.js';
import { type LoginOutcome, login as sendLogin } from './login.js';

export const RENEW_FRACTION = 0.85;
/** Two login requests are never closer than this (the API documents at most 20 per minute). */
export const MIN_GAP_MS = 3_000;
/** After a 401/403 of an API, a renewal at once, at most this often. */
export const FORCED_RENEWAL_MS = 60_000;
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
const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 5_000, capMs: 300_000 };

export type LoginResult = 'ok' | 'refused' | 'error';

/** Why no token can be given: the login was refused, it failed (no answer, 5xx, ...), or none was tried yet. */
export type LoginReason = 'login-refused' | 'login-failed' | 'login-pending';

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

/** The password's file system: the one a token file is read with; tests may pass their own. */
export type PasswordFs = TokenFs;

export interface LoginTokenOptions {
  credential: LoginCredential;
  baseUrl: string;
  clock: Clock;
  log: Logger;
  dispatcher?: Dispatcher;
  fs?: PasswordFs;
  random?: () => number;
  backoff?: BackoffPolicy;
  /** Every login attempt's result (cdn_auth_logins_total). */
  onLogin?: (result: LoginResult) => void;
  /** When the current token expires (ms), or undefined when there is none (cdn_auth_token_expiry_timestamp_seconds). */
  onExpiry?: (expiresAt: number | undefined) => void;
  /** Sends one login; default: ./login.ts over HTTP. */
  send?: (username: string, password: string, signal: AbortSignal) => Promise<LoginOutcome>;
}

export interface LoginStatus {
  login: string;
  state: 'ok' | LoginReason;
  /** Our words on the last failure; never a secret. */
  detail?: string;
  expiresAt?: number;
}

export class LoginToken implements TokenSource {
  readonly description: string;
  readonly username: string;
  #generation = 0;
  #token: string | undefined;
  #expiresAt = 0;
  #renewAt = 0;
  #state: LoginStatus['state'] = 'login-pending';
  #detail: string | undefined;
  #status: number | undefined;
  /** Time of the last attempt (sent), for MIN_GAP_MS. */
  #lastAttempt = Number.NEGATIVE_INFINITY;
  /** Consecutive refusals of `#refusedPassword`. */
  #refusals = 0;
  #refusedPassword: string | undefined;
  #errors = 0;
  #errorUntil = 0;
  #forceRenew = false;
  #lastForced = Number.NEGATIVE_INFINITY;
  #forcedInARow = 0;
  #busy = false;
  #wake: (() => void) | undefined;
  #listeners = new Set<() => void>();
  #logged: string | undefined;
  #password: string | undefined;
  #passwordStamp = '';
  #passwordError: string | undefined;
  #firstDone!: () => void;
  /** Settles after the first login attempt (whatever its result), or when the loop stops. */
  readonly firstAttempt: Promise<void>;
  readonly #send: NonNullable<LoginTokenOptions['send']>;
  readonly #fs: PasswordFs;

  constructor(private readonly opts: LoginTokenOptions) {
    this.username = opts.credential.username;
    this.description = `login ${JSON.stringify(this.username)}`;
    this.#fs = opts.fs ?? nodeFs;
    // Every password read and every token issued is registered (src/redact.ts): no edge of the exporter (log,
    // page, label, error) shows it.
    if (opts.credential.password !== undefined) SECRETS.add(opts.credential.password);
    this.firstAttempt = new Promise<void>((resolve) => {
      this.#firstDone = resolve;
    });
    this.#send =
      opts.send ??
      ((username, password, signal) =>
        sendLogin({
          baseUrl: opts.baseUrl,
          username,
          password,
          dispatcher: opts.dispatcher,
          now: opts.clock.now(),
          signal,
        }));
  }

  get generation(): number {
    return this.#generation;
  }

  /** A login request is in flight (tests wait for it to settle). */
  get busy(): boolean {
    return this.#busy;
  }

  get status(): LoginStatus {
    const s: LoginStatus = { login: this.username, state: this.#currentState() };
    if (this.#detail !== undefined && s.state !== 'ok') s.detail = this.#detail;
    if (this.#token !== undefined) s.expiresAt = this.#expiresAt;
    return s;
  }

  get(): string {
    const token = this.#valid();
    if (token !== undefined) return token;
    const state = this.#currentState();
    const reason: LoginReason = state === 'ok' ? 'login-failed' : state;
    const detail =
      this.#token !== undefined
        ? `the token expired and could not be renewed${this.#detail ? ` (${this.#detail})` : ''}`
        : (this.#detail ?? 'no token yet');
    throw new LoginError(this.username, reason, detail, this.#status);
  }

  /** After a 401/403: renew at once (at most once per minute, never while refused); returns get()'s answer. */
  refresh(): string {
    const now = this.opts.clock.now();
    const gap = this.#forcedInARow >= FORCED_IN_A_ROW ? FORCED_SLOW_MS : FORCED_RENEWAL_MS;
    if (this.#state === 'ok' && !this.#busy && now - this.#lastForced >= gap) {
      this.#lastForced = now;
      this.#forcedInARow++;
      this.#forceRenew = true;
      this.#wake?.();
    }
    return this.get();
  }

  onToken(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The renewal loop; returns when `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const onAbort = () => this.#wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!signal.aborted) {
        const now = this.opts.clock.now();
        const password = this.#readPassword();
        if (
          password !== undefined &&
          this.#refusedPassword !== undefined &&
          password !== this.#refusedPassword
        ) {
          // A new password: the refusals of the old one say nothing about it.
          this.#refusals = 0;
          this.#refusedPassword = undefined;
        }
        const at = password === undefined ? Number.POSITIVE_INFINITY : this.#nextAttempt();
        if (at <= now && password !== undefined) {
          await this.#attempt(password, signal);
          continue;
        }
        if (password === undefined) this.#firstDone();
        // While refused or without a readable password file, look at the file now and then.
        const checkFile =
          this.opts.credential.passwordFile !== undefined &&
          (password === undefined || this.#state === 'login-refused');
        const until = Math.min(at, checkFile ? now + PASSWORD_CHECK_MS : Number.POSITIVE_INFINITY);
        await this.#sleep(until - now, signal);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#firstDone();
    }
  }

  #currentState(): LoginStatus['state'] {
    if (this.#valid() !== undefined) return 'ok';
    return this.#state === 'ok' ? 'login-failed' : this.#state;
  }

  #valid(): string | undefined {
    return this.#token !== undefined && this.opts.clock.now() < this.#expiresAt ? this.#token : undefined;
  }

  /** When the next login may be sent (ms). */
  #nextAttempt(): number {
    const now = this.opts.clock.now();
    let due: number;
    if (this.#forceRenew || this.#token === undefined || now >= this.#renewAt) due = now;
    else due = this.#renewAt;
    if (this.#refusedPassword !== undefined && this.#refusals > 0) {
      const wait = REFUSED_RETRY_MS[Math.min(this.#refusals, REFUSED_RETRY_MS.length) - 1]!;
      due = Math.max(due, this.#lastAttempt + wait);
    }
    due = Math.max(due, this.#errorUntil, this.#lastAttempt + MIN_GAP_MS);
    return due;
  }

  async #attempt(password: string, signal: AbortSignal): Promise<void> {
    const { clock, log } = this.opts;
    const sentAt = clock.now();
    this.#lastAttempt = sentAt;
    // A renewal that was due anyway ends a run of forced ones.
    if (!this.#forceRenew && this.#token !== undefined) this.#forcedInARow = 0;
    this.#forceRenew = false;
    this.#busy = true;
    let outcome: LoginOutcome;
    try {
      outcome = await this.#send(this.username, password, signal);
    } catch (err) {
      outcome = {
        ok: false,
        result: 'error',
        detail: `login request failed (${err instanceof Error ? err.name : 'error'})`,
      };
    } finally {
      this.#busy = false;
    }
    if (signal.aborted && !outcome.ok) {
      this.#firstDone();
      return;
    }
    const now = clock.now();
    if (outcome.ok) {
      const renewed = this.#token !== undefined;
      SECRETS.add(outcome.token);
      this.#token = outcome.token;
      this.#expiresAt = sentAt + outcome.lifetimeMs;
      this.#renewAt = sentAt + Math.max(MIN_GAP_MS, Math.floor(outcome.lifetimeMs * RENEW_FRACTION));
      this.#state = 'ok';
      this.#detail = undefined;
      this.#status = undefined;
      this.#refusals = 0;
      this.#refusedPassword = undefined;
      this.#errors = 0;
      this.#errorUntil = 0;
      this.#generation++;
      this.opts.onLogin?.('ok');
      this.opts.onExpiry?.(this.#expiresAt);
      const logged = this.#logged === 'ok';
      this.#note('ok', () =>
        log.info(
          {
            login: this.username,
            expires: new Date(this.#expiresAt).toISOString(),
            ...(outcome.lifetimeAssumed ? { lifetime: 'not in the answer; 6h assumed' } : {}),
          },
          'logged in',
        ),
      );
      // One line per renewal (4 a day with 6-hour tokens): the operator sees renewal work.
      if (logged && renewed)
        log.info({ login: this.username, expires: new Date(this.#expiresAt).toISOString() }, 'token renewed');
      for (const l of [...this.#listeners]) l();
    } else if (outcome.result === 'refused') {
      this.#refusals++;
      this.#refusedPassword = password;
      this.#state = 'login-refused';
      this.#detail = outcome.detail;
      this.#status = outcome.status;
      this.opts.onLogin?.('refused');
      const retry = REFUSED_RETRY_MS[Math.min(this.#refusals, REFUSED_RETRY_MS.length) - 1]!;
      this.#note(`refused:${outcome.detail}`, () =>
        log.error(
          {
            login: this.username,
            error: outcome.detail,
            retry: `with the same password in ${retry / 60_000} min, at once when the password changes`,
          },
          'login refused: check the username and password (7 wrong passwords ban the user for hours)',
        ),
      );
    } else {
      this.#errors++;
      const wait = Math.max(
        outcome.retryAfterMs ?? 0,
        backoffDelay(this.#errors - 1, this.opts.backoff ?? DEFAULT_BACKOFF, this.opts.random),
      );
      this.#errorUntil = now + wait;
      if (this.#state !== 'login-refused') this.#state = this.#token !== undefined ? 'ok' : 'login-failed';
      this.#detail = outcome.detail;
      this.#status = outcome.status;
      this.opts.onLogin?.('error');
      this.#note(`error:${outcome.detail}`, () =>
        log.warn({ login: this.username, error: outcome.detail, retry_ms: wait }, 'login failed; retrying'),
      );
    }
    if (this.#valid() === undefined && !outcome.ok) this.opts.onExpiry?.(undefined);
    this.#firstDone();
  }

  /** Logs once per change of cause. */
  #note(cause: string, write: () => void): void {
    if (this.#logged === cause) return;
    this.#logged = cause;
    write();
  }

  /** The password, or undefined when its file cannot be read (logged once per change). */
  #readPassword(): string | undefined {
    const { credential, log } = this.opts;
    if (credential.passwordFile === undefined) return credential.password;
    const path = credential.passwordFile;
    try {
      const s = this.#fs.stat(path);
      const stamp = `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
      if (this.#password === undefined || stamp !== this.#passwordStamp) {
        // A trailing newline (`echo pw > file`) is not part of the password; other whitespace is kept.
        const text = this.#fs.read(path).replace(/[\r\n]+$/, '');
        if (text === '') throw Object.assign(new Error('empty'), { code: 'is empty' });
        SECRETS.add(text);
        this.#password = text;
        this.#passwordStamp = stamp;
      }
      if (this.#passwordError !== undefined) {
        log.info({ login: this.username, file: path }, 'password file readable again');
        this.#passwordError = undefined;
      }
      return this.#password;
    } catch (e) {
      this.#password = undefined;
      const why = `password file ${path}: ${unreadableReason(e)}`;
      if (this.#passwordError !== why) log.error({ login: this.username, error: why }, 'cannot log in');
      this.#passwordError = why;
      if (this.#valid() === undefined) {
        this.#state = 'login-failed';
        this.#detail = why;
      }
      return undefined;
    }
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const ctl = new AbortController();
    this.#wake = () => ctl.abort();
    try {
      if (ms <= 0) await new Promise<void>((r) => setImmediate(r));
      else await this.opts.clock.sleep(Number.isFinite(ms) ? ms : 3_600_000, ctl.signal);
    } catch {
      // woken early: refresh() or stop
    } finally {
      this.#wake = undefined;
    }
  }
}
