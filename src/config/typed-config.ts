/**
 * The typed configuration the rest of the exporter reads, and `toConfig`, which makes it of the file's schema
 * output (./schema.ts). `Config` is camelCase with every duration in milliseconds (`windowMs`, `timeoutMs`, ...);
 * the file is snake_case.
 */
import type { Breakdown } from '../api/vocabulary.js';
import type { FileConfig } from './schema.js';
import { resolveTopResources, type TopResourcesLimits } from './top-resources-schema.js';

export interface ApiConfig {
  /** No trailing slash; API paths (`/app/metrics/v1/`, ...) are appended to it. */
  baseUrl: string;
  /** At most one of token / tokenFile / a login is set; when none is, every account has its own. */
  token?: string;
  tokenFile?: string;
  /** A login (src/auth): username with password or passwordFile. */
  username?: string;
  password?: string;
  passwordFile?: string;
  timeoutMs: number;
  /** Ceiling per token, across all accounts sharing it. May be fractional (0.5 = one request every 2s). */
  requestsPerSecond: number;
  concurrency: number;
  /** Largest answer body read, as sent and once decoded. */
  maxBodyBytes: number;
}

export interface MetricsConfig {
  breakdown: Breakdown;
  /** 1..10 minutes, whole minutes. */
  windowMs: number;
  /** >= 0, whole minutes. */
  delayMs: number;
  /** >= windowMs, whole minutes. */
  lookbackMs: number;
  /**
   * The furthest back a saved cursor resumes: max(lookback, max_catch_up) before now. Whole minutes. An older
   * cursor is moved up to it on load (src/state-file/state-file.ts); the minutes given up are counted as skipped.
   */
  maxCatchUpMs: number;
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
  /**
   * How long the counters of a resource missing from the answers are kept (its gauges go at once): until then a
   * returning resource continues its counters, after it its series are deleted and their memory freed.
   */
  counterRetentionMs: number;
}

/** A contract's monthly commit; a key left out is no commit of that kind. */
export interface CommitConfig {
  /** Bytes transferred at the edge per calendar month. */
  monthlyTransferBytes?: number;
  /** The 95th percentile of the month's 5-minute average edge bandwidths, bits per second. */
  bandwidthP95BitsPerSecond?: number;
}

export interface AccountConfig {
  name: string;
  /** Per-account override of the api credential; at most one of token / tokenFile / a login. */
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  passwordFile?: string;
  dvrStreams: string[];
  recordings: boolean;
  /** Absent: no commit (no cdn_commit_* series). */
  commit?: CommitConfig;
  /** `top_resources` of the account; absent: limits.top_resources (resolved in LimitsConfig). */
  topResources?: number;
}

export interface DiscoveryConfig {
  enabled: boolean;
  intervalMs: number;
  /** Anchored. */
  include: RegExp;
  /** Anchored; absent: nothing is excluded. */
  exclude?: RegExp;
  /** Discovered accounts' recordings are polled too. */
  recordings: boolean;
  /** The commit of every discovered account; absent: none. */
  commit?: CommitConfig;
  /** Most discovered accounts this replica polls (accounts_discovery.max_accounts). */
  maxAccounts: number;
  /** `accounts_discovery.top_resources`; absent: limits.top_resources. */
  topResources?: number;
}

export interface Config {
  api: ApiConfig;
  metrics: MetricsConfig;
  dvr: { intervalMs: number };
  recordings: { intervalMs: number };
  /** Names unique; empty only with discovery. All accounts of the file, before sharding picks this replica's share. */
  accounts: AccountConfig[];
  /** Accounts found at run time through the inventory API (src/discovery). */
  discovery: DiscoveryConfig;
  stateFile?: string;
  /** 0 <= shard < shards. */
  sharding: { shard: number; shards: number };
  limits: LimitsConfig;
  server: ServerConfig;
  /** Settled windows pushed with their own timestamps (src/remote-write); absent: nothing is pushed. */
  remoteWrite?: RemoteWriteConfig;
}

