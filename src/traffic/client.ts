/**
 * Client of the traffic metrics API (docs/upstream-api.md). Knows the endpoints and the query format;
 * failures come out as ApiError (src/http/errors.ts), bodies through parseMetricsResponse.
 */
import type { Breakdown } from '../api/vocabulary.js';
import type { QueryParam } from '../http/request.js';
import type { Requester } from '../poll/upstream.js';
import { type ParseMetricsOptions, parseTrafficBody } from './parse.js';
import type { TrafficResponse } from './response.js';

/**
 * Reads a 2xx traffic body (parseTrafficBody's contract): inline by default, or off the event loop
 * (src/offloop/pool.ts).
 */
export type TrafficBodyParser = (bytes: Uint8Array, opts: ParseMetricsOptions) => Promise<TrafficResponse>;

const parseInline: TrafficBodyParser = async (bytes, opts) => parseTrafficBody(bytes, opts);

const PREFIX = '/app/metrics/v1';

export interface FetchTrafficOptions {
  account: string;
  /** Window start, minute-aligned (UTC); epoch ms or a Date. */
  start: Date | number;
  /** Window end (exclusive), minute-aligned. The API takes 1 to 10 minutes; that rule is the API's to enforce. */
  end: Date | number;
  /** Metric names (`metric=` repeated); omitted or empty: none sent, the API decides. */
  metrics?: readonly string[];
  /** One resource id (`resource=`), only when given. */
  resource?: string;
  /** `account`: `/app/metrics/v1/`; `resource`: `/app/metrics/v1/resources`. */
  breakdown: Breakdown;
  signal?: AbortSignal;
}

/**
 * The `metric=` parameters of a list of names, made once per list: every account's window asks with the same list,
 * and 10,000 accounts' first windows waiting in the gate each held ~50 pairs of their own (issue 25, row 7).
 */
const metricParams = new WeakMap<readonly string[], readonly QueryParam[]>();

function metricQuery(metrics: readonly string[]): readonly QueryParam[] {
  let params = metricParams.get(metrics);
  if (params === undefined) {
    params = metrics.map((m): QueryParam => ['metric', m]);
    metricParams.set(metrics, params);
  }
  return params;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The API's time format, `YYYY-MM-DDThh:mm:00` (UTC, no zone suffix). A time that is not on a whole minute is
 * refused here: the API would answer 422 for it, and a silently rounded window would count minutes twice.
 */
export function formatApiTime(t: Date | number): string {
  const ms = typeof t === 'number' ? t : t.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`metrics API time is not a valid time: ${String(t)}`);
  if (ms % 60_000 !== 0) {
    throw new RangeError(
      `metrics API times must be whole minutes (seconds 00): ${new Date(ms).toISOString()}`,
    );
  }
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:00`;
}

export class MetricsClient {
  /**
   * `upstream`: the account's (src/poll/upstream.ts: its token's gate and HTTP client). `parse` reads a 2xx body:
   * inline by default, or a ParsePool's (src/offloop/pool.ts) off the event loop.
   */
  constructor(
    private readonly upstream: Requester,
    private readonly parse: TrafficBodyParser = parseInline,
  ) {}

  /** `priority`: the gate's (revisits of late data ask for REVISIT_PRIORITY, everything else leaves it out). */
  async fetchTraffic(opts: FetchTrafficOptions, priority?: number): Promise<TrafficResponse> {
    const query: QueryParam[] = [
      ['account', opts.account],
      ['start', formatApiTime(opts.start)],
      ['end', formatApiTime(opts.end)],
      ...(opts.metrics ? metricQuery(opts.metrics) : []),
    ];
    if (opts.resource !== undefined) query.push(['resource', opts.resource]);
    const path = opts.breakdown === 'resource' ? `${PREFIX}/resources` : `${PREFIX}/`;
    const parseOpts = {
      account: opts.account,
      breakdown: opts.breakdown,
      start: new Date(opts.start).getTime(),
      end: new Date(opts.end).getTime(),
    };
    const { body } = await this.upstream.request(
      {
        api: 'metrics',
        method: 'GET',
        path,
        query,
        signal: opts.signal,
        decode: (bytes) => this.parse(bytes, parseOpts),
      },
      priority,
    );
    return body as TrafficResponse;
  }
}
