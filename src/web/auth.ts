/**
 * What the web config puts in front of every request, in the toolkit's order: rate limit (429), the configured
 * headers, then basic auth (401 with `WWW-Authenticate: Basic`).
 *
 * Basic auth follows the toolkit's handler:
 * - an unknown user is checked against a fixed hash of the same cost, so timing does not tell which users exist;
 *   the answer is the same 401 whichever part was wrong;
 * - bcrypt runs once per distinct (user, hash, password) and the verdict is cached (100 entries, random eviction,
 *   as the toolkit's cache), so a scrape every 15 s does not pay ~70 ms of bcrypt each time. The cache key is a
 *   SHA-256 of the three (the toolkit keeps them in clear in memory; we do not need to). A new hash for a user (a
 *   reloaded file) is a new key, so an old password stops working at once;
 * - bcryptjs compares the final hash in constant time; concurrent first requests with the same credentials share
 *   one bcrypt run, and runs for different credentials take turns (the toolkit's mutex), so a burst of guesses
 *   cannot starve the event loop.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import bcrypt from 'bcryptjs';
import type { Clock } from '../clock.js';
import type { WebConfig } from './config.js';

export type AnyRequest = IncomingMessage | Http2ServerRequest;
export type AnyResponse = ServerResponse | Http2ServerResponse;
export type Handler = (req: AnyRequest, res: AnyResponse) => void;

/** bcrypt("fakepassword") at cost 10: the toolkit's stand-in for unknown users. */
const FAKE_HASH = '$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi';
export const AUTH_CACHE_SIZE = 100;

/** The toolkit's verdict cache: bounded, random eviction of a tenth when full. */
export class AuthCache {
  private readonly verdicts = new Map<string, boolean>();
  private readonly pending = new Map<string, Promise<boolean>>();
  /** bcrypt runs one at a time (the toolkit's bcryptMtx): many wrong passwords at once queue, not pile up. */
  private serial: Promise<unknown> = Promise.resolve();
  /** bcrypt runs so far (for tests and the benchmark: one per distinct credential). */
  bcryptRuns = 0;

  constructor(private readonly random: () => number = Math.random) {}

  async check(users: ReadonlyMap<string, string>, user: string, password: string): Promise<boolean> {
    const known = users.get(user);
    const hash = known ?? FAKE_HASH;
    const key = createHash('sha256')
      .update(user)
      .update('\0')
      .update(hash)
      .update('\0')
      .update(password)
      .digest('hex');
    const cached = this.verdicts.get(key);
    if (cached !== undefined) return cached && known !== undefined;
    let run = this.pending.get(key);
    if (!run) {
      this.bcryptRuns++;
      run = this.serial.then(() =>
        bcrypt.compare(password, hash).then(
          (ok) => ok && known !== undefined,
          () => false,
        ),
      );
      this.serial = run;
      this.pending.set(key, run);
    }
    try {
      const ok = await run;
      this.set(key, ok);
      return ok;
    } finally {
      this.pending.delete(key);
    }
  }

  get size(): number {
    return this.verdicts.size;
  }

  private set(key: string, ok: boolean): void {
    if (!this.verdicts.has(key) && this.verdicts.size >= AUTH_CACHE_SIZE) {
      const keys = [...this.verdicts.keys()];
      const drop = Math.max(Math.floor(keys.length / 10), 1);
      for (let i = 0; i < drop; i++) {
        const at = Math.floor(this.random() * keys.length);
        this.verdicts.delete(keys[at]!);
        keys.splice(at, 1);
      }
    }
    this.verdicts.set(key, ok);
  }
}

/** Go's `rate.NewLimiter(rate.Every(interval), burst)`: a token bucket that starts full; burst 0 allows nothing. */
export class RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    readonly intervalMs: number,
    readonly burst: number,
    private readonly clock: Clock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  allow(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + Math.max(0, now - this.last) / this.intervalMs);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** `Authorization: Basic base64(user:password)`; undefined when absent or malformed. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  if (!header) return undefined;
  const m = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

export interface GuardOptions {
  /** The config in force for this request (the reloader's current one). */
  config: () => WebConfig;
  /** Paths served without basic auth and rate limit (only `/healthz`, and only when the flag says so). */
  openPaths: ReadonlySet<string>;
  clock: Clock;
  cache?: AuthCache;
}

function refuse(res: AnyResponse, status: number, text: string, extra?: Record<string, string>): void {
  if (extra) for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.statusCode = status;
  res.end(`${text}\n`);
}

/** Wraps `next` (the app) with the web config's rate limit, headers and basic auth. */
export function guard(next: Handler, options: GuardOptions): Handler & { cache: AuthCache } {
  const cache = options.cache ?? new AuthCache();
  let limiter: RateLimiter | undefined;
  let limiterFor: WebConfig['rateLimit'];
  const handler = (req: AnyRequest, res: AnyResponse): void => {
    const config = options.config();
    const path = (req.url ?? '/').split('?')[0]!;
    const open = options.openPaths.has(path);
    if (config.rateLimit !== limiterFor) {
      limiterFor = config.rateLimit;
      limiter = limiterFor
        ? new RateLimiter(limiterFor.intervalMs, limiterFor.burst, options.clock)
        : undefined;
    }
    if (!open && limiter && !limiter.allow()) {
      refuse(res, 429, 'Too Many Requests');
      return;
    }
    for (const [k, v] of Object.entries(config.headers)) res.setHeader(k, v);
    if (open || config.users.size === 0) {
      next(req, res);
      return;
    }
    const creds = basicCredentials(req.headers.authorization);
    const deny = () => refuse(res, 401, 'Unauthorized', { 'WWW-Authenticate': 'Basic' });
    if (!creds) {
      deny();
      return;
    }
    cache.check(config.users, creds.user, creds.password).then(
      (ok) => (ok ? next(req, res) : deny()),
      () => deny(),
    );
  };
  return Object.assign(handler, { cache });
}
