/**
 * Injected faults and the request-rate limit, applied before any API handler to all three APIs.
 *
 * Faults are not random draws: a FaultPlan hands out kinds by the request's ordinal so that over the first N
 * requests each kind occurs exactly floor(N*rate) or ceil(N*rate) times, for every N. It is Tijdeman's solution
 * of the chairman assignment problem (earliest deadline first over the occurrences each kind owes), which keeps
 * every kind's count within 1 - 1/(2m-2) of N*rate; the seed only fixes the order in which ties are broken.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Response } from 'express';
import { seededShuffle } from './random.js';

export const FAULT_KINDS = [
  '429',
  '500',
  '502',
  '503',
  '504',
  'reset',
  'slow',
  'malformed',
  'trickle',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** Share of requests per kind, each in [0, 1], their sum at most 1. Absent kinds are 0. */
export type FaultRates = Partial<Record<FaultKind, number>>;

export type SimApi = 'metrics' | 'dvr-net' | 'recorder-cloud';

/** Throws an error naming the kind when a rate is out of [0, 1] or the rates add up to more than 1. */
export function checkFaultRates(rates: FaultRates): void {
  let sum = 0;
  for (const [kind, rate] of Object.entries(rates)) {
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw new Error(`unknown fault kind "${kind}"`);
    if (rate === undefined) continue;
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw new Error(`fault rate for "${kind}" must be a number in [0, 1], got ${String(rate)}`);
    }
    sum += rate;
  }
  if (sum > 1 + 1e-9) throw new Error(`fault rates add up to ${sum}, more than 1`);
}

/** One kind's turns in the plan (or the turns of no fault): its rate and how many turns it has had. */
interface FaultTurn {
  /** undefined: the request goes through untouched. */
  kind: FaultKind | undefined;
  rate: number;
  count: number;
}

const EPS = 1e-9;

export class FaultPlan {
  private readonly turns: FaultTurn[];
  private readonly none: FaultTurn;
  private readonly delta: number;
  private ordinal = 0;

  constructor(rates: FaultRates, seed: number) {
    checkFaultRates(rates);
    let sum = 0;
    const turns: FaultTurn[] = [];
    for (const kind of FAULT_KINDS) {
      const rate = rates[kind] ?? 0;
      sum += rate;
      if (rate > EPS) turns.push({ kind, rate, count: 0 });
    }
    this.none = { kind: undefined, rate: Math.max(0, 1 - sum), count: 0 };
    if (this.none.rate > EPS) turns.push(this.none);
    this.turns = seededShuffle(turns, seed, 'faults');
    const m = this.turns.length;
    this.delta = m >= 2 ? 1 - 1 / (2 * (m - 1)) : 0;
  }

  /** Requests planned so far. */
  get requests(): number {
    return this.ordinal;
  }

  /** The fault for the next request (undefined: none). */
  next(): FaultKind | undefined {
    const t = ++this.ordinal;
    let best: FaultTurn | undefined;
    let bestDeadline = Number.POSITIVE_INFINITY;
    for (const turn of this.turns) {
      const j = turn.count + 1;
      // Keeping |count - t*rate| <= delta: occurrence j may not come before t = (j - delta) / rate and must
      // come before t*rate - delta exceeds j - 1.
      if ((j - this.delta) / turn.rate > t + EPS) continue;
      const deadline = (j - 1 + this.delta) / turn.rate;
      if (deadline < bestDeadline - EPS) {
        best = turn;
        bestDeadline = deadline;
      }
    }
    const chosen = best ?? this.none;
    chosen.count++;
    return chosen.kind;
  }
}

/**
 * A sliding one-second window per token (clock time). Only admitted requests fill the window. Tokens are kept
 * as digests, never as text.
 */
export class RateLimiter {
  private readonly seen = new Map<string, number[]>();
  limit: number | undefined;

  constructor(limit: number | undefined) {
    this.limit = limit;
  }

