/**
 * The configuration file (docs/configuration.md): a zod schema of its YAML, strict at every level (an unknown key is
 * an error, so a typo never silently falls back to a default). The file's keys are snake_case, as in Prometheus' own
 * files. Defaults live here and nowhere else.
 *
 * What the rest of the exporter reads is the typed `Config` that `toConfig` makes of the schema's output
 * (./typed-config.ts); rules that span several keys are `crossCheck`'s (./cross-check.ts).
 */
import { z } from 'zod';
import { BREAKDOWNS, type Breakdown, METRIC_NAMES } from '../api/vocabulary.js';
import { parseBitRate } from './bit-rate.js';
import { formatDuration, parseDuration } from './duration.js';
import {
  makeRemoteWriteSchema,
  REMOTE_WRITE_CEILINGS,
  REMOTE_WRITE_DEFAULTS,
} from './remote-write-schema.js';
import { formatSize, MAX_EXACT, parseSize, parseVolume } from './size.js';
import {
  accountTopResourcesKeys,
  limitsTopResourcesKeys,
  TOP_RESOURCES_CEILINGS,
  TOP_RESOURCES_DEFAULTS,
} from './top-resources-schema.js';

export { BREAKDOWNS, type Breakdown, METRIC_NAMES };

const METRIC_SET = new Set(METRIC_NAMES);

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * The ceilings of every numeric and duration key, refused at start with the key named. They keep each value
 * where the process still works: Node's timers hold at most 2^31-1 ms (about 24.8 days; a longer delay fires
 * at once, every time), a catch-up from far back or with huge concurrency pins the CPU and outlives SIGTERM's
 * grace period, and an answer must fit a JavaScript string. docs/configuration.md lists them.
 */
export const CEILINGS = {
  timeoutMs: 10 * MINUTE,
  requestsPerSecond: 1000,
  concurrency: 64,
  maxBodyBytes: 512 * 1024 * 1024,
  minBodyBytes: 1024,
  delayMs: DAY,
  lookbackMs: 90 * DAY,
  revisitMs: DAY,
  counterRetentionMs: 90 * DAY,
  intervalMs: DAY,
  shards: 1024,
  // limits.*: a typo must not turn a cap into none; 50M series is far beyond what one process holds.
  maxSeries: 50_000_000,
  minSeries: 1000,
  maxLabelLength: 1 << 20,
  minLabelLength: 64,
  // server.*: beyond these the process runs out of open files or memory before the limit bites.
  maxConnections: 100_000,
  minConnections: 8,
  maxScrapesInFlight: 10_000,
  serverTimeoutMs: 60 * MINUTE,
  maxDiscoveredAccounts: 1_000_000,
  ...REMOTE_WRITE_CEILINGS,
  ...TOP_RESOURCES_CEILINGS,
} as const;

interface DurationRule {
  min?: number;
  max?: number;
  wholeMinutes?: boolean;
}

/** A duration string parsed to milliseconds; messages quote what the user wrote. */
export function duration(rule: DurationRule = {}) {
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
    if (max !== undefined && ms > max) return fail(`must be at most ${formatDuration(max)}, got ${text}`);
    if (rule.wholeMinutes && ms % MINUTE !== 0) return fail(`must be whole minutes, got ${text}`);
    return ms;
  });
}

/** A size (./size.ts) in bytes, between `min` and `max`; messages quote what the user wrote. */
function size(min: number, max: number) {
  return z.unknown().transform((value, ctx) => {
    const bytes = typeof value === 'string' || typeof value === 'number' ? parseSize(value) : undefined;
    const got = typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : String(value);
    if (bytes === undefined) {
      ctx.addIssue({ code: 'custom', message: `must be a size like 64MiB, 500MB or 1048576, got ${got}` });
      return z.NEVER;
    }
    if (bytes < min || bytes > max) {
      ctx.addIssue({
        code: 'custom',
        message: `must be between ${formatSize(min)} and ${formatSize(max)}, got ${got}`,
      });
      return z.NEVER;
    }
    return bytes;
  });
}

