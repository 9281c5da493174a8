/**
 * The simulator's login (`POST /app/oauth/v1/token/`) and the tokens it issues, as the exporter's docs describe
 * the real one (docs/upstream-api.md, "Login"):
 * - form fields `username` and `password`; a missing one is 400 (no body);
 * - success: `{"status": 200, "person_id": N, "token": "cdn1_...", "lifetime": <ms>}`; the token is valid for
 *   `lifetimeMs` of the simulator's clock, then every API refuses it with its own documented token error;
 * - a wrong password (or an unknown user) is 401 with no body; `banAfter` (7) wrong passwords within `banWindowMs`
 *   (3 h) ban the user for `banDurationMs` (3 h): every login of a banned user is 403, even with the right password;
 * - more than `loginsPerMinute` (20) logins of one user within a minute is 429 with Retry-After.
 * Tokens issued earlier stay valid until they expire (the public description does not say a new login revokes
 * old tokens); `revoke` ends them early, as an operator at the CDN could.
 */
import { randomBytes } from 'node:crypto';
import express, { type Router } from 'express';
import type { Clock } from '../clock.js';

export interface SimUser {
  username: string;
  password: string;
  /** Account names this user's tokens may use and the inventory lists. */
  accounts: string[];
}

export interface AuthSimOptions {
  clock: Clock;
  users: SimUser[];
  /** Token validity (default 6 h less a second, as the public example shows). */
  lifetimeMs?: number;
  banAfter?: number;
  banWindowMs?: number;
  banDurationMs?: number;
  loginsPerMinute?: number;
}

/**
 * A login endpoint gone hostile or broken (a test control; the real API is not known to do any of this):
 * - `fields`: a successful login (the user and password are checked as usual) answers this `token` and/or this
 *   `lifetime` instead of its own; the token it issued stays valid for the simulator's lifetime;
 * - `trickle`: the answer's headers, then one byte every `everyMs` real milliseconds, never ending;
 * - `endless`: the answer's headers, then bytes as fast as the client reads them, never ending.
 */
export type HostileLogin =
  | { kind: 'fields'; token?: string; lifetime?: unknown }
  | { kind: 'trickle'; everyMs: number }
  | { kind: 'endless' };

export type LoginResultKind = 'ok' | 'wrong' | 'banned' | 'rate-limited' | 'bad-request';

export interface LoginRecord {
  time: number;
  username: string;
  result: LoginResultKind;
}

interface Issued {
  username: string;
  expiresAt: number;
  revoked: boolean;
}

/** What a request's token is, for the request log (never the token itself). */
export type TokenKind = 'issued' | 'expired' | 'revoked' | 'static' | 'unknown' | 'none';

export const DEFAULT_TOKEN_LIFETIME_MS = 21_599_000;

export class AuthSim {
  readonly users: SimUser[];
  readonly logins: LoginRecord[] = [];
  lifetimeMs: number;
  /** How the login endpoint misbehaves from now on; undefined: it does not. */
  hostile: HostileLogin | undefined;
  private readonly issued = new Map<string, Issued>();
  private readonly wrong = new Map<string, number[]>();
  private readonly bannedUntil = new Map<string, number>();
  private readonly clock: Clock;
  private readonly banAfter: number;
  private readonly banWindowMs: number;
  banDurationMs: number;
  private readonly perMinute: number;
  private personIds = new Map<string, number>();

  constructor(opts: AuthSimOptions) {
    this.clock = opts.clock;
    this.users = opts.users;
    this.lifetimeMs = opts.lifetimeMs ?? DEFAULT_TOKEN_LIFETIME_MS;
    this.banAfter = opts.banAfter ?? 7;
    this.banWindowMs = opts.banWindowMs ?? 3 * 3600_000;
    this.banDurationMs = opts.banDurationMs ?? 3 * 3600_000;
    this.perMinute = opts.loginsPerMinute ?? 20;
    opts.users.forEach((u, i) => {
      this.personIds.set(u.username, 1000 + i);
    });
  }

  user(username: string): SimUser | undefined {
    return this.users.find((u) => u.username === username);
  }

  /** The user a valid issued token belongs to; undefined for an unknown, expired or revoked one. */
  userForToken(token: string): SimUser | undefined {
    const t = this.issued.get(token);
    if (!t || t.revoked || this.clock.now() >= t.expiresAt) return undefined;
    return this.user(t.username);
  }

