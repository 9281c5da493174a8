/**
 * The simulator's HTTP server: the traffic metrics API (traffic.ts), the network-DVR API (dvr.ts) and the
 * recording-settings API (recorder.ts) behind one front that logs every request, applies the request-rate limit
 * and injects faults (faults.ts) before any API handler runs.
 *
 * Order per request to one of the three APIs: logged; the rate limit (429 `rate-limit`, which does not use up a
 * fault ordinal); the fault planned for this ordinal; the API. The request log never holds the token.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { systemClock } from '../clock.js';
import { AuthSim, type HostileLogin, type LoginRecord, type SimUser, type TokenKind } from './auth.js';
import { createDvrSim } from './dvr.js';
import {
  type FaultKind,
  FaultPlan,
  type FaultRates,
  gzipAnswers,
  makeMalformed,
  makeTrickled,
  RateLimiter,
  type SimApi,
  sendError,
} from './faults.js';
import { createInventoryApi } from './inventory.js';
import type { ListenOptions, SimulatorOptions } from './options.js';
import { createRecorderSim } from './recorder.js';
import { createTrafficApi, WindowRules } from './traffic.js';
import { TrafficModel, type TrafficTotals } from './traffic-model.js';
import type { DvrSim, RecorderSim, SimAccount, SimContext } from './types.js';
import { DEMO_PASSWORD, DEMO_TRAFFIC_SCALE, DEMO_USER, demoWorld } from './world.js';

export type { ListenOptions, SimulatorArgs, SimulatorOptions } from './options.js';
export { parseSimulatorArgs } from './options.js';

export interface RequestLogEntry {
  /** Arrival, clock milliseconds. */
  time: number;
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string[]>;
  api: SimApi | 'oauth' | 'inventory';
  /** What the request's token was at arrival (never the token itself): `expired` is an issued token past its lifetime. */
  token: TokenKind;
  /** The answered status; 0 while in flight (or when the client went away); `reset` when the socket was cut. */
  status: number | 'reset';
  /** The injected fault, or `rate-limit` when the request-rate limit refused it. */
  fault?: FaultKind | 'rate-limit';
  /** `gzip` when the answer was compressed (setGzip on, and the request's Accept-Encoding allowed it). */
  encoding?: 'gzip';
}

export interface TruthOptions {
  /** Report each minute as the API would at this time (late data with the simulator's lag). */
  asOf?: number;
  /** Overrides the simulator's lag for this call. */
  lagSeconds?: number;
}

