/**
 * Simulator of the network-DVR API (docs/upstream-api.md), mounted at /app/dvr-net/v1.
 *
 * Assumptions where the document is silent (docs/upstream-api.md repeats them):
 * - `dvr.window`, `dvr.duration` and `ranges[].duration` are seconds.
 * - `dvr.from` is the start of the oldest range still held; with no ranges the key is left out.
 * - A stream with DVR disabled holds no ranges.
 * - Errors: a missing or unknown token is 403 `{status: 'Forbidden', description: 'Invalid token'}`; a token not
 *   entitled to the account is 403 `Access denied`; an unknown stream is 404 `NotFound`; a missing or malformed
 *   DELETE parameter (or a host the stream does not have) is 422 `UnprocessableEntity`; a body that is not JSON is
 *   400 `BadRequest`; another method on a stream path is 405 `MethodNotAllowed`.
 * - DELETE with both `duration_sec` and `to_ts` is accepted when they agree (`from_ts + duration_sec = to_ts`).
 * - A deletion applies to what is recorded now; a cut that reaches the present restarts the growing range at now.
 * - `failDeletesOn(hosts)` arms a one-shot failure per host: the next DELETE that touches that host fails there
 *   (500 with `failed_hosts`), the other hosts of the same request still apply it.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { isRecord } from '../http/parse.js';
import { HostTimeline, type SecRange } from './dvr-ranges.js';
import { intBetween } from './random.js';
import type { DvrSim, SimContext, SimDvrStream } from './types.js';

const DEFAULT_WINDOW = 3600;

interface StreamState {
  config: SimDvrStream;
  window: number;
  enabled: boolean;
  hosts: Map<string, HostTimeline>;
}

/** The simulator's state, without HTTP: also what tests and the demo inspect. */
export class DvrState {
  private readonly streams = new Map<string, Map<string, StreamState>>();
  private readonly failing = new Set<string>();

  constructor(private readonly ctx: SimContext) {
    const nowSec = this.nowSec();
    for (const account of ctx.accounts.values()) {
      const byName = new Map<string, StreamState>();
      for (const stream of account.streams)
        byName.set(stream.name, this.buildStream(account.name, stream, nowSec));
      this.streams.set(account.name, byName);
    }
  }

  nowSec(): number {
    return Math.floor(this.ctx.clock.now() / 1000);
  }

  stream(account: string, name: string): StreamState | undefined {
    return this.streams.get(account)?.get(name);
  }

  setAlive(account: string, name: string, alive: boolean): void {
    const stream = this.stream(account, name);
    if (!stream) throw new Error(`unknown stream ${account}/${name}`);
    const now = this.nowSec();
    for (const timeline of stream.hosts.values()) timeline.setAlive(alive, now);
  }

  removeStream(account: string, name: string): void {
    if (!this.streams.get(account)?.delete(name)) throw new Error(`unknown stream ${account}/${name}`);
  }

  failDeletesOn(hosts: string[]): void {
    this.failing.clear();
    for (const h of hosts) this.failing.add(h);
  }

  /** Applies a deletion to the targeted hosts; returns the hosts on which it failed (an armed failure). */
  delete(stream: StreamState, hosts: string[], apply: (t: HostTimeline, now: number) => void): string[] {
    const now = this.nowSec();
    const failed: string[] = [];
    for (const host of hosts) {
      if (this.failing.delete(host)) {
        failed.push(host);
        continue;
      }
      const timeline = stream.hosts.get(host);
      if (timeline) apply(timeline, now);
    }
    return failed;
  }

  /** The API's stream entries at the clock's now. */
  entries(stream: StreamState): DvrEntry[] {
    const now = this.nowSec();
    return [...stream.hosts].map(([host, timeline]) => {
      const ranges: SecRange[] = stream.enabled ? timeline.ranges(now) : [];
      const apiRanges = ranges.map((r) => ({ from: r.from, duration: r.to - r.from }));
      const first = apiRanges[0];
      return {
        stream_name: stream.config.name,
        host,
        is_alive: timeline.isAlive(),
        dvr: {
          enabled: stream.enabled,
          window: stream.window,
          duration: apiRanges.reduce((sum, r) => sum + r.duration, 0),
          ...(first ? { from: first.from } : {}),
          ranges: apiRanges,
        },
      };
    });
  }

  private buildStream(account: string, config: SimDvrStream, nowSec: number): StreamState {
    const window = config.window ?? DEFAULT_WINDOW;
    const seed = this.ctx.seed;
    const hosts = new Map<string, HostTimeline>();
    for (const host of config.hosts) {
      // Recording began between a quarter and one and a half windows ago, so a fresh simulator shows both partly
      // and fully covered windows.
      const startSec =
        nowSec -
        intBetween(
          seed,
          Math.floor(window / 4),
          Math.floor(window * 1.5),
          'start',
          account,
          config.name,
          host,
        );
      const every = config.breakEverySec ?? 0;
      const timeline = new HostTimeline({
        startSec,
        window,
        breakEverySec: every,
        breakPhaseSec: every > 1 ? intBetween(seed, 1, every - 1, 'phase', account, config.name, host) : 0,
        pauseFor: (k) => intBetween(seed, 3, 15, 'pause', account, config.name, host, k),
      });
      if (config.alive === false) {
        // A stream that starts dead was alive until a little while ago.
        const diedAt =
          nowSec -
          intBetween(seed, 60, Math.max(60, Math.floor(window / 2)), 'died', account, config.name, host);
        timeline.setAlive(false, Math.max(startSec, diedAt));
      }
      timeline.ranges(nowSec);
      hosts.set(host, timeline);
    }
    return { config, window, enabled: config.enabled ?? true, hosts };
  }
}

