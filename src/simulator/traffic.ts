/**
 * The traffic metrics API (docs/upstream-api.md) of the simulator: a deterministic traffic model and the two
 * endpoints `GET /app/metrics/v1/` and `GET /app/metrics/v1/resources`.
 *
 * The model generates, per (seed, account, resource, minute), integer counts per exact status code plus counts of
 * codes the API does not list (201, 307, 410, 520, ...), bytes, hit bytes and a median request time per size
 * range. A window's answer is a pure function of its minutes, so the exact truth of any range is known:
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
import {
  STATUS_CLASSES as CLASSES,
  STATUS_CODES as CODES,
  CODES_BY_CLASS,
  METRIC_NAMES,
  SIZE_RANGES as RANGES,
  type Side,
  type StatusClass,
} from '../api/vocabulary.js';
import { MINUTE } from '../clock.js';
import { between, intBetween, unit } from './random.js';
import type { SimAccount, SimContext } from './types.js';

export type RequestTimeShape = 'object' | 'flat' | 'number';

/** One side of one minute, as generated: leaf counts only, so partial (late) minutes keep every identity. */
interface SideMinute {
  codes: Record<string, number>;
  /** Codes of each class that the API does not list. */
  unlisted: Record<StatusClass, number>;
  bytes: number;
  /** 0 on origin. */
  hitBytes: number;
  /** Median seconds per range (RANGES order), and over all sizes. */
  medians: number[];
  medianAll: number;
}

export interface MinuteTraffic {
  edge: SideMinute;
  origin: SideMinute;
}

/** Exact totals of one side over a range. */
export interface SideTotals {
  codes: Record<string, number>;
  classes: Record<StatusClass, number>;
  requests: number;
  bytes: number;
  /** 0 on origin (the API has no origin hit metrics). */
  hitBytes: number;
  /** Per range: mean of the minutes' medians weighted by their 2xx counts; 0 without 2xx. */
  requestTime: Record<string, number>;
  /** The same over all sizes (the `number` shape). */
  requestTimeAll: number;
}

export interface TrafficTotals {
  edge: SideTotals;
  origin: SideTotals;
}

/** Relative traffic volume per resource, keyed `account/resource`; absent means 1, 0 means no traffic at all. */
export type TrafficScale = Readonly<Record<string, number>>;

// Shares of requests per exact code (before jitter) and of unlisted codes per class.
const EDGE_WEIGHTS: Record<string, number> = {
  '200': 0.8,
  '204': 0.01,
  '206': 0.06,
  '301': 0.004,
  '302': 0.01,
  '304': 0.06,
  '400': 0.003,
  '401': 0.001,
  '403': 0.002,
  '404': 0.02,
  '416': 0.0005,
  '429': 0.001,
  '500': 0.0015,
  '501': 0.0001,
  '502': 0.0008,
  '503': 0.0006,
  '504': 0.0004,
  '505': 0.00005,
};
const ORIGIN_WEIGHTS: Record<string, number> = {
  ...EDGE_WEIGHTS,
  '304': 0.02,
  '404': 0.03,
  '500': 0.004,
  '502': 0.002,
  '503': 0.002,
  '504': 0.002,
};
const UNLISTED_WEIGHTS: Record<StatusClass, number> = {
  '2xx': 0.003,
  '3xx': 0.002,
  '4xx': 0.002,
  '5xx': 0.0005,
};
/** Edge median seconds per range for a typical resource. */
const RANGE_BASE = [0.015, 0.035, 0.05, 0.07, 0.12, 0.2, 0.28, 0.55];
/** An incident multiplies 5xx by this for a quarter of an hour. */
const INCIDENT_5XX = 40;
const INCIDENT_SHARE = 0.03;

