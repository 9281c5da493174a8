/**
 * What the web config puts in front of every request, in the toolkit's order: rate limit (429), the configured
 * headers, then basic auth (401 with `WWW-Authenticate: Basic`).
 *
 * Basic auth follows the toolkit's handler:
 * - an unknown user is checked against a fixed hash of the same cost, so timing does not tell which users exist;
 *   the answer is the same 401 whichever part was wrong;
 * - bcrypt runs once per distinct (user, hash, password) and the verdict is cached, so a scrape every 15 s does not
 *   pay ~70 ms of bcrypt each time. The cache key is a SHA-256 of the three (the toolkit keeps them in clear in
 *   memory; we do not need to). A new hash for a user (a reloaded file) is a new key, so an old password stops
 *   working at once;
 * - bcryptjs compares the final hash in constant time; concurrent first requests with the same credentials share
 *   one bcrypt run, and runs for different credentials take turns (the toolkit's mutex).
 *
 * And, unlike the toolkit, it holds under a guessing flood (200 clients guessing kept the legitimate scrape waiting
 * 12-19 s behind their bcrypt runs, and their failures evicted its cached verdict):
 * - successes and failures are cached apart (AUTH_CACHE_SIZE and FAILURE_CACHE_SIZE): failures never evict a
 *   success, so the legitimate scraper's verdict stays cached and it is answered at once whatever is queued;
 * - bcrypt runs in a worker thread (./bcrypt-worker.ts; inline when the build is missing), so the event loop
 *   answers every other request while checks run;
 * - at most MAX_PENDING_CHECKS bcrypt runs wait or run at once; a request that would be one more is answered 429
 *   with Retry-After, without a check;
 * - failed attempts are limited per client address (server.auth_failure_limit: `burst` at once, then one per
 *   `interval`, as the toolkit's `rate_limit` but per client and for failures only): past it, 429 without a check.
 *   The budget is spent only by a credential that needs a bcrypt run: one with a cached verdict is answered from
 *   the cache (200 or 401) without spending or checking it, so another client at the same address cannot lock out
 *   a credential known good, nor drain the budget by repeating a wrong password (issue 33, row 6). Every
 *   credential not known, right or wrong, still needs the budget for its check: a guesser gets no more checks;
 * - the successes can be kept in a file (AuthCacheOptions.file, beside state_file), so a credential known good
 *   stays known across restarts: the scraper is not held back after a restart by a guesser at its address. The
 *   file holds the cache keys (SHA-256 of user, bcrypt hash and password), never a password or user in clear;
 *   with the web config's hash, a key allows testing passwords at SHA-256 speed instead of bcrypt's, so it is
 *   written owner-only (0600), as private as the web config.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { basename, dirname, join } from 'node:path';
import bcrypt from 'bcryptjs';
import { type Clock, systemClock } from '../clock.js';
import { WorkerChannel } from '../offloop/channel.js';
import { DEFAULT_SERVER_LIMITS } from '../server/limits.js';
import type { CheckReply, CheckRequest } from './bcrypt-worker.js';
import type { WebConfig } from './config.js';

export type AnyRequest = IncomingMessage | Http2ServerRequest;
export type AnyResponse = ServerResponse | Http2ServerResponse;
export type Handler = (req: AnyRequest, res: AnyResponse) => void;

/** bcrypt("fakepassword") at cost 10: the toolkit's stand-in for unknown users. */
const FAKE_HASH = '$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi';
/** Successful verdicts kept (the toolkit's cache size); evicted only to make room for another success. */
export const AUTH_CACHE_SIZE = 100;
/** Failed verdicts kept (a guess repeated costs no bcrypt run). */
export const FAILURE_CACHE_SIZE = 1000;
/** bcrypt runs waiting or running at most; beyond, 429 without a check (85 ms each: 32 is under 3 s of work). */
export const MAX_PENDING_CHECKS = 32;

export type Verdict = 'ok' | 'denied' | 'busy';

/**
 * bcrypt in a worker thread (./bcrypt-worker.ts), started with the first check and stopped after a minute idle;
 * inline (bcryptjs.compare) when the worker's file is missing (the sources run without a build).
 */
export function workerCompare(
  opts: { clock?: Clock; url?: URL } = {},
): (password: string, hash: string) => Promise<boolean> {
  const channel = new WorkerChannel<CheckReply>({
    name: 'bcrypt worker',
    url: opts.url ?? new URL('./bcrypt-worker.js', import.meta.url),
    idleMs: 60_000,
    clock: opts.clock ?? systemClock,
    missingMessage: 'bcrypt worker not found (run the build): basic auth checks run on the event loop',
  });
  return async (password, hash) => {
    if (!channel.available || channel.closed) return bcrypt.compare(password, hash);
    const bytes = new TextEncoder().encode(JSON.stringify([password, hash]));
    const reply = await channel.send(bytes, (id, own): CheckRequest => ({ id, bytes: own }));
    return reply.ok;
  };
}