export interface RemoteWriteConfig {
  /** http(s), without user or password. */
  url: string;
  /** `job` label of every series written. */
  job: string;
  /** `instance` label of every series written: the file's, or the host name loadConfig was given. */
  instance: string;
  /** More labels on every series: valid names, none of __name__, job, instance or __*, values not empty. */
  externalLabels: Record<string, string>;
  /** Sent with every request (X-Scope-OrgID for Mimir, ...); none of the headers the client sets itself. */
  headers: Record<string, string>;
  /** Bearer token, read at each request (re-read when the file changes). Excludes basicAuth. */
  bearerTokenFile?: string;
  /** Exactly one of password and passwordFile. */
  basicAuth?: { username: string; password?: string; passwordFile?: string };
  tls: RemoteWriteTls;
  /** Deadline of one request, its whole answer included. */
  timeoutMs: number;
  queue: {
    /** Samples offered and not yet sent or dropped, at most (a bigger batch is taken when nothing is pending). */
    maxPendingSamples: number;
    /** Samples in one request, at most; <= maxPendingSamples. */
    maxSamplesPerSend: number;
  };
}

export interface RemoteWriteTls {
  caFile?: string;
  /** With keyFile: a client certificate. */
  certFile?: string;
  keyFile?: string;
  /** The name the server's certificate is checked against (and sent as SNI); default the URL's host. */
  serverName?: string;
  insecureSkipVerify: boolean;
}

/**
 * Caps on series, and (./top-resources-schema.ts) each account's `top_resources` resolved: its fields are absent
 * unless some account has one above 0.
 */
export interface LimitsConfig extends TopResourcesLimits {
  /** Series the store may hold in all; new traffic resources beyond it are refused (counted, logged). */
  maxSeries: number;
  /** Traffic series one account may hold; equals maxSeries unless set. */
  maxSeriesPerAccount: number;
  /** Bytes (UTF-8) of one label value: a longer resource id is refused, a longer name or cname truncated. */
  maxLabelLength: number;
}

export interface ServerConfig {
  /** Open connections at most; more are closed at once (file descriptors stay bounded). */
  maxConnections: number;
  /** /metrics responses being written at most (and, counted apart, HTML pages); more get 503 with Retry-After. */
  maxScrapesInFlight: number;
  /** A keep-alive connection with no request for this long is closed. */
  idleTimeoutMs: number;
  /** A response not written within this long (a client that does not read) is cut. */
  writeTimeoutMs: number;
  /** Failed basic-auth attempts one client address may make at once, then one more per authFailureIntervalMs. */
  authFailureBurst: number;
  authFailureIntervalMs: number;
}

/** Optional keys are left out rather than set to undefined, so a printed or compared Config shows only what is set. */
function withOptional<T extends object>(base: T, extra: Record<string, unknown>): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) out[key] = value;
  return out as T;
}

/** The file's commit section as Config holds it; undefined when absent or empty. */
function toCommit(c: FileConfig['accounts_discovery']['commit']): CommitConfig | undefined {
  if (!c || (c.monthly_transfer === undefined && c.bandwidth_p95 === undefined)) return undefined;
  return withOptional({} as CommitConfig, {
    monthlyTransferBytes: c.monthly_transfer,
    bandwidthP95BitsPerSecond: c.bandwidth_p95,
  });
}

