/**
 * The configuration file (design.md section 3): a zod schema of its YAML, strict at every level (an unknown key is
 * an error, so a typo never silently falls back to a default), and the typed `Config` the rest of the exporter
 * reads. The file's keys are snake_case, as in Prometheus' own files; `Config` is camelCase with every duration in
 * milliseconds (`windowMs`, `timeoutMs`, ...). Defaults live here and nowhere else.
 *
 * Rules that span several keys (lookback >= window, shard < shards, unique account names, where the token comes
 * from) are in `crossCheck`, which reads the raw document tolerantly so that its findings are reported together
 * with the schema's.
 */
import { z } from 'zod';
import { BREAKDOWNS, type Breakdown, METRIC_NAMES } from '../api/vocabulary.js';
import { isRecord } from '../http/parse.js';
import { formatDuration, parseDuration } from './duration.js';

export { BREAKDOWNS, type Breakdown, METRIC_NAMES };

const METRIC_SET = new Set(METRIC_NAMES);

const MINUTE = 60_000;

interface DurationRule {
  min?: number;
  max?: number;
  wholeMinutes?: boolean;
}

/** A duration string parsed to milliseconds; messages quote what the user wrote. */
function duration(rule: DurationRule = {}) {
  // A bare YAML number is accepted only as 0, as Prometheus does; `5` has no unit and is refused.
  return z.unknown().transform((value, ctx) => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (typeof value !== 'string' && typeof value !== 'number') {
      const got = value === null ? 'null' : typeof value === 'object' ? 'a list or mapping' : String(value);
      return fail(`must be a duration like 90s, 5m or 1h30m, got ${got}`);
    }
    if (typeof value === 'number' && value !== 0) {
      return fail(`must be a duration with a unit like 90s, 5m or 1h30m, got ${value}`);
    }
    const text = String(value);
    const ms = parseDuration(text);
    if (ms === undefined)
      return fail(`must be a duration like 90s, 5m or 1h30m, got ${JSON.stringify(text)}`);
    const { min, max } = rule;
    if (min !== undefined && max !== undefined && (ms < min || ms > max)) {
      return fail(`must be between ${formatDuration(min)} and ${formatDuration(max)}, got ${text}`);
    }
    if (min !== undefined && ms < min) return fail(`must be at least ${formatDuration(min)}, got ${text}`);
    if (rule.wholeMinutes && ms % MINUTE !== 0) return fail(`must be whole minutes, got ${text}`);
    return ms;
  });
}

const nonEmpty = z.string().min(1, { error: 'must not be empty' });

/** Inline tokens are trimmed: surrounding whitespace is never part of an HTTP header value. */
const token = z
  .string()
  .transform((s) => s.trim())
  .pipe(z.string().min(1, { error: 'must not be empty' }));

const baseUrl = z.string().transform((text, ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  // The value is not echoed: a URL may carry credentials.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    ctx.addIssue({ code: 'custom', message: 'must be an http:// or https:// URL' });
    return z.NEVER;
  }
  return text.replace(/\/+$/, '');
});

const metricName = z.string().superRefine((name, ctx) => {
  if (!METRIC_SET.has(name)) {
    ctx.addIssue({
      code: 'custom',
      message:
        `unknown metric ${JSON.stringify(name)}: the API documents edge_|origin_ + status_<code>, bandwidth, ` +
        'requests_total, request_time, and edge_hit_ratio, edge_hit_bytes',
    });
  }
});

const unique = <T>(list: T[]): T[] => [...new Set(list)];

/** Resource ids are numeric in practice and YAML reads `[123]` as numbers: integers are taken as their text. */
const resourceId = z.unknown().transform((value, ctx) => {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  const got =
    value === null ? 'null' : typeof value === 'object' ? 'a list or mapping' : JSON.stringify(value);
  ctx.addIssue({ code: 'custom', message: `must be a resource id (text or a whole number), got ${got}` });
  return z.NEVER;
});

const apiSchema = z.strictObject({
  base_url: baseUrl,
  token: token.optional(),
  token_file: nonEmpty.optional(),
  timeout: duration({ min: 1 }).prefault('30s'),
  requests_per_second: z.number().positive().default(5),
  concurrency: z.int().min(1).default(4),
});

