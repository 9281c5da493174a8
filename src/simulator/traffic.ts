/**
 * The traffic metrics API (docs/upstream-api.md) of the simulator: the two endpoints `GET /app/metrics/v1/` and
 * `GET /app/metrics/v1/resources`, answered from the traffic model (./traffic-model.ts).
 *
 * A window's answer is its minutes' totals (TrafficModel.totals) in the API's keys (metricValues):
 * - counts (codes, classes, requests, bytes, hit bytes) are sums over the minutes;
 * - `*_bandwidth` is total bits / window seconds, `edge_hit_ratio` is hit bytes / bytes (0 without bytes);
 * - `*_request_time` per range is the mean of the minutes' medians weighted by their 2xx counts (0 without 2xx).
 *
 * Assumptions where the document says "not shown" (docs/upstream-api.md repeats them):
 * - Without `metric=`, every documented metric is returned.
 * - An unknown account and an account the token may not see are both 403 (the API does not show the difference).
 * - An unknown `resource=` is 422 naming it; `resource=` may repeat (a set).
 * - How ranges of `*_request_time` appear is configurable (`requestTimeShape`): an object keyed by range,
 *   flattened keys (`edge_request_time_0_250k`), or one number over all sizes. `metrics` lists the documented
 *   names either way.
 * - Malformed times are 422 `Invalid time format ...` naming the parameter; seconds other than 00 are 422 with
 *   the documented text.
 */
import express, { type Request, type Response } from 'express';
import { METRIC_NAMES, SIZE_RANGES as RANGES, type Side, type StatusClass } from '../api/vocabulary.js';
import { MINUTE } from '../clock.js';
import type { TrafficModel, TrafficTotals } from './traffic-model.js';
import type { SimAccount, SimContext } from './types.js';

export type RequestTimeShape = 'object' | 'flat' | 'number';

/** The data keys of one element: documented metric names (request_time expanded by shape) to values. */
export function metricValues(
  totals: TrafficTotals,
  seconds: number,
  names: readonly string[],
  shape: RequestTimeShape,
): Record<string, number | Record<string, number>> {
  const out: Record<string, number | Record<string, number>> = {};
  for (const name of names) {
    const sideName: Side = name.startsWith('edge_') ? 'edge' : 'origin';
    const side = totals[sideName];
    const rest = name.slice(sideName.length + 1);
    if (rest === 'bandwidth') out[name] = (side.bytes * 8) / seconds;
    else if (rest === 'requests_total') out[name] = side.requests;
    else if (rest === 'hit_bytes') out[name] = side.hitBytes;
    else if (rest === 'hit_ratio') out[name] = side.bytes > 0 ? side.hitBytes / side.bytes : 0;
    else if (rest === 'request_time') {
      if (shape === 'number') out[name] = side.requestTimeAll;
      else if (shape === 'object') out[name] = { ...side.requestTime };
      else for (const r of RANGES) out[`${name}_${r}`] = side.requestTime[r]!;
    } else if (rest.startsWith('status_')) {
      const suffix = rest.slice('status_'.length);
      out[name] = suffix.endsWith('xx') ? side.classes[suffix as StatusClass] : side.codes[suffix]!;
    }
  }
  return out;
}

const TIME_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/;
export const MINUTE_PRECISION = 'Invalid time format. Time must be at minute precision';

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Epoch ms of an API time string; throws a 422 ApiError naming the parameter. */
export function parseApiTime(value: string, param: string): number {
  const m = TIME_RE.exec(value);
  if (!m) throw new ApiError(422, `Invalid time format for ${param}: expected YYYY-MM-DDThh:mm:00`);
  if (m[6] !== '00') throw new ApiError(422, MINUTE_PRECISION);
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const ms = Date.UTC(y, mo - 1, d, h, mi);
  const back = new Date(ms);
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59) {
    throw new ApiError(422, `Invalid time format for ${param}: expected YYYY-MM-DDThh:mm:00`);
  }
  return ms;
}

/** `YYYY-MM-DDThh:mm:00` of epoch ms. */
export function formatApiTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/**
 * Test controls: valid windows the API refuses all the same, read on every request. A rejected window gets 422
 * (as the real API does for parameters it does not accept); a window longer than the limit gets 504, as a real
 * query that runs out of time. Both are checked after the token and the parameters, 422 before 504.
 */
export class WindowRules {
  private rejected: Array<{ from: number; to: number; description: string }> = [];
  /** Windows longer than this many minutes get 504; undefined: none. */
  timeoutAboveMinutes: number | undefined;

  /** Windows whose start lies in [fromMs, toMs) get 422 with `description`. Adds to earlier ranges. */
  reject(fromMs: number, toMs: number, description: string = MINUTE_PRECISION): void {
    this.rejected.push({ from: fromMs, to: toMs, description });
  }