  kind(token: string | undefined): Exclude<TokenKind, 'static'> {
    if (token === undefined || token === '') return 'none';
    const t = this.issued.get(token);
    if (!t) return 'unknown';
    if (t.revoked) return 'revoked';
    return this.clock.now() >= t.expiresAt ? 'expired' : 'issued';
  }

  /** Every token issued so far (for tests that look for them where they must not be). */
  issuedTokens(): string[] {
    return [...this.issued.keys()];
  }

  banned(username: string): boolean {
    return (this.bannedUntil.get(username) ?? 0) > this.clock.now();
  }

  /** Ends every token of the user now (the CDN refuses them before their lifetime). */
  revoke(username: string): number {
    let n = 0;
    for (const t of this.issued.values()) {
      if (t.username === username && !t.revoked) {
        t.revoked = true;
        n++;
      }
    }
    return n;
  }

  setPassword(username: string, password: string): void {
    const u = this.user(username);
    if (!u) throw new Error(`unknown user ${username}`);
    u.password = password;
  }

  /** One login; returns the HTTP answer. */
  login(
    username: string | undefined,
    password: string | undefined,
  ): { status: number; body?: unknown; retryAfter?: number } {
    const now = this.clock.now();
    const record = (result: LoginResultKind) =>
      this.logins.push({ time: now, username: username ?? '', result });
    if (!username || password === undefined || password === '') {
      record('bad-request');
      return { status: 400 };
    }
    // The minute's logins are the attempts it admitted: a refused one takes no place, so a client that waits the
    // Retry-After it was given is admitted.
    const recent = this.logins.filter(
      (l) => l.username === username && l.time > now - 60_000 && l.result !== 'rate-limited',
    );
    if (recent.length >= this.perMinute) {
      const oldest = recent[0]!.time;
      record('rate-limited');
      return { status: 429, retryAfter: Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000)) };
    }
    if (this.banned(username)) {
      record('banned');
      return { status: 403 };
    }
    const user = this.user(username);
    if (!user || user.password !== password) {
      const times = (this.wrong.get(username) ?? []).filter((t) => t > now - this.banWindowMs);
      times.push(now);
      this.wrong.set(username, times);
      if (times.length >= this.banAfter) {
        this.bannedUntil.set(username, now + this.banDurationMs);
        this.wrong.set(username, []);
      }
      record('wrong');
      return { status: 401 };
    }
    this.wrong.delete(username);
    const token = `cdn1_${randomBytes(15).toString('hex').toUpperCase()}`;
    this.issued.set(token, { username, expiresAt: now + this.lifetimeMs, revoked: false });
    record('ok');
    return {
      status: 200,
      body: { status: 200, person_id: this.personIds.get(username) ?? 1, token, lifetime: this.lifetimeMs },
    };
  }

  router(): Router {
    const router = express.Router();
    router.post(['/token/', '/token'], express.urlencoded({ extended: false, limit: '16kb' }), (req, res) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
      const hostile = this.hostile;
      if (hostile?.kind === 'trickle' || hostile?.kind === 'endless') {
        streamForever(res, hostile.kind === 'trickle' ? hostile.everyMs : 0);
        return;
      }
      const answer = this.login(str(body.username), str(body.password));
      if (hostile?.kind === 'fields' && answer.status === 200) {
        const given = answer.body as Record<string, unknown>;
        answer.body = {
          ...given,
          ...(hostile.token !== undefined ? { token: hostile.token } : {}),
          ...('lifetime' in hostile ? { lifetime: hostile.lifetime } : {}),
        };
      }
      if (answer.retryAfter !== undefined) res.set('Retry-After', String(answer.retryAfter));
      res.status(answer.status);
      if (answer.body !== undefined) res.json(answer.body);
      else res.end();
    });
    return router;
  }
}

/**
 * A 200 JSON answer that never ends: `{"token":"` and then one byte every `everyMs` real milliseconds (0: as
 * fast as the client reads). It stops when the client goes away or the server closes its connections.
 */
function streamForever(res: express.Response, everyMs: number): void {
  res.status(200).type('application/json');
  res.write('{"token":"');
  const chunk = Buffer.alloc(everyMs > 0 ? 1 : 64 * 1024, 0x41);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  res.on('close', stop);
  const next = () => {
    if (stopped || res.destroyed) return;
    if (everyMs > 0) {
      res.write(chunk);
      timer = setTimeout(next, everyMs);
    } else if (res.write(chunk)) setImmediate(next);
    else res.once('drain', next);
  };
  next();
}