const nonEmpty = z.string().min(1, { error: 'must not be empty' });

/** What a value in the file is, for a message that quotes it. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a list or mapping' : String(value);
}

/**
 * A monthly transfer volume (./size.ts parseVolume) above 0, at most MAX_EXACT bytes; decimal units are the
 * contract's (`50TB` = 50e12 B), a fraction is read (`1.5TB`).
 */
const transferVolume = z.unknown().transform((value, ctx) => {
  const bytes = typeof value === 'string' || typeof value === 'number' ? parseVolume(value) : undefined;
  if (bytes === undefined || bytes === 0n) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a volume above 0 like 50TB, 800GB, 1.5TB or 2PB (decimal; TiB also read), got ${shown(value)}`,
    });
    return z.NEVER;
  }
  if (bytes > BigInt(MAX_EXACT)) {
    ctx.addIssue({
      code: 'custom',
      message:
        `must be at most ${MAX_EXACT} bytes (${formatExact(MAX_EXACT, 1e15)}PB, Number.MAX_SAFE_INTEGER: the largest ` +
        `whole number the exporter holds exactly), got ${shown(value)}`,
    });
    return z.NEVER;
  }
  return Number(bytes);
});

/** A bandwidth (./bit-rate.ts) above 0, in bits per second, at most MAX_EXACT. */
const bandwidth = z.unknown().transform((value, ctx) => {
  const bits = typeof value === 'string' ? parseBitRate(value) : undefined;
  if (bits === undefined || bits === 0n) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a bandwidth above 0 like 2Gbps, 500Mbps or 1.5Tbps (bits per second), got ${shown(value)}`,
    });
    return z.NEVER;
  }
  if (bits > BigInt(MAX_EXACT)) {
    ctx.addIssue({
      code: 'custom',
      message:
        `must be at most ${MAX_EXACT} bits per second (${formatExact(MAX_EXACT, 1e12)}Tbps, Number.MAX_SAFE_INTEGER: ` +
        `the largest whole number the exporter holds exactly), got ${shown(value)}`,
    });
    return z.NEVER;
  }
  return Number(bits);
});

/** `n / unit` written exactly in decimal (`9007199254740991 / 1e15` -> `9.007199254740991`). */
function formatExact(n: number, unit: number): string {
  const digits = Math.round(Math.log10(unit));
  const text = String(n).padStart(digits + 1, '0');
  const whole = text.slice(0, -digits);
  const fraction = text.slice(-digits).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

/** What the contract commits to per calendar month (src/server/commit-metrics.ts exposes it); either or both. */
const commitSchema = z.strictObject({
  monthly_transfer: transferVolume.optional(),
  bandwidth_p95: bandwidth.optional(),
});

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

/**
 * Every default of the file, in one place: the schema fills them in, and crossCheck reads an absent key as its
 * default. Durations as a user would write them.
 */
export const DEFAULTS = {
  api: { timeout: '30s', requests_per_second: 5, concurrency: 4, max_body_bytes: '64MiB' },
  metrics: {
    breakdown: 'resource',
    window: '5m',
    delay: '5m',
    lookback: '1h',
    max_catch_up: '7d',
    window_gauges: false,
    revisit: '0s',
    counter_retention: '1d',
  },
  interval: '1m',
  accounts_discovery: {
    enabled: false,
    interval: '10m',
    include: '.*',
    recordings: false,
    max_accounts: 10_000,
  },
  sharding: { shard: 0, shards: 1 },
  limits: { max_series: 2_000_000, max_label_length: 1024, ...TOP_RESOURCES_DEFAULTS },
  server: {
    max_connections: 512,
    max_scrapes_in_flight: 100,
    idle_timeout: '30s',
    write_timeout: '60s',
    auth_failure_limit: { burst: 10, interval: '1m' },
  },
  remote_write: REMOTE_WRITE_DEFAULTS,
} as const;

/** A password is taken as it is (spaces may be part of it); only an empty one is refused. */
const password = z.string().min(1, { error: 'must not be empty' });

/** A credential: a token (token, token_file) or a login (username with password or password_file). */
const credentialKeys = {
  token: token.optional(),
  token_file: nonEmpty.optional(),
  username: nonEmpty.optional(),
  password: password.optional(),
  password_file: nonEmpty.optional(),
};

/** An anchored regular expression on account names; the message names the problem, never a secret. */
const accountPattern = z.string().transform((text, ctx) => {
  try {
    return new RegExp(`^(?:${text})$`);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: `must be a regular expression: ${(e as Error).message}` });
    return z.NEVER;
  }
});