export interface DvrEntry {
  stream_name: string;
  host: string;
  is_alive: boolean;
  dvr: {
    enabled: boolean;
    window: number;
    duration: number;
    from?: number;
    ranges: { from: number; duration: number }[];
  };
}

function envelope(res: Response, code: number, status: string, description: string): void {
  res.status(code).json({ status, description });
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function streamNameOf(req: Request): string {
  const raw: unknown = req.params.stream;
  const parts = Array.isArray(raw) ? raw.map(String) : [String(raw ?? '')];
  return parts.filter((p) => p !== '').join('/');
}

type Parsed =
  | {
      ok: true;
      hosts: 'all' | string;
      apply: (t: HostTimeline, now: number) => void;
      echo: Record<string, unknown>;
    }
  | { ok: false; description: string };

/** Validates a DELETE body against the two documented forms. */
export function parseDeleteBody(body: unknown): Parsed {
  if (!isRecord(body)) return { ok: false, description: 'Request body must be a JSON object' };
  const { host, all, from_ts, duration_sec, to_ts } = body;
  if (typeof host !== 'string' || host === '')
    return { ok: false, description: 'Parameter host is required' };
  if (all !== undefined && typeof all !== 'boolean')
    return { ok: false, description: 'Parameter all must be a boolean' };
  if (all === true)
    return { ok: true, hosts: host, apply: (t, now) => t.deleteAll(now), echo: { host, all } };
  if (from_ts === undefined) return { ok: false, description: 'Parameter from_ts is required' };
  if (!isInt(from_ts) || from_ts < 0)
    return { ok: false, description: 'Parameter from_ts must be a UTC timestamp' };
  if (duration_sec === undefined && to_ts === undefined) {
    return { ok: false, description: 'One of the parameters duration_sec, to_ts is required' };
  }
  if (duration_sec !== undefined && (!isInt(duration_sec) || duration_sec <= 0)) {
    return { ok: false, description: 'Parameter duration_sec must be a positive integer' };
  }
  if (to_ts !== undefined && (!isInt(to_ts) || to_ts <= from_ts)) {
    return { ok: false, description: 'Parameter to_ts must be a UTC timestamp after from_ts' };
  }
  if (isInt(duration_sec) && isInt(to_ts) && from_ts + duration_sec !== to_ts) {
    return { ok: false, description: 'Parameters duration_sec and to_ts disagree' };
  }
  const end = isInt(to_ts) ? to_ts : from_ts + (duration_sec as number);
  const echo: Record<string, unknown> = { host, from_ts };
  if (all !== undefined) echo.all = all;
  if (duration_sec !== undefined) echo.duration_sec = duration_sec;
  if (to_ts !== undefined) echo.to_ts = to_ts;
  return { ok: true, hosts: host, apply: (t, now) => t.deleteSlice(from_ts, end, now), echo };
}

export function createDvrSim(ctx: SimContext): DvrSim & { state: DvrState } {
  const state = new DvrState(ctx);
  const router = express.Router();

  /** Checks the token and the account; answers the error itself and returns false when refused. */
  const authorize = (req: Request, res: Response, account: string): boolean => {
    const token = req.get('cdn-auth-token');
    const allowed = token ? ctx.accountsForToken(token) : undefined;
    if (!allowed) {
      envelope(res, 403, 'Forbidden', 'Invalid token');
      return false;
    }
    if (!allowed.includes(account)) {
      envelope(res, 403, 'Forbidden', 'Access denied');
      return false;
    }
    return true;
  };

  const findStream = (req: Request, res: Response): { name: string; stream: StreamState } | undefined => {
    const account = String(req.params.account);
    if (!authorize(req, res, account)) return undefined;
    const name = streamNameOf(req);
    const stream = state.stream(account, name);
    if (!stream) {
      envelope(res, 404, 'NotFound', `Stream ${name} not found`);
      return undefined;
    }
    return { name, stream };
  };

  router.get('/:account/streams/*stream', (req, res) => {
    const found = findStream(req, res);
    if (!found) return;
    res.json({ status: 'Completed', stream_name: found.name, data: state.entries(found.stream) });
  });

  router.delete('/:account/streams/*stream', express.json(), (req, res) => {
    const found = findStream(req, res);
    if (!found) return;
    const parsed = parseDeleteBody(req.body);
    if (!parsed.ok) {
      envelope(res, 422, 'UnprocessableEntity', parsed.description);
      return;
    }
    const known = [...found.stream.hosts.keys()];
    if (parsed.hosts !== '*' && !known.includes(parsed.hosts)) {
      envelope(res, 422, 'UnprocessableEntity', `Unknown host ${parsed.hosts}`);
      return;
    }
    const targets = parsed.hosts === '*' ? known : [parsed.hosts];
    const failed = state.delete(found.stream, targets, parsed.apply);
    if (failed.length > 0) {
      res.status(500).json({ status: 'Failed', failed_hosts: failed });
      return;
    }
    res.json({ status: 'Completed', stream_name: found.name, ...parsed.echo });
  });

  router.all('/:account/streams/*stream', (_req, res) => {
    envelope(res, 405, 'MethodNotAllowed', 'Method is not allowed');
  });

  router.use((_req, res) => {
    envelope(res, 404, 'NotFound', 'Not found');
  });

  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const type = isRecord(err) ? err.type : undefined;
    if (type === 'entity.parse.failed') {
      envelope(res, 400, 'BadRequest', 'Request body is not valid JSON');
      return;
    }
    envelope(res, 500, 'InternalError', 'Internal server error');
  });

  return {
    router,
    state,
    setAlive: (account, stream, alive) => state.setAlive(account, stream, alive),
    failDeletesOn: (hosts) => state.failDeletesOn(hosts),
    removeStream: (account, stream) => state.removeStream(account, stream),
  };
}