function roundMs(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

/**
 * The deterministic traffic of every account's resources. Volume follows a daily shape (peaking in the evening,
 * hour chosen per resource) with per-minute noise; some quarter-hours carry a 5xx incident.
 */
/** A downward correction (see TrafficModel.correctDown). */
interface Correction {
  account: string;
  from: number;
  to: number;
  factor: number;
}

export class TrafficModel {
  private readonly corrections: Correction[] = [];

  constructor(
    private readonly seed: number,
    private readonly scale: TrafficScale = {},
  ) {}

  /**
   * A CDN correcting its statistics downward (a reseller's platform does this after filtering bots, say): from
   * now on, every count of the account's minutes in [fromMs, toMs) is reported as floor(count * factor), complete
   * or not, including by the truth. Corrections add up (two of 0.5 report a quarter).
   */
  correctDown(account: string, fromMs: number, toMs: number, factor: number): void {
    if (!(factor >= 0 && factor <= 1))
      throw new Error(`a downward correction's factor is 0..1, got ${factor}`);
    this.corrections.push({ account, from: fromMs, to: toMs, factor });
  }

  private factor(account: string, minuteMs: number): number {
    let f = 1;
    for (const c of this.corrections)
      if (c.account === account && minuteMs >= c.from && minuteMs < c.to) f *= c.factor;
    return f;
  }

  minute(account: string, resource: string, minuteMs: number): MinuteTraffic {
    const s = this.seed;
    const key = [account, resource];
    const scale = this.scale[`${account}/${resource}`] ?? 1;
    const base = between(s, 150, 2500, 'base', ...key) * scale;
    const peakHour = intBetween(s, 17, 22, 'peak', ...key);
    const hour = (minuteMs % 86_400_000) / 3_600_000;
    const shape = 0.25 + 0.75 * (0.5 + 0.5 * Math.cos((2 * Math.PI * (hour - peakHour)) / 24));
    const noise = between(s, 0.85, 1.15, 'noise', ...key, minuteMs);
    const edgeRequests = Math.round(base * shape * noise);
    const incident = unit(s, 'incident', ...key, Math.floor(minuteMs / (15 * MINUTE))) < INCIDENT_SHARE;
    const hitShare = between(s, 0.75, 0.97, 'hit', ...key);
    const originRequests = Math.round(
      edgeRequests * (1 - hitShare) * between(s, 0.9, 1.1, 'o', ...key, minuteMs),
    );
    const avgBytes = between(s, 30_000, 1_500_000, 'size', ...key);
    const speed = between(s, 0.7, 1.5, 'speed', ...key);

    const side = (name: Side, requests: number, weights: Record<string, number>): SideMinute => {
      const draw = (what: string, weight: number, boost: number): number => {
        const jitter = between(s, 0.7, 1.3, name, 'j', what, ...key, minuteMs);
        return Math.floor(requests * weight * boost * jitter + unit(s, name, 'r', what, ...key, minuteMs));
      };
      const codes: Record<string, number> = {};
      for (const code of CODES)
        codes[code] = draw(code, weights[code] ?? 0, code[0] === '5' && incident ? INCIDENT_5XX : 1);
      const unlisted = {} as Record<StatusClass, number>;
      for (const cls of CLASSES)
        unlisted[cls] = draw(cls, UNLISTED_WEIGHTS[cls], cls === '5xx' && incident ? INCIDENT_5XX : 1);
      const ok = CODES_BY_CLASS['2xx'].reduce((n, c) => n + codes[c]!, unlisted['2xx']);
      const slow = name === 'origin' ? between(s, 2.5, 4, 'originSlow', ...key) : 1;
      const medians = RANGE_BASE.map((b, i) =>
        roundMs(
          b * speed * slow * between(s, 0.8, 1.25, name, 'med', i, ...key, minuteMs) * (incident ? 1.8 : 1),
        ),
      );
      // Over all sizes: the range medians weighted by this resource's size mix (small objects dominate).
      let wSum = 0;
      let mSum = 0;
      medians.forEach((m, i) => {
        const w = between(s, 0.2, 1, 'mix', i, ...key) / (i + 1);
        wSum += w;
        mSum += w * m;
      });
      const bytes = Math.floor(ok * avgBytes * between(s, 0.8, 1.2, name, 'bytes', ...key, minuteMs));
      return { codes, unlisted, bytes, hitBytes: 0, medians, medianAll: roundMs(mSum / wSum) };
    };

    const edge = side('edge', edgeRequests, EDGE_WEIGHTS);
    const hitRatio = Math.min(1, Math.max(0, hitShare + between(s, -0.05, 0.03, 'hitj', ...key, minuteMs)));
    edge.hitBytes = Math.floor(edge.bytes * hitRatio);
    const origin = side('origin', originRequests, ORIGIN_WEIGHTS);
    return { edge, origin };
  }

  /**
   * Exact totals over [startMs, endMs) (whole minutes) for the given resources. With `asOf`, each minute
   * reports what it would at that time: complete `lagSeconds` after it ends, before that
   * floor(count * elapsed share) of each count, nothing while in the future.
   */
  totals(
    account: string,
    resources: readonly string[],
    startMs: number,
    endMs: number,
    late?: { asOf: number; lagSeconds: number },
  ): TrafficTotals {
    if (startMs % MINUTE !== 0 || endMs % MINUTE !== 0) throw new Error('truth ranges are whole minutes');
    const acc = { edge: new SideAccumulator(), origin: new SideAccumulator() };
    for (const resource of resources) {
      for (let m = startMs; m < endMs; m += MINUTE) {
        const share =
          (late ? reportedShare(m, late.asOf, late.lagSeconds) : 1) *
          (this.corrections.length ? this.factor(account, m) : 1);
        if (share === 0) continue;
        const t = this.minute(account, resource, m);
        acc.edge.add(t.edge, share);
        acc.origin.add(t.origin, share);
      }
    }
    return { edge: acc.edge.result(), origin: acc.origin.result() };
  }
}

/** The share of a minute's counts reported at `asOf`. */
export function reportedShare(minuteMs: number, asOf: number, lagSeconds: number): number {
  const completeAt = minuteMs + MINUTE + lagSeconds * 1000;
  if (asOf >= completeAt) return 1;
  if (asOf <= minuteMs) return 0;
  return (asOf - minuteMs) / (completeAt - minuteMs);
}

class SideAccumulator {
  private readonly codes: Record<string, number> = Object.fromEntries(CODES.map((c) => [c, 0]));
  private readonly classes = Object.fromEntries(CLASSES.map((c) => [c, 0])) as Record<StatusClass, number>;
  private bytes = 0;
  private hitBytes = 0;
  private readonly weighted = RANGES.map(() => 0);
  private weightedAll = 0;
  private weight = 0;

  add(m: SideMinute, share: number): void {
    const part = (n: number) => (share === 1 ? n : Math.floor(n * share));
    let ok = 0;
    for (const cls of CLASSES) {
      let n = part(m.unlisted[cls]);
      for (const code of CODES_BY_CLASS[cls]) {
        const c = part(m.codes[code]!);
        this.codes[code]! += c;
        n += c;
      }
      this.classes[cls] += n;
      if (cls === '2xx') ok = n;
    }
    this.bytes += part(m.bytes);
    this.hitBytes += part(m.hitBytes);
    m.medians.forEach((v, i) => {
      this.weighted[i]! += ok * v;
    });
    this.weightedAll += ok * m.medianAll;
    this.weight += ok;
  }

  result(): SideTotals {
    const mean = (x: number) => (this.weight > 0 ? Math.round((x / this.weight) * 1e6) / 1e6 : 0);
    return {
      codes: { ...this.codes },
      classes: { ...this.classes },
      requests: CLASSES.reduce((n, c) => n + this.classes[c], 0),
      bytes: this.bytes,
      hitBytes: this.hitBytes,
      requestTime: Object.fromEntries(RANGES.map((r, i) => [r, mean(this.weighted[i]!)])),
      requestTimeAll: mean(this.weightedAll),
    };
  }
}

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
