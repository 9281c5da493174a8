/**
 * The simulator's deterministic traffic model (docs/upstream-api.md; the API that answers from it: ./traffic.ts).
 *
 * It generates, per (seed, account, resource, minute), integer counts per exact status code plus counts of codes
 * the API does not list (201, 307, 410, 520, ...), bytes, hit bytes and a median request time per size range.
 * A window's answer is a pure function of its minutes, so the exact truth of any range is known (`totals`):
 * - counts (codes, classes, requests, bytes, hit bytes) are sums over the minutes;
 * - `*_request_time` per range is the mean of the minutes' medians weighted by their 2xx counts (0 without 2xx).
 * Late data (a minute reports a share of its counts until `lagSeconds` after it ends: reportedShare) and
 * downward corrections (`correctDown`) apply to the truth as to the answers.
 */
import {
  STATUS_CLASSES as CLASSES,
  STATUS_CODES as CODES,
  CODES_BY_CLASS,
  SIZE_RANGES as RANGES,
  type Side,
  type StatusClass,
} from '../api/vocabulary.js';
import { MINUTE } from '../clock.js';
import { between, intBetween, unit } from './random.js';

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

/** A downward correction (see TrafficModel.correctDown). */
interface Correction {
  account: string;
  from: number;
  to: number;
  factor: number;
}

/**
 * The deterministic traffic of every account's resources. Volume follows a daily shape (peaking in the evening,
 * hour chosen per resource) with per-minute noise; some quarter-hours carry a 5xx incident.
 */
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