/** `remote_write` as Config holds it; `hostname` is the `instance` when the file leaves it out or empty. */
function toRemoteWrite(rw: FileConfig['remote_write'], hostname: string): RemoteWriteConfig | undefined {
  if (!rw) return undefined;
  const basic = rw.basic_auth;
  return withOptional(
    {
      url: rw.url,
      job: rw.job,
      instance: rw.instance === undefined || rw.instance === '' ? hostname : rw.instance,
      externalLabels: { ...rw.external_labels },
      headers: { ...rw.headers },
      tls: withOptional({ insecureSkipVerify: rw.tls.insecure_skip_verify } as RemoteWriteTls, {
        caFile: rw.tls.ca_file,
        certFile: rw.tls.cert_file,
        keyFile: rw.tls.key_file,
        serverName: rw.tls.server_name,
      }),
      timeoutMs: rw.timeout,
      queue: {
        maxPendingSamples: rw.queue.max_pending_samples,
        maxSamplesPerSend: rw.queue.max_samples_per_send,
      },
    } as RemoteWriteConfig,
    {
      bearerTokenFile: rw.bearer_token_file,
      basicAuth: basic
        ? withOptional({ username: basic.username } as NonNullable<RemoteWriteConfig['basicAuth']>, {
            password: basic.password,
            passwordFile: basic.password_file,
          })
        : undefined,
    },
  );
}

/** `hostname`: the `remote_write.instance` default (the entry point passes the machine's; modules read no `os`). */
export function toConfig(file: FileConfig, hostname = ''): Config {
  const { api, metrics } = file;
  return withOptional(
    {
      api: withOptional(
        {
          baseUrl: api.base_url,
          timeoutMs: api.timeout,
          requestsPerSecond: api.requests_per_second,
          concurrency: api.concurrency,
          maxBodyBytes: api.max_body_bytes,
        } as ApiConfig,
        {
          token: api.token,
          tokenFile: api.token_file,
          username: api.username,
          password: api.password,
          passwordFile: api.password_file,
        },
      ),
      metrics: {
        breakdown: metrics.breakdown,
        windowMs: metrics.window,
        delayMs: metrics.delay,
        lookbackMs: metrics.lookback,
        maxCatchUpMs: metrics.max_catch_up,
        metrics: metrics.metrics,
        resources: metrics.resources,
        windowGauges: metrics.window_gauges,
        revisitMs: metrics.revisit,
        counterRetentionMs: metrics.counter_retention,
      },
      dvr: { intervalMs: file.dvr.interval },
      recordings: { intervalMs: file.recordings.interval },
      accounts: (file.accounts ?? []).map((a) =>
        withOptional({ name: a.name, dvrStreams: a.dvr_streams, recordings: a.recordings } as AccountConfig, {
          token: a.token,
          tokenFile: a.token_file,
          username: a.username,
          password: a.password,
          passwordFile: a.password_file,
          commit: toCommit(a.commit),
          topResources: a.top_resources,
        }),
      ),
      discovery: withOptional(
        {
          enabled: file.accounts_discovery.enabled,
          intervalMs: file.accounts_discovery.interval,
          include: file.accounts_discovery.include,
          recordings: file.accounts_discovery.recordings,
          maxAccounts: file.accounts_discovery.max_accounts,
        } as DiscoveryConfig,
        {
          exclude: file.accounts_discovery.exclude,
          commit: toCommit(file.accounts_discovery.commit),
          topResources: file.accounts_discovery.top_resources,
        },
      ),
      sharding: { shard: file.sharding.shard, shards: file.sharding.shards },
      limits: {
        maxSeries: file.limits.max_series,
        maxSeriesPerAccount: Math.min(
          file.limits.max_series_per_account ?? file.limits.max_series,
          file.limits.max_series,
        ),
        maxLabelLength: file.limits.max_label_length,
        ...resolveTopResources(file.limits, file.accounts ?? [], file.accounts_discovery.top_resources),
      },
      server: {
        maxConnections: file.server.max_connections,
        maxScrapesInFlight: file.server.max_scrapes_in_flight,
        idleTimeoutMs: file.server.idle_timeout,
        writeTimeoutMs: file.server.write_timeout,
        authFailureBurst: file.server.auth_failure_limit.burst,
        authFailureIntervalMs: file.server.auth_failure_limit.interval,
      },
    } as Config,
    { stateFile: file.state_file, remoteWrite: toRemoteWrite(file.remote_write, hostname) },
  );
}