  /** undefined when admitted; otherwise the Retry-After in whole seconds (at least 1). */
  check(token: string | undefined, now: number): number | undefined {
    if (this.limit === undefined || this.limit <= 0) return undefined;
    const key = createHash('sha256')
      .update(token ?? '')
      .digest('base64url')
      .slice(0, 16);
    const times = (this.seen.get(key) ?? []).filter((t) => t > now - 1000);
    if (times.length >= this.limit) {
      this.seen.set(key, times);
      return Math.max(1, Math.ceil((times[0]! + 1000 - now) / 1000));
    }
    times.push(now);
    this.seen.set(key, times);
    return undefined;
  }
}

const REASONS: Record<number, [string, string]> = {
  429: ['TooManyRequests', 'Too many requests'],
  500: ['InternalServerError', 'Internal server error'],
  502: ['BadGateway', 'Bad gateway'],
  503: ['ServiceUnavailable', 'Service unavailable'],
  504: ['GatewayTimeout', 'Execution timeout exceeded'],
};

/**
 * Answers an error in the API's documented shape: metrics JSON `{description}`; dvr-net JSON
 * `{status, description}`; recorder-cloud text/plain for 4xx and an empty text/html body for 5xx (its document
 * shows only 500 that way; we assume the gateway codes look the same).
 */
export function sendError(res: Response, api: SimApi, code: number, retryAfterSec?: number): void {
  const [status, description] = REASONS[code] ?? ['Error', 'Error'];
  if (retryAfterSec !== undefined) res.set('Retry-After', String(retryAfterSec));
  res.status(code);
  if (api === 'metrics') res.json({ description });
  else if (api === 'dvr-net') res.json({ status, description });
  else if (code >= 500) res.type('text/html').send('');
  else res.type('text/plain').send(description);
}

/**
 * Turns whatever the handler answers into a 200 whose body is the first half of it: JSON that does not parse
 * (a cut object or array never does). An empty answer becomes `{"data":[`.
 */
export function makeMalformed(res: Response): void {
  const send = res.send.bind(res);
  res.send = (body?: unknown) => {
    const text =
      typeof body === 'string'
        ? body
        : Buffer.isBuffer(body)
          ? body.toString('utf8')
          : body === undefined || body === null
            ? ''
            : JSON.stringify(body);
    const cut = text.length >= 4 ? text.slice(0, Math.ceil(text.length / 2)) : '{"data":[';
    res.status(200).type('application/json');
    return send(cut);
  };
}

/** The bytes of what a handler passes to res.send (a string, a Buffer, or an object as JSON). */
function sentBytes(body: unknown): Buffer {
  if (typeof body === 'string') return Buffer.from(body);
  if (Buffer.isBuffer(body)) return body;
  if (body === undefined || body === null) return Buffer.alloc(0);
  return Buffer.from(JSON.stringify(body));
}

/**
 * The normal answer, headers at once, then its body one byte every `byteMs` (real time): an upstream that never
 * goes idle long enough for a per-chunk timeout, and never finishes. Each interval is added to `timers` (and
 * removed when done) so the simulator can stop them.
 */
export function makeTrickled(res: Response, byteMs: number, timers: Set<NodeJS.Timeout>): void {
  res.send = (body?: unknown) => {
    const bytes = sentBytes(body);
    if (!res.get('content-type')) res.type('application/json');
    res.setHeader('content-length', String(bytes.length));
    res.writeHead(res.statusCode);
    let at = 0;
    const timer = setInterval(() => {
      if (res.destroyed || at >= bytes.length) {
        clearInterval(timer);
        timers.delete(timer);
        if (!res.destroyed) res.end();
        return;
      }
      res.write(bytes.subarray(at, at + 1));
      at++;
    }, byteMs);
    timers.add(timer);
    return res;
  };
}

/** Answers with `Content-Encoding: gzip` (the caller checks that the request's Accept-Encoding allows it). */
export function gzipAnswers(res: Response): void {
  const send = res.send.bind(res);
  res.send = (body?: unknown) => {
    if (body === undefined || body === null) return send(body);
    if (!res.get('content-type'))
      res.type(typeof body === 'object' && !Buffer.isBuffer(body) ? 'json' : 'text');
    res.set('content-encoding', 'gzip');
    res.vary('accept-encoding');
    return send(gzipSync(sentBytes(body)));
  };
}
