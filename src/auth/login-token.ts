/**
 * A token that comes from a login (./login.ts) and is renewed before it expires: a TokenSource (src/config/token.ts)
 * like a fixed token, so the API clients and request gates use it unchanged. When each login is sent (the API's
 * limit of 20 a minute, renewal, the ban rule, backoff) is ./login-schedule.ts; this keeps the state it decides on.
 *
 * Contracts:
 * - The lifetime a login answer states is believed down to the millisecond (./login.ts clamps it only at the top).
 * - Expiry: a token obtained with a request sent at `t` with a `lifetime` of `L` ms expires at `t + L` for us. The
 *   CDN counts from when the request reached it, so the login's own travel is the margin of a request sent at the
 *   last moment. `get()` compares that expiry with the clock each time a request is sent, and never hands out a
 *   token at or past it: a request never carries a token known to be expired.
 * - A lifetime too short for the limit (lifetimeTooShort, ./login-schedule.ts) is said, not hidden: result
 *   `too_short` of cdn_auth_logins_total, one log line per change, and while such a token has expired `get()`
 *   throws a LoginError with reason `lifetime-too-short` (the pollers' error: `cdn_up 0` with that text). The token
 *   is used while it is valid and renewed as soon as the limit allows. A token already expired when its answer
 *   arrives cannot be used at all: it is not kept, and the next login backs off as after an error, not 20 a minute
 *   for nothing.
 * - A login answer whose token cannot be used (too long, characters no header may carry) is a refused login with
 *   its own log line, retried on the ban-safe schedule (the endpoint said yes to these credentials, but retrying at
 *   once brings the same answer).
 * - Secrets: the token in use is registered in src/redact.ts; the one it replaces is dropped from the registry,
 *   and so is a password read before the file changed (./password-file.ts): the registry holds only live secrets.
 * - `refresh()` (called after a 401/403 of any API) asks for a renewal at once, as often as the schedule allows,
 *   still MIN_GAP_MS after the previous login, and never while the login is refused (the ban rule decides then).
 * - While no valid token exists, `get()` throws a LoginError (./login-error.ts: kind `auth`, with a structured
 *   `reason`); a token still valid is served while its renewal fails, until it expires.
 * - `onToken(listener)`: called after every new token, so pollers waiting out an auth backoff go on at once.
 * - The password and tokens never appear in an error, a log line or `description`.
 */
import type { Dispatcher } from 'undici';
import type { Clock } from '../clock.js';
import { type LoginCredential, nodeFs, type TokenSource } from '../config/token.js';
import type { Logger } from '../log.js';
import { type BackoffPolicy, backoffDelay } from '../poll/backoff.js';
import { SECRETS } from '../redact.js';
import { type LoginOutcome, login as sendLogin } from './login.js';
import { LoginError, type LoginReason } from './login-error.js';
import {
  DEFAULT_BACKOFF,
  FORCED_IN_A_ROW,
  FORCED_RENEWAL_MS,
  FORCED_SLOW_MS,
  lifetimeTooShort,
  MIN_GAP_MS,
  PASSWORD_CHECK_MS,
  refusedRetryMs,
  renewalDelay,
  tooShortText,
} from './login-schedule.js';
import { PasswordFile, type PasswordFs } from './password-file.js';