  clear(): void {
    this.rejected = [];
    this.timeoutAboveMinutes = undefined;
  }

  /** The refusal of a valid window [startMs, endMs), or undefined when it is answered. */
  refusal(startMs: number, endMs: number): { status: number; description: string } | undefined {
    const hit = this.rejected.find((r) => startMs >= r.from && startMs < r.to);
    if (hit) return { status: 422, description: hit.description };
    const limit = this.timeoutAboveMinutes;
    if (limit !== undefined && endMs - startMs > limit * MINUTE) {
      return { status: 504, description: 'Execution timeout exceeded' };
    }
    return undefined;
  }
}

export interface TrafficApiOptions {
  ctx: SimContext;
  model: TrafficModel;
  /** Read on every request (the simulator's controls may change it). */
  lagSeconds: () => number;
  requestTimeShape: RequestTimeShape;
  /** Default: none. */
  rules?: WindowRules;
}

function queryOf(req: Request): URLSearchParams {
  const q = req.originalUrl.indexOf('?');
  return new URLSearchParams(q >= 0 ? req.originalUrl.slice(q + 1) : '');
}

function required(q: URLSearchParams, name: string): string {
  const v = q.get(name);
  if (v === null || v === '') throw new ApiError(422, `Missing required parameter: ${name}`);
  return v;
}

interface ParsedQuery {
  account: SimAccount;
  start: string;
  end: string;
  startMs: number;
  endMs: number;
  metrics: readonly string[];
  resources: SimAccount['resources'];
}

function parseQuery(req: Request, ctx: SimContext): ParsedQuery {
  const token = req.get('cdn-auth-token');
  const allowed = token ? ctx.accountsForToken(token) : undefined;
  if (!allowed) throw new ApiError(403, 'Invalid token');
  const q = queryOf(req);
  const accountName = required(q, 'account');
  const account = ctx.accounts.get(accountName);
  if (!account || !allowed.includes(accountName)) {
    throw new ApiError(403, `Access denied to account ${JSON.stringify(accountName)}`);
  }
  const start = required(q, 'start');
  const end = required(q, 'end');
  const startMs = parseApiTime(start, 'start');
  const endMs = parseApiTime(end, 'end');
  const minutes = (endMs - startMs) / MINUTE;
  if (minutes < 1 || minutes > 10) {
    throw new ApiError(422, `The period from start to end must be 1 to 10 minutes, got ${minutes}`);
  }
  const asked = q.getAll('metric');
  for (const name of asked) {
    if (!METRIC_NAMES.includes(name)) throw new ApiError(422, `Unknown metric: ${JSON.stringify(name)}`);
  }
  const metrics = asked.length > 0 ? METRIC_NAMES.filter((n) => asked.includes(n)) : METRIC_NAMES;
  const wanted = q.getAll('resource');
  for (const id of wanted) {
    if (!account.resources.some((r) => r.id === id)) {
      throw new ApiError(422, `Unknown resource: ${JSON.stringify(id)}`);
    }
  }
  const resources =
    wanted.length > 0 ? account.resources.filter((r) => wanted.includes(r.id)) : account.resources;
  return { account, start, end, startMs, endMs, metrics, resources };
}

/** The router of `/app/metrics/v1`. */
export function createTrafficApi(opts: TrafficApiOptions): express.Router {
  const router = express.Router();

  const answer = (perResource: boolean) => (req: Request, res: Response) => {
    let p: ParsedQuery;
    try {
      p = parseQuery(req, opts.ctx);
    } catch (err) {
      if (err instanceof ApiError) {
        res.status(err.status).json({ description: err.message });
        return;
      }
      throw err;
    }
    const refused = opts.rules?.refusal(p.startMs, p.endMs);
    if (refused) {
      res.status(refused.status).json({ description: refused.description });
      return;
    }
    const late = { asOf: opts.ctx.clock.now(), lagSeconds: opts.lagSeconds() };
    const seconds = (p.endMs - p.startMs) / 1000;
    const values = (ids: string[]) =>
      metricValues(
        opts.model.totals(p.account.name, ids, p.startMs, p.endMs, late),
        seconds,
        p.metrics,
        opts.requestTimeShape,
      );
    const data = perResource
      ? p.resources.map((r) => ({ cname: r.cname, resource: r.id, resource_name: r.name, ...values([r.id]) }))
      : [values(p.resources.map((r) => r.id))];
    res.json({ start: p.start, end: p.end, account: p.account.name, metrics: p.metrics, data });
  };

  router.get('/', answer(false));
  router.get('/resources', answer(true));
  router.all(['/', '/resources'], (_req, res) => {
    res.status(405).json({ description: 'Method not allowed' });
  });
  router.use((_req, res) => {
    res.status(404).json({ description: 'Not found' });
  });
  return router;
}