const metricsSchema = z.strictObject({
  breakdown: z.enum(BREAKDOWNS).default('resource'),
  window: duration({ min: MINUTE, max: 10 * MINUTE, wholeMinutes: true }).prefault('5m'),
  delay: duration({ wholeMinutes: true }).prefault('5m'),
  lookback: duration({ min: MINUTE, wholeMinutes: true }).prefault('1h'),
  metrics: z.array(metricName).default([]).transform(unique),
  resources: z.array(resourceId).default([]).transform(unique),
  window_gauges: z.boolean().default(false),
  revisit: duration({ min: 0, max: 24 * 60 * MINUTE, wholeMinutes: true }).prefault('0s'),
});

const intervalSchema = z.strictObject({ interval: duration({ min: 1000 }).prefault('1m') });

const accountSchema = z.strictObject({
  name: nonEmpty,
  token: token.optional(),
  token_file: nonEmpty.optional(),
  dvr_streams: z.array(nonEmpty).default([]).transform(unique),
  recordings: z.boolean().default(false),
});

const shardingSchema = z.strictObject({
  shard: z.int().min(0).default(0),
  shards: z.int().min(1).default(1),
});

/** The YAML document, snake_case. Sections may be left out; their keys then take their defaults. */
export const fileSchema = z.strictObject({
  // Not defaulted: api.base_url is required; loadConfig supplies an empty section so the message names that key.
  api: apiSchema,
  metrics: metricsSchema.prefault({}),
  dvr: intervalSchema.prefault({}),
  recordings: intervalSchema.prefault({}),
  accounts: z.array(accountSchema).min(1, { error: 'must list at least one account' }),
  state_file: nonEmpty.optional(),
  sharding: shardingSchema.prefault({}),
});

export type FileConfig = z.output<typeof fileSchema>;

export interface ApiConfig {
  /** No trailing slash; API paths (`/app/metrics/v1/`, ...) are appended to it. */
  baseUrl: string;
  /** At most one of token / tokenFile is set; when neither is, every account has its own. */
  token?: string;
  tokenFile?: string;
  timeoutMs: number;
  /** Ceiling per token, across all accounts sharing it. May be fractional (0.5 = one request every 2s). */
  requestsPerSecond: number;
  concurrency: number;
}

export interface MetricsConfig {
  breakdown: Breakdown;
  /** 1..10 minutes, whole minutes. */
  windowMs: number;
  /** >= 0, whole minutes. */
  delayMs: number;
  /** >= windowMs, whole minutes. */
  lookbackMs: number;
  /** API metric names to ask for, deduplicated; empty: every name in METRIC_NAMES. */
  metrics: string[];
  /** Allow-list of resource ids; empty: all. */
  resources: string[];
  windowGauges: boolean;
  /**
   * Late data: every minute counted is read once more when it is at least delay + revisit old, and what arrived
   * since is added to the counters. 0: off. Whole minutes, at most 24h.
   */
  revisitMs: number;
}

export interface AccountConfig {
  name: string;
  /** Per-account override of the api token; at most one of token / tokenFile. */
  token?: string;
  tokenFile?: string;
  dvrStreams: string[];
  recordings: boolean;
}

export interface Config {
  api: ApiConfig;
  metrics: MetricsConfig;
  dvr: { intervalMs: number };
  recordings: { intervalMs: number };
  /** At least one; names unique. All accounts of the file, before sharding picks this replica's share. */
  accounts: AccountConfig[];
  stateFile?: string;
  /** 0 <= shard < shards. */
  sharding: { shard: number; shards: number };
}

/** Optional keys are left out rather than set to undefined, so a printed or compared Config shows only what is set. */
function withOptional<T extends object>(base: T, extra: Record<string, string | undefined>): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) out[key] = value;
  return out as T;
}