export interface SimulatorControls {
  accounts: SimAccount[];
  dvr: DvrSim;
  recorder: RecorderSim;
  model: TrafficModel;
  /** In arrival order; beyond 100k entries the oldest are dropped. */
  requestLog: RequestLogEntry[];
  /**
   * The first request in the log that `match` accepts (default: any), or else the next one logged: the event a test
   * waits for instead of sleeping while "the request is in flight". It resolves in the turn the request is logged;
   * a request to one of the three APIs that no fault answers at once (none, `slow`, `malformed`, `trickle`) reaches
   * its API only in a later turn, so a test's continuation (after `await`) runs before the API looks at it.
   */
  requestArrived(match?: (entry: RequestLogEntry) => boolean): Promise<RequestLogEntry>;
  /**
   * Exact traffic totals over [startMs, endMs) (whole minutes) of one resource, or of the whole account when
   * `resource` is undefined. Without `asOf`: the complete values, as every minute eventually reports them.
   */
  truth(
    account: string,
    resource: string | undefined,
    startMs: number,
    endMs: number,
    opts?: TruthOptions,
  ): TrafficTotals;
  /** New rates; the fault ordinal restarts at 0. Throws on rates out of [0, 1] or adding up to more than 1. */
  setFaults(rates: FaultRates): void;
  /** Requests per second per token; undefined or 0: no limit. */
  setRateLimit(limit: number | undefined): void;
  /** Gzip answers from now on when the request's Accept-Encoding allows it. */
  setGzip(on: boolean): void;
  /**
   * Traffic windows starting in [fromMs, toMs) get 422 with `description` (default: the documented
   * `Invalid time format. Time must be at minute precision`). Adds to earlier ranges.
   */
  rejectWindows(fromMs: number, toMs: number, description?: string): void;
  /** Traffic windows longer than `minutes` get 504 `Execution timeout exceeded`; undefined: no limit. */
  timeoutWindowsLongerThan(minutes: number | undefined): void;
  /** Drops every rejectWindows range and the 504 limit. */
  clearWindowRules(): void;
  /** The account's token from now on, for all three APIs; the old one is refused at once. */
  setToken(account: string, token: string): void;
  /** Login users (src/simulator/auth.ts); change passwords with setPassword. */
  users: SimUser[];
  /** Every login request, in order. */
  logins: LoginRecord[];
  setPassword(username: string, password: string): void;
  /** Every token the login endpoint issued. */
  issuedTokens(): string[];
  /** The user is banned (too many wrong passwords) at the simulator's now. */
  banned(username: string): boolean;
  /** Ends every token of the user now; returns how many were valid. */
  revokeTokens(username: string): number;
  /** Lifetime of tokens issued from now on. */
  setTokenLifetime(ms: number): void;
  /** A new account (inventory, traffic, DVR and recordings), visible to the named login users. */
  addAccount(account: SimAccount, users?: string[]): void;
  /** The account no longer exists: gone from the inventory, its APIs refuse it. */
  removeAccount(name: string): void;
  /** Its status in the inventory (`active`, or anything else: `inactive`, `blocked`, ...). */
  setAccountStatus(name: string, status: string): void;
  /** The inventory answers this status (503: down) instead of the list; undefined: it works again. */
  failInventory(status: number | undefined): void;
  /**
   * The inventory answers these bytes (200, JSON) to any token instead of the list: a hostile or broken listing
   * (100,000 accounts, names no API has, a body that is not JSON); undefined: it answers the list again.
   */
  setInventoryBody(body: string | Buffer | undefined): void;
  /** The login endpoint misbehaves as `hostile` says (src/simulator/auth.ts); undefined: it works again. */
  hostileLogin(hostile: HostileLogin | undefined): void;
  /** The late-data lag from now on, seconds (as `--lag`). */
  setLag(seconds: number): void;
  /**
   * A downward correction: from now on every count of the account's minutes in [fromMs, toMs) is reported as
   * floor(count * factor) (0..1), by the API and by `truth` alike.
   */
  correctDown(account: string, fromMs: number, toMs: number, factor: number): void;
}

export type SimulatorApp = Express & { simulator: SimulatorControls & { dispose(): void } };

export interface Simulator extends SimulatorControls {
  url: string;
  port: number;
  /** Stops listening, cuts keep-alive sockets and pending slow answers. */
  close(): Promise<void>;
}

const OTHER_PREFIXES: [string, 'oauth' | 'inventory'][] = [
  ['/app/oauth/v1', 'oauth'],
  ['/app/inventory/v1', 'inventory'],
];

const API_PREFIXES: [string, SimApi][] = [
  ['/app/metrics/v1', 'metrics'],
  ['/app/dvr-net/v1', 'dvr-net'],
  ['/app/recorder-cloud/v1', 'recorder-cloud'],
];
const LOG_LIMIT = 100_000;
/** Retry-After of an injected 429 fault, seconds. */
const FAULT_RETRY_AFTER = 1;

function apiOf(path: string): SimApi | undefined {
  for (const [prefix, api] of API_PREFIXES) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return api;
  }
  return undefined;
}

function queryRecord(url: string): Record<string, string[]> {
  const q = url.indexOf('?');
  const out: Record<string, string[]> = {};
  if (q < 0) return out;
  for (const [k, v] of new URLSearchParams(url.slice(q + 1))) out[k] = [...(out[k] ?? []), v];
  return out;
}