const discoverySchema = z.strictObject({
  enabled: z.boolean().default(DEFAULTS.accounts_discovery.enabled),
  interval: duration({ min: 10_000, max: CEILINGS.intervalMs }).prefault(
    DEFAULTS.accounts_discovery.interval,
  ),
  include: z.string().default(DEFAULTS.accounts_discovery.include).pipe(accountPattern),
  /** Absent: nothing is excluded. */
  exclude: accountPattern.optional(),
  recordings: z.boolean().default(DEFAULTS.accounts_discovery.recordings),
  /** The commit of every discovered account. */
  commit: commitSchema.optional(),
  /** Every discovered account's top_resources; absent: limits.top_resources. */
  ...accountTopResourcesKeys,
  /**
   * Most discovered accounts one replica polls; the rest are refused (sorted by name, the first kept). The
   * default, 10,000, holds a large reseller's inventory, and is already more than one replica keeps up with at the
   * default 5 requests a second (one request per account is 33 minutes); a larger inventory belongs on more
   * shards. What it bounds is a broken or hostile inventory (100,000 accounts took 471 MB and minutes of CPU).
   */
  max_accounts: z
    .int()
    .min(1)
    .max(CEILINGS.maxDiscoveredAccounts)
    .default(DEFAULTS.accounts_discovery.max_accounts),
});

const apiSchema = z.strictObject({
  base_url: baseUrl,
  ...credentialKeys,
  timeout: duration({ min: 1, max: CEILINGS.timeoutMs }).prefault(DEFAULTS.api.timeout),
  requests_per_second: z
    .number()
    .positive()
    .max(CEILINGS.requestsPerSecond)
    .default(DEFAULTS.api.requests_per_second),
  concurrency: z.int().min(1).max(CEILINGS.concurrency).default(DEFAULTS.api.concurrency),
  max_body_bytes: size(CEILINGS.minBodyBytes, CEILINGS.maxBodyBytes).prefault(DEFAULTS.api.max_body_bytes),
});

const metricsSchema = z.strictObject({
  breakdown: z.enum(BREAKDOWNS).default(DEFAULTS.metrics.breakdown),
  window: duration({ min: MINUTE, max: 10 * MINUTE, wholeMinutes: true }).prefault(DEFAULTS.metrics.window),
  delay: duration({ max: CEILINGS.delayMs, wholeMinutes: true }).prefault(DEFAULTS.metrics.delay),
  lookback: duration({ min: MINUTE, max: CEILINGS.lookbackMs, wholeMinutes: true }).prefault(
    DEFAULTS.metrics.lookback,
  ),
  max_catch_up: duration({ min: MINUTE, max: CEILINGS.lookbackMs, wholeMinutes: true }).prefault(
    DEFAULTS.metrics.max_catch_up,
  ),
  metrics: z.array(metricName).default([]).transform(unique),
  resources: z.array(resourceId).default([]).transform(unique),
  window_gauges: z.boolean().default(DEFAULTS.metrics.window_gauges),
  revisit: duration({ min: 0, max: CEILINGS.revisitMs, wholeMinutes: true }).prefault(
    DEFAULTS.metrics.revisit,
  ),
  // Compared with the clock at each counted window, never a timer: no 24.8-day ceiling. Under a second would
  // let a window's own resources go at its end.
  counter_retention: duration({ min: 1000, max: CEILINGS.counterRetentionMs }).prefault(
    DEFAULTS.metrics.counter_retention,
  ),
});