export function toConfig(file: FileConfig): Config {
  const { api, metrics } = file;
  return withOptional(
    {
      api: withOptional(
        {
          baseUrl: api.base_url,
          timeoutMs: api.timeout,
          requestsPerSecond: api.requests_per_second,
          concurrency: api.concurrency,
        } as ApiConfig,
        { token: api.token, tokenFile: api.token_file },
      ),
      metrics: {
        breakdown: metrics.breakdown,
        windowMs: metrics.window,
        delayMs: metrics.delay,
        lookbackMs: metrics.lookback,
        metrics: metrics.metrics,
        resources: metrics.resources,
        windowGauges: metrics.window_gauges,
        revisitMs: metrics.revisit,
      },
      dvr: { intervalMs: file.dvr.interval },
      recordings: { intervalMs: file.recordings.interval },
      accounts: file.accounts.map((a) =>
        withOptional({ name: a.name, dvrStreams: a.dvr_streams, recordings: a.recordings } as AccountConfig, {
          token: a.token,
          tokenFile: a.token_file,
        }),
      ),
      sharding: { shard: file.sharding.shard, shards: file.sharding.shards },
    } as Config,
    { stateFile: file.state_file },
  );
}

/** One problem with the configuration: a dotted path (`metrics.window`, `accounts[1].name`) and what is wrong. */
export interface ConfigIssue {
  path: string;
  message: string;
}

const hasKey = (o: Record<string, unknown>, key: string) => o[key] !== undefined;

/** A duration in the raw document, or `fallback` when absent; undefined when unreadable (the schema reports it). */
function rawDuration(section: Record<string, unknown>, key: string, fallback: number): number | undefined {
  const v = section[key];
  if (v === undefined) return fallback;
  if (v === 0) return 0;
  return typeof v === 'string' ? parseDuration(v) : undefined;
}

/** Rules spanning several keys, read tolerantly from the raw document so they run even when other keys are bad. */
export function crossCheck(raw: Record<string, unknown>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const api = isRecord(raw.api) ? raw.api : {};
  const metrics = isRecord(raw.metrics) ? raw.metrics : {};

  const window = rawDuration(metrics, 'window', 5 * MINUTE);
  const lookback = rawDuration(metrics, 'lookback', 60 * MINUTE);
  if (window !== undefined && lookback !== undefined && lookback < window) {
    issues.push({
      path: 'metrics.lookback',
      message: `must be at least metrics.window (${formatDuration(window)}), got ${formatDuration(lookback)}`,
    });
  }

  const sharding = isRecord(raw.sharding) ? raw.sharding : {};
  const shard = sharding.shard ?? 0;
  const shards = sharding.shards ?? 1;
  if (Number.isInteger(shard) && Number.isInteger(shards) && (shards as number) >= 1 && shard >= shards) {
    issues.push({
      path: 'sharding.shard',
      message: `must be less than sharding.shards (${shards}), got ${shard}`,
    });
  }

  if (hasKey(api, 'token') && hasKey(api, 'token_file')) {
    issues.push({ path: 'api', message: 'set only one of token and token_file' });
  }
  const accounts = Array.isArray(raw.accounts) ? raw.accounts : [];
  const seen = new Set<string>();
  const withoutToken: string[] = [];
  accounts.forEach((account, i) => {
    if (!isRecord(account)) return;
    const { name } = account;
    if (typeof name === 'string' && name !== '') {
      if (seen.has(name))
        issues.push({ path: `accounts[${i}].name`, message: `duplicate account ${JSON.stringify(name)}` });
      seen.add(name);
    }
    const own = hasKey(account, 'token') || hasKey(account, 'token_file');
    if (hasKey(account, 'token') && hasKey(account, 'token_file')) {
      issues.push({ path: `accounts[${i}]`, message: 'set only one of token and token_file' });
    }
    if (!own) withoutToken.push(typeof name === 'string' ? name : `accounts[${i}]`);
  });
  if (
    !hasKey(api, 'token') &&
    !hasKey(api, 'token_file') &&
    (withoutToken.length > 0 || accounts.length === 0)
  ) {
    const which = withoutToken.length > 0 ? `; without one: ${withoutToken.join(', ')}` : '';
    issues.push({
      path: 'api.token',
      message: `required (set api.token, api.token_file or CDN_API_TOKEN, or give every account its own token or token_file${which})`,
    });
  }
  return issues;
}