export interface AuthCacheOptions {
  random?: () => number;
  /** The password check (default workerCompare()): a test's seam to hold or count checks. */
  compare?: (password: string, hash: string) => Promise<boolean>;
  maxPending?: number;
  /**
   * A file that keeps the successful verdicts across restarts (verdictFileBeside(state_file)); absent: memory
   * only. Read at construction (missing or unreadable: start empty), rewritten after each new success.
   */
  file?: string;
  /** Told when the file cannot be read or written; the cache works on without it. */
  onFileError?: (err: Error) => void;
}

/** `state.json` -> `state.auth-verdicts.json`: the verdict file of an exporter with state_file. */
export function verdictFileBeside(stateFile: string): string {
  const base = basename(stateFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(stateFile), `${stem}.auth-verdicts.json`);
}

/** The verdict file's format: the success keys, newest last. */
const VERDICT_FILE_VERSION = 1;
const KEY = /^[0-9a-f]{64}$/;

function readVerdictFile(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const doc = JSON.parse(text) as { version?: unknown; successes?: unknown };
  if (doc.version !== VERDICT_FILE_VERSION || !Array.isArray(doc.successes))
    throw new Error(`${file}: not a verdict file of version ${VERDICT_FILE_VERSION}`);
  return doc.successes
    .filter((k): k is string => typeof k === 'string' && KEY.test(k))
    .slice(-AUTH_CACHE_SIZE);
}

/** A bounded map of verdicts: random eviction of a tenth when full (the toolkit's). */
class VerdictMap {
  private readonly map = new Map<string, true>();

  constructor(
    private readonly max: number,
    private readonly random: () => number,
  ) {}

  has(key: string): boolean {
    return this.map.has(key);
  }

  keys(): string[] {
    return [...this.map.keys()];
  }

  get size(): number {
    return this.map.size;
  }

  add(key: string): void {
    if (!this.map.has(key) && this.map.size >= this.max) {
      const keys = [...this.map.keys()];
      const drop = Math.max(Math.floor(keys.length / 10), 1);
      for (let i = 0; i < drop; i++) {
        const at = Math.floor(this.random() * keys.length);
        this.map.delete(keys[at]!);
        keys.splice(at, 1);
      }
    }
    this.map.set(key, true);
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}

/** The verdict cache and the bounded queue of bcrypt runs. */
export class AuthCache {
  private readonly successes: VerdictMap;
  private readonly failures: VerdictMap;
  private readonly pending = new Map<string, Promise<boolean>>();
  /** bcrypt runs one at a time (the toolkit's bcryptMtx): many wrong passwords at once queue, not pile up. */
  private serial: Promise<unknown> = Promise.resolve();
  /** bcrypt runs waiting or running. */
  private queued = 0;
  private readonly compare: (password: string, hash: string) => Promise<boolean>;
  private readonly maxPending: number;
  /** bcrypt runs so far (for tests and the benchmark: one per distinct credential). */
  bcryptRuns = 0;
  private readonly file: string | undefined;
  private readonly onFileError: (err: Error) => void;
  /** The write of the file under way, and whether another is due after it. */
  private writing: Promise<void> | undefined;
  private dirty = false;

  constructor(opts: AuthCacheOptions | (() => number) = {}) {
    const o = typeof opts === 'function' ? { random: opts } : opts;
    const random = o.random ?? Math.random;
    this.successes = new VerdictMap(AUTH_CACHE_SIZE, random);
    this.failures = new VerdictMap(FAILURE_CACHE_SIZE, random);
    this.compare = o.compare ?? workerCompare();
    this.maxPending = o.maxPending ?? MAX_PENDING_CHECKS;
    this.file = o.file;
    this.onFileError = o.onFileError ?? (() => {});
    if (this.file !== undefined) {
      try {
        for (const key of readVerdictFile(this.file)) this.successes.add(key);
      } catch (err) {
        // Only a cache: a broken file costs one bcrypt run per credential, and is rewritten at the next success.
        this.onFileError(err as Error);
      }
    }
  }