/** `too_short`: logged in, but with a token that expires before the limit allows its renewal (lifetimeTooShort). */
export type LoginResult = 'ok' | 'too_short' | 'refused' | 'error';

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
  /** Deadline of a login answer (api.timeout), real ms. */
  timeoutMs?: number;
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
  /** Why the last login's token is too short for the login limit (our words), or undefined when it is not. */
  #short: string | undefined;
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
  /** Set with `password_file`. */
  readonly #passwordFile: PasswordFile | undefined;
  #firstDone!: () => void;
  /** Settles after the first login attempt (whatever its result), or when the loop stops. */
  readonly firstAttempt: Promise<void>;
  readonly #send: NonNullable<LoginTokenOptions['send']>;

  constructor(private readonly opts: LoginTokenOptions) {
    this.username = opts.credential.username;
    this.description = `login ${JSON.stringify(this.username)}`;
    if (opts.credential.passwordFile !== undefined)
      this.#passwordFile = new PasswordFile(
        opts.credential.passwordFile,
        opts.fs ?? nodeFs,
        opts.log,
        this.username,
      );
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
          timeoutMs: opts.timeoutMs,
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
    const detail = s.state === 'lifetime-too-short' ? this.#short : this.#detail;
    if (detail !== undefined && s.state !== 'ok') s.detail = detail;
    if (this.#token !== undefined) s.expiresAt = this.#expiresAt;
    return s;
  }

  get(): string {
    const token = this.#valid();
    if (token !== undefined) return token;
    const state = this.#currentState();
    const reason: LoginReason = state === 'ok' ? 'login-failed' : state;
    const detail =
      reason === 'lifetime-too-short' && this.#short !== undefined
        ? this.#short
        : this.#token !== undefined
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
    if (this.#state === 'ok' || this.#state === 'lifetime-too-short')
      return this.#short !== undefined ? 'lifetime-too-short' : 'login-failed';
    return this.#state;
  }

  /** The token, when there is one and the clock has not reached its expiry (checked at every request's send). */
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
      due = Math.max(due, this.#lastAttempt + refusedRetryMs(this.#refusals));
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
    const answerMs = Math.max(0, now - sentAt);
    if (outcome.ok && sentAt + outcome.lifetimeMs <= now) {
      // Expired before its answer arrived: nothing can use it, and logging in again at once would bring the same.
      this.#short = tooShortText(outcome.lifetimeMs, answerMs);
      this.#errors++;
      const wait = backoffDelay(this.#errors - 1, this.opts.backoff ?? DEFAULT_BACKOFF, this.opts.random);
      this.#errorUntil = now + wait;
      this.#refusals = 0;
      this.#refusedPassword = undefined;
      this.#state = this.#valid() !== undefined ? 'ok' : 'lifetime-too-short';
      this.#detail = this.#short;
      this.#status = undefined;
      this.opts.onLogin?.('too_short');
      this.#noteTooShort(outcome.lifetimeMs, answerMs, true);
    } else if (outcome.ok) {
      const renewed = this.#token !== undefined;
      const short = lifetimeTooShort(outcome.lifetimeMs, answerMs);
      SECRETS.add(outcome.token);
      if (this.#token !== undefined && this.#token !== outcome.token) SECRETS.remove(this.#token);
      this.#token = outcome.token;
      this.#expiresAt = sentAt + outcome.lifetimeMs;
      this.#renewAt = sentAt + renewalDelay(outcome.lifetimeMs, answerMs);
      this.#short = short ? tooShortText(outcome.lifetimeMs, answerMs) : undefined;
      this.#state = 'ok';
      this.#detail = undefined;
      this.#status = undefined;
      this.#refusals = 0;
      this.#refusedPassword = undefined;
      this.#errors = 0;
      this.#errorUntil = 0;
      this.#generation++;
      this.opts.onLogin?.(short ? 'too_short' : 'ok');
      this.opts.onExpiry?.(this.#expiresAt);
      const logged = this.#logged === 'ok';
      if (short) this.#noteTooShort(outcome.lifetimeMs, answerMs, false);
      else
        this.#note('ok', () =>
          log.info(
            {
              login: this.username,
              expires: new Date(this.#expiresAt).toISOString(),
              ...(outcome.lifetimeAssumed ? { lifetime: 'not in the answer; 6h assumed' } : {}),
              ...(outcome.lifetimeClamped !== undefined
                ? { lifetime: `${outcome.lifetimeClamped} ms out of range; ${outcome.lifetimeMs} ms used` }
                : {}),
            },
            'logged in',
          ),
        );
      // One line per renewal (4 a day with 6-hour tokens): the operator sees renewal work.
      if (logged && renewed && !short)
        log.info({ login: this.username, expires: new Date(this.#expiresAt).toISOString() }, 'token renewed');
      for (const l of [...this.#listeners]) l();
    } else if (outcome.result === 'refused') {
      this.#refusals++;
      this.#refusedPassword = password;
      this.#state = 'login-refused';
      this.#detail = outcome.detail;
      this.#status = outcome.status;
      this.opts.onLogin?.('refused');
      const retry = refusedRetryMs(this.#refusals);
      const retryText = `in ${retry / 60_000} min, at once when the password changes`;
      if (outcome.unusable)
        this.#note(`unusable:${outcome.detail}`, () =>
          log.error(
            { login: this.username, error: outcome.detail, retry: retryText },
            'login answer unusable: the token it gave cannot be sent; retried on the ban-safe schedule',
          ),
        );
      else
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
      this.#short = undefined;
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
    if (this.#valid() === undefined && (!outcome.ok || sentAt + outcome.lifetimeMs <= now))
      this.opts.onExpiry?.(undefined);
    this.#firstDone();
  }

  /**
   * The log line of a lifetime too short, once per change of cause (not per login): `dead`, the token had expired
   * when its answer arrived.
   */
  #noteTooShort(lifetimeMs: number, answerMs: number, dead: boolean): void {
    this.#note(`too-short:${dead ? 'dead' : 'brief'}`, () =>
      this.opts.log.warn(
        {
          login: this.username,
          lifetime_ms: lifetimeMs,
          answer_ms: answerMs,
          min_login_gap_ms: MIN_GAP_MS,
          handling: dead
            ? 'expired on arrival: not used; the next login backs off as after an error'
            : `used until it expires; renewed ${MIN_GAP_MS} ms after its login`,
        },
        'token lifetime too short for the login limit: requests wait (cdn_up 0) while no valid token exists',
      ),
    );
  }

  /** Logs once per change of cause. */
  #note(cause: string, write: () => void): void {
    if (this.#logged === cause) return;
    this.#logged = cause;
    write();
  }

  /** The password, or undefined when its file cannot be read (./password-file.ts logs why, once per change). */
  #readPassword(): string | undefined {
    if (this.#passwordFile === undefined) return this.opts.credential.password;
    const read = this.#passwordFile.read();
    if ('password' in read) return read.password;
    if (this.#valid() === undefined) {
      this.#state = 'login-failed';
      this.#detail = read.unreadable;
    }
    return undefined;
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