const intervalSchema = z.strictObject({
  interval: duration({ min: 1000, max: CEILINGS.intervalMs }).prefault(DEFAULTS.interval),
});

const accountSchema = z.strictObject({
  name: nonEmpty,
  ...credentialKeys,
  dvr_streams: z.array(nonEmpty).default([]).transform(unique),
  recordings: z.boolean().default(false),
  commit: commitSchema.optional(),
  ...accountTopResourcesKeys,
});

const shardingSchema = z.strictObject({
  shard: z.int().min(0).default(DEFAULTS.sharding.shard),
  shards: z.int().min(1).max(CEILINGS.shards).default(DEFAULTS.sharding.shards),
});

/**
 * Caps on what answers may make the exporter hold (issue 15). The defaults fit 2M series in well under 1 GB.
 */
const limitsSchema = z.strictObject({
  max_series: z.int().min(CEILINGS.minSeries).max(CEILINGS.maxSeries).default(DEFAULTS.limits.max_series),
  /** Absent: max_series (one account may use the whole budget). */
  max_series_per_account: z.int().min(CEILINGS.minSeries).max(CEILINGS.maxSeries).optional(),
  max_label_length: z
    .int()
    .min(CEILINGS.minLabelLength)
    .max(CEILINGS.maxLabelLength)
    .default(DEFAULTS.limits.max_label_length),
  ...limitsTopResourcesKeys(duration),
});

/** The exporter's own HTTP server under misuse (src/server/limits.ts). */
const serverSchema = z.strictObject({
  max_connections: z
    .int()
    .min(CEILINGS.minConnections)
    .max(CEILINGS.maxConnections)
    .default(DEFAULTS.server.max_connections),
  max_scrapes_in_flight: z
    .int()
    .min(1)
    .max(CEILINGS.maxScrapesInFlight)
    .default(DEFAULTS.server.max_scrapes_in_flight),
  idle_timeout: duration({ min: 1000, max: CEILINGS.serverTimeoutMs }).prefault(DEFAULTS.server.idle_timeout),
  write_timeout: duration({ min: 1000, max: CEILINGS.serverTimeoutMs }).prefault(
    DEFAULTS.server.write_timeout,
  ),
  /**
   * Failed basic-auth attempts per client address (src/web/auth.ts): `burst` at once, then one more every
   * `interval`; past that, 429 without a password check. As exporter-toolkit's `rate_limit`, but per client and
   * counting failures only.
   */
  auth_failure_limit: z
    .strictObject({
      burst: z.int().min(1).max(100_000).default(DEFAULTS.server.auth_failure_limit.burst),
      interval: duration({ min: 1, max: CEILINGS.intervalMs }).prefault(
        DEFAULTS.server.auth_failure_limit.interval,
      ),
    })
    .prefault({}),
});

/** `remote_write` (./remote-write-schema.ts), with this file's duration and text rules. */
const remoteWriteSchema = makeRemoteWriteSchema({
  duration,
  nonEmpty,
  password,
  timeoutCeilingMs: CEILINGS.timeoutMs,
});

/** The YAML document, snake_case. Sections may be left out; their keys then take their defaults. */
export const fileSchema = z.strictObject({
  // Not defaulted: api.base_url is required; loadConfig supplies an empty section so the message names that key.
  api: apiSchema,
  metrics: metricsSchema.prefault({}),
  dvr: intervalSchema.prefault({}),
  recordings: intervalSchema.prefault({}),
  // Required, and not empty, unless accounts_discovery.enabled (crossCheck says so).
  accounts: z.array(accountSchema).optional(),
  accounts_discovery: discoverySchema.prefault({}),
  state_file: nonEmpty.optional(),
  sharding: shardingSchema.prefault({}),
  limits: limitsSchema.prefault({}),
  server: serverSchema.prefault({}),
  /** Absent: nothing is pushed. */
  remote_write: remoteWriteSchema.optional(),
});

export type FileConfig = z.output<typeof fileSchema>;