export function createSimulatorApp(opts: SimulatorOptions): SimulatorApp {
  const clock = opts.clock ?? systemClock;
  const accountList = opts.accounts ?? demoWorld();
  const accounts = new Map(accountList.map((a) => [a.name, a]));
  const auth = new AuthSim({
    clock,
    users: opts.users ?? [
      { username: DEMO_USER, password: DEMO_PASSWORD, accounts: accountList.map((a) => a.name) },
    ],
    lifetimeMs: opts.tokenLifetimeMs,
    banDurationMs: opts.banDurationMs,
  });
  const ctx: SimContext = {
    clock,
    seed: opts.seed,
    accounts,
    accountsForToken(token) {
      const user = auth.userForToken(token);
      if (user) return user.accounts.filter((a) => accounts.has(a));
      const names = accountList.filter((a) => a.token === token).map((a) => a.name);
      return names.length > 0 ? names : undefined;
    },
  };
  const tokenKind = (token: string | undefined): TokenKind => {
    if (token !== undefined && accountList.some((a) => a.token === token)) return 'static';
    return auth.kind(token);
  };
  let lagSeconds = opts.lagSeconds ?? 0;
  const model = new TrafficModel(opts.seed, opts.trafficScale ?? (opts.accounts ? {} : DEMO_TRAFFIC_SCALE));
  const dvr = createDvrSim(ctx);
  const recorder = createRecorderSim(ctx);
  let plan = new FaultPlan(opts.faults ?? {}, opts.seed);
  const limiter = new RateLimiter(opts.rateLimit);
  const slowMs = opts.slowMs ?? 5000;
  const trickleMs = opts.trickleMs ?? 1000;
  let gzip = opts.gzip ?? false;
  const slowTimers = new Set<NodeJS.Timeout>();
  const requestLog: RequestLogEntry[] = [];
  let arrivalWaiters: {
    match: (entry: RequestLogEntry) => boolean;
    resolve: (e: RequestLogEntry) => void;
  }[] = [];
  const windowRules = new WindowRules();

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });

  const logRequest = (req: Request, res: Response, api: RequestLogEntry['api']): RequestLogEntry => {
    const entry: RequestLogEntry = {
      time: clock.now(),
      method: req.method,
      path: req.path,
      query: queryRecord(req.originalUrl),
      api,
      token: tokenKind(req.get('cdn-auth-token')),
      status: 0,
    };
    requestLog.push(entry);
    if (requestLog.length > LOG_LIMIT) requestLog.splice(0, requestLog.length - LOG_LIMIT);
    if (arrivalWaiters.length > 0) {
      arrivalWaiters = arrivalWaiters.filter((w) => {
        if (!w.match(entry)) return true;
        w.resolve(entry);
        return false;
      });
    }
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    return entry;
  };

  // Login and inventory: logged, but outside the fault plan and the per-token rate limit (the login has its own).
  app.use((req: Request, res: Response, next: NextFunction) => {
    const other = OTHER_PREFIXES.find(([prefix]) => req.path.startsWith(`${prefix}/`));
    if (other) logRequest(req, res, other[1]);
    next();
  });
  app.use('/app/oauth/v1', auth.router());
  let inventoryFailure: number | undefined;
  let inventoryBody: string | Buffer | undefined;
  app.use(
    '/app/inventory/v1',
    createInventoryApi(
      ctx,
      () => inventoryFailure,
      () => inventoryBody,
    ),
  );

  app.use((req: Request, res: Response, next: NextFunction) => {
    const api = apiOf(req.path);
    if (!api) {
      next();
      return;
    }
    const entry = logRequest(req, res, api);
    res.locals.api = api;
    if (gzip && /\bgzip\b/i.test(req.get('accept-encoding') ?? '')) {
      entry.encoding = 'gzip';
      gzipAnswers(res);
    }

    const retryAfter = limiter.check(req.get('cdn-auth-token'), clock.now());
    if (retryAfter !== undefined) {
      entry.fault = 'rate-limit';
      sendError(res, api, 429, retryAfter);
      return;
    }
    const fault = plan.next();
    if (fault === undefined) {
      // The answer is computed in a later turn of the event loop, so that requests already waiting on other
      // sockets are stamped and rate-checked on arrival, as a real API's edge would, not after this one's work.
      setImmediate(next);
      return;
    }
    entry.fault = fault;
    switch (fault) {
      case 'reset':
        entry.status = 'reset';
        req.socket.destroy();
        return;
      case 'slow': {
        const timer = setTimeout(() => {
          slowTimers.delete(timer);
          next();
        }, slowMs);
        slowTimers.add(timer);
        return;
      }
      case 'malformed':
        makeMalformed(res);
        next();
        return;
      case 'trickle':
        makeTrickled(res, trickleMs, slowTimers);
        next();
        return;
      default: {
        const code = Number(fault);
        sendError(res, api, code, code === 429 ? FAULT_RETRY_AFTER : undefined);
      }
    }
  });

  app.use(
    '/app/metrics/v1',
    createTrafficApi({
      ctx,
      model,
      lagSeconds: () => lagSeconds,
      requestTimeShape: opts.requestTimeShape ?? 'object',
      rules: windowRules,
    }),
  );
  app.use('/app/dvr-net/v1', dvr.router);
  app.use('/app/recorder-cloud/v1', recorder.router);
  app.use((_req, res) => {
    res.status(404).json({ description: 'Not found' });
  });
  app.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const api = res.locals.api as SimApi | undefined;
    if (api) sendError(res, api, 500);
    else res.status(500).json({ description: 'Internal server error' });
  });

  const controls: SimulatorControls & { dispose(): void } = {
    accounts: accountList,
    dvr,
    recorder,
    model,
    requestLog,
    requestArrived(match = () => true) {
      const seen = requestLog.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => arrivalWaiters.push({ match, resolve }));
    },
    truth(account, resource, startMs, endMs, o = {}) {
      const acc = accounts.get(account);
      if (!acc) throw new Error(`unknown account ${account}`);
      const ids = resource === undefined ? acc.resources.map((r) => r.id) : [resource];
      if (resource !== undefined && !acc.resources.some((r) => r.id === resource)) {
        throw new Error(`unknown resource ${resource} of account ${account}`);
      }
      const late =
        o.asOf === undefined ? undefined : { asOf: o.asOf, lagSeconds: o.lagSeconds ?? lagSeconds };
      return model.totals(account, ids, startMs, endMs, late);
    },
    setFaults(rates) {
      plan = new FaultPlan(rates, opts.seed);
    },
    setRateLimit(limit) {
      limiter.limit = limit;
    },
    setGzip(on) {
      gzip = on;
    },
    rejectWindows(fromMs, toMs, description) {
      windowRules.reject(fromMs, toMs, description);
    },
    timeoutWindowsLongerThan(minutes) {
      windowRules.timeoutAboveMinutes = minutes;
    },
    clearWindowRules() {
      windowRules.clear();
    },
    setToken(account, token) {
      const acc = accounts.get(account);
      if (!acc) throw new Error(`unknown account ${account}`);
      if (token === '') throw new Error('the token is empty');
      acc.token = token;
    },
    users: auth.users,
    logins: auth.logins,
    setPassword(username, password) {
      auth.setPassword(username, password);
    },
    issuedTokens: () => auth.issuedTokens(),
    banned: (username) => auth.banned(username),
    revokeTokens: (username) => auth.revoke(username),
    setTokenLifetime(ms) {
      if (!(ms > 0)) throw new Error('the token lifetime must be positive');
      auth.lifetimeMs = ms;
    },
    addAccount(account, users = auth.users.map((u) => u.username)) {
      if (accounts.has(account.name)) throw new Error(`account ${account.name} exists`);
      accountList.push(account);
      accounts.set(account.name, account);
      for (const name of users) {
        const u = auth.user(name);
        if (!u) throw new Error(`unknown user ${name}`);
        if (!u.accounts.includes(account.name)) u.accounts.push(account.name);
      }
    },
    removeAccount(name) {
      if (!accounts.delete(name)) throw new Error(`unknown account ${name}`);
      accountList.splice(
        accountList.findIndex((a) => a.name === name),
        1,
      );
    },
    failInventory(status) {
      inventoryFailure = status;
    },
    setInventoryBody(body) {
      inventoryBody = body;
    },
    hostileLogin(hostile) {
      auth.hostile = hostile;
    },
    setAccountStatus(name, status) {
      const acc = accounts.get(name);
      if (!acc) throw new Error(`unknown account ${name}`);
      acc.status = status;
    },
    setLag(seconds) {
      if (!(seconds >= 0)) throw new Error(`the lag is seconds >= 0, got ${seconds}`);
      lagSeconds = seconds;
    },
    correctDown(account, fromMs, toMs, factor) {
      if (!accounts.has(account)) throw new Error(`unknown account ${account}`);
      model.correctDown(account, fromMs, toMs, factor);
    },
    dispose() {
      for (const t of slowTimers) clearTimeout(t);
      slowTimers.clear();
    },
  };
  return Object.assign(app, { simulator: controls });
}

export async function startSimulator(opts: SimulatorOptions, listen: ListenOptions = {}): Promise<Simulator> {
  const app = createSimulatorApp(opts);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(listen.port ?? 0, listen.host ?? '127.0.0.1', (err?: Error) => {
      if (err) reject(err);
      else resolve(s);
    });
  });
  const { port, address, family } = server.address() as AddressInfo;
  const host = family === 'IPv6' ? `[${address}]` : address;
  const controls = app.simulator;
  return {
    ...controls,
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        controls.dispose();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