  /** Resolves once the file holds every success so far (at once without a file). */
  async saved(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Rewrites the file (coalesced: one write at a time, the last state wins), atomically, owner-only. */
  private persist(): void {
    if (this.file === undefined) return;
    this.dirty = true;
    if (this.writing) return;
    const file = this.file;
    const write = async (): Promise<void> => {
      while (this.dirty) {
        this.dirty = false;
        const text = JSON.stringify({ version: VERDICT_FILE_VERSION, successes: this.successes.keys() });
        const tmp = `${file}.tmp`;
        try {
          // writeFile's mode applies only to a new file: a leftover of a crash is removed first.
          await rm(tmp, { force: true });
          await writeFile(tmp, `${text}\n`, { mode: 0o600 });
          await rename(tmp, file);
        } catch (err) {
          this.onFileError(err as Error);
        }
      }
    };
    this.writing = write().finally(() => {
      this.writing = undefined;
    });
  }

  /** The cached verdict of these credentials (true, false), or undefined when they were not checked yet. */
  cached(users: ReadonlyMap<string, string>, user: string, password: string): boolean | undefined {
    const key = keyOf(users, user, password);
    if (this.successes.has(key)) return users.has(user);
    if (this.failures.has(key)) return false;
    return undefined;
  }

  async check(users: ReadonlyMap<string, string>, user: string, password: string): Promise<boolean> {
    return (await this.verdict(users, user, password)) === 'ok';
  }

  /** The verdict, from the cache or a bcrypt run; `busy` when MAX_PENDING_CHECKS runs are queued already. */
  async verdict(users: ReadonlyMap<string, string>, user: string, password: string): Promise<Verdict> {
    const known = users.get(user);
    const hash = known ?? FAKE_HASH;
    const key = keyOf(users, user, password);
    if (this.successes.has(key)) return known !== undefined ? 'ok' : 'denied';
    if (this.failures.has(key)) return 'denied';
    let run = this.pending.get(key);
    if (!run) {
      if (this.queued >= this.maxPending) return 'busy';
      this.bcryptRuns++;
      this.queued++;
      run = this.serial
        .then(() => this.compare(password, hash))
        .then(
          (ok) => ok && known !== undefined,
          () => false,
        )
        .finally(() => {
          this.queued--;
        });
      this.serial = run;
      this.pending.set(key, run);
    }
    try {
      const ok = await run;
      if (ok) {
        const fresh = !this.successes.has(key);
        this.successes.add(key);
        this.failures.delete(key);
        if (fresh) this.persist();
      } else this.failures.add(key);
      return ok ? 'ok' : 'denied';
    } finally {
      this.pending.delete(key);
    }
  }

  /** Verdicts cached, successes and failures. */
  get size(): number {
    return this.successes.size + this.failures.size;
  }
}

function keyOf(users: ReadonlyMap<string, string>, user: string, password: string): string {
  const hash = users.get(user) ?? FAKE_HASH;
  return createHash('sha256')
    .update(user)
    .update('\0')
    .update(hash)
    .update('\0')
    .update(password)
    .digest('hex');
}

/** Most client addresses tracked by FailureLimiter; when full, the oldest is forgotten (it starts full again). */
const MAX_CLIENTS = 10_000;

/**
 * Failed attempts per client address: a token bucket each (`burst`, one more per `intervalMs`), taken before a
 * check and given back when it succeeds. Bounded to MAX_CLIENTS addresses.
 */
export class FailureLimiter {
  private readonly clients = new Map<string, RateLimiter>();

  constructor(
    readonly burst: number,
    readonly intervalMs: number,
    private readonly clock: Clock,
  ) {}

  /** Takes one attempt of `client`'s budget; false when none is left. */
  take(client: string): boolean {
    let limiter = this.clients.get(client);
    if (limiter === undefined) {
      if (this.clients.size >= MAX_CLIENTS) this.clients.delete(this.clients.keys().next().value!);
      limiter = new RateLimiter(this.intervalMs, this.burst, this.clock);
      this.clients.set(client, limiter);
    }
    return limiter.allow();
  }

  /** Gives back an attempt taken for a check that succeeded (or did not happen). */
  giveBack(client: string): void {
    this.clients.get(client)?.refund();
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

  /** Gives back one token taken by allow() (up to the burst). */
  refund(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
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
  /** Failed attempts per client address (server.auth_failure_limit); default: DEFAULT_SERVER_LIMITS'. */
  failureLimit?: { burst: number; intervalMs: number };
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
  const { burst, intervalMs } = options.failureLimit ?? {
    burst: DEFAULT_SERVER_LIMITS.authFailureBurst,
    intervalMs: DEFAULT_SERVER_LIMITS.authFailureIntervalMs,
  };
  const failures = new FailureLimiter(burst, intervalMs, options.clock);
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
    // A cached verdict is answered at once, whatever is queued, and neither spends nor checks the failure
    // budget: the scraper's known-good credential is never limited by another client at its address, and a
    // wrong password repeated (a client with a stale one) costs no check, so it does not drain the budget either.
    // The budget is for checks: every credential not cached needs it, so a guesser gets no more of them.
    const known = cache.cached(config.users, creds.user, creds.password);
    if (known === true) {
      next(req, res);
      return;
    }
    if (known === false) {
      deny();
      return;
    }
    const client = req.socket?.remoteAddress ?? '';
    const tooMany = () =>
      refuse(res, 429, 'Too Many Requests', {
        'Retry-After': String(Math.max(1, Math.ceil(failures.intervalMs / 1000))),
      });
    if (!failures.take(client)) {
      tooMany();
      return;
    }
    cache.verdict(config.users, creds.user, creds.password).then(
      (verdict) => {
        if (verdict !== 'denied') failures.giveBack(client);
        if (verdict === 'ok') next(req, res);
        else if (verdict === 'busy') tooMany();
        else deny();
      },
      () => deny(),
    );
  };
  return Object.assign(handler, { cache });
}
