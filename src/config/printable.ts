/**
 * The effective configuration in printable form: the file's own shape (snake_case keys, durations as strings,
 * defaults filled in), with every token and login password, and the user and password of a base_url, replaced by
 * the one marker of src/redact.ts. Token and password file paths are kept: they are not secret and are what an
 * operator needs to check. The output of `checkConfigReport` is itself a valid configuration
 * file (with tokens given by file, it loads back to the same Config).
 */
import { stringify } from 'yaml';
import { REDACTED, redactSecrets, redactUrl } from '../redact.js';
import { formatBitRate } from './bit-rate.js';
import { formatDuration } from './duration.js';
import { formatDecimalSize, formatSize } from './size.js';
import { printLimitsTopResources } from './top-resources-schema.js';
import type { AccountConfig, CommitConfig, Config, RemoteWriteConfig } from './typed-config.js';

export interface PrintableConfig {
  api: Record<string, unknown>;
  metrics: Record<string, unknown>;
  dvr: { interval: string };
  recordings: { interval: string };
  accounts: Record<string, unknown>[];
  accounts_discovery: Record<string, unknown>;
  state_file?: string;
  sharding: { shard: number; shards: number };
  limits: { max_series: number; max_series_per_account: number; max_label_length: number } & Record<
    string,
    unknown
  >;
  server: {
    max_connections: number;
    max_scrapes_in_flight: number;
    idle_timeout: string;
    write_timeout: string;
    auth_failure_limit: { burst: number; interval: string };
  };
  remote_write?: Record<string, unknown>;
}

function tokenKeys(source: {
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  passwordFile?: string;
}): Record<string, string> {
  const out: Record<string, string> = {};
  if (source.token !== undefined) out.token = REDACTED;
  if (source.tokenFile !== undefined) out.token_file = source.tokenFile;
  // The username names a user, it is not a secret; the password is.
  if (source.username !== undefined) out.username = source.username;
  if (source.password !== undefined) out.password = REDACTED;
  if (source.passwordFile !== undefined) out.password_file = source.passwordFile;
  return out;
}

/** `{commit: {...}}` in the contract's units, or nothing when there is no commit. */
function commitKeys(c: CommitConfig | undefined): Record<string, unknown> {
  if (!c) return {};
  const out: Record<string, string> = {};
  if (c.monthlyTransferBytes !== undefined) out.monthly_transfer = formatDecimalSize(c.monthlyTransferBytes);
  if (c.bandwidthP95BitsPerSecond !== undefined)
    out.bandwidth_p95 = formatBitRate(c.bandwidthP95BitsPerSecond);
  return { commit: out };
}

function account(a: AccountConfig): Record<string, unknown> {
  return {
    name: a.name,
    ...tokenKeys(a),
    dvr_streams: [...a.dvrStreams],
    recordings: a.recordings,
    ...commitKeys(a.commit),
    ...(a.topResources === undefined ? {} : { top_resources: a.topResources }),
  };
}

/** The pattern as written: the anchoring `^(?:...)$` the loader added is taken off. */
function patternText(re: RegExp): string {
  return re.source.replace(/^\^\(\?:/, '').replace(/\)\$$/, '');
}

/** `remote_write` in the file's shape: the inline password redacted; file paths, headers and labels as they are. */
function remoteWrite(rw: RemoteWriteConfig): Record<string, unknown> {
  const tls: Record<string, unknown> = {};
  if (rw.tls.caFile !== undefined) tls.ca_file = rw.tls.caFile;
  if (rw.tls.certFile !== undefined) tls.cert_file = rw.tls.certFile;
  if (rw.tls.keyFile !== undefined) tls.key_file = rw.tls.keyFile;
  if (rw.tls.serverName !== undefined) tls.server_name = rw.tls.serverName;
  tls.insecure_skip_verify = rw.tls.insecureSkipVerify;
  const out: Record<string, unknown> = {
    url: redactUrl(rw.url),
    job: rw.job,
    instance: rw.instance,
    external_labels: { ...rw.externalLabels },
    headers: { ...rw.headers },
  };
  if (rw.bearerTokenFile !== undefined) out.bearer_token_file = rw.bearerTokenFile;
  if (rw.basicAuth) {
    const basic: Record<string, string> = { username: rw.basicAuth.username };
    if (rw.basicAuth.password !== undefined) basic.password = REDACTED;
    if (rw.basicAuth.passwordFile !== undefined) basic.password_file = rw.basicAuth.passwordFile;
    out.basic_auth = basic;
  }
  out.tls = tls;
  out.timeout = formatDuration(rw.timeoutMs);
  out.queue = {
    max_pending_samples: rw.queue.maxPendingSamples,
    max_samples_per_send: rw.queue.maxSamplesPerSend,
  };
  return out;
}

export function redactConfig(config: Config): PrintableConfig {
  const { api, metrics } = config;
  const out: PrintableConfig = {
    api: {
      base_url: redactUrl(api.baseUrl),
      ...tokenKeys(api),
      timeout: formatDuration(api.timeoutMs),
      requests_per_second: api.requestsPerSecond,
      concurrency: api.concurrency,
      max_body_bytes: formatSize(api.maxBodyBytes),
    },
    metrics: {
      breakdown: metrics.breakdown,
      window: formatDuration(metrics.windowMs),
      delay: formatDuration(metrics.delayMs),
      lookback: formatDuration(metrics.lookbackMs),
      max_catch_up: formatDuration(metrics.maxCatchUpMs),
      metrics: [...metrics.metrics],
      resources: [...metrics.resources],
      window_gauges: metrics.windowGauges,
      revisit: formatDuration(metrics.revisitMs),
      counter_retention: formatDuration(metrics.counterRetentionMs),
    },
    dvr: { interval: formatDuration(config.dvr.intervalMs) },
    recordings: { interval: formatDuration(config.recordings.intervalMs) },
    accounts: config.accounts.map(account),
    accounts_discovery: {
      enabled: config.discovery.enabled,
      interval: formatDuration(config.discovery.intervalMs),
      include: patternText(config.discovery.include),
      ...(config.discovery.exclude ? { exclude: patternText(config.discovery.exclude) } : {}),
      recordings: config.discovery.recordings,
      max_accounts: config.discovery.maxAccounts,
      ...commitKeys(config.discovery.commit),
      ...(config.discovery.topResources === undefined
        ? {}
        : { top_resources: config.discovery.topResources }),
    },
    sharding: { ...config.sharding },
    limits: {
      max_series: config.limits.maxSeries,
      max_series_per_account: config.limits.maxSeriesPerAccount,
      max_label_length: config.limits.maxLabelLength,
      ...printLimitsTopResources(config.limits),
    },
    server: {
      max_connections: config.server.maxConnections,
      max_scrapes_in_flight: config.server.maxScrapesInFlight,
      idle_timeout: formatDuration(config.server.idleTimeoutMs),
      write_timeout: formatDuration(config.server.writeTimeoutMs),
      auth_failure_limit: {
        burst: config.server.authFailureBurst,
        interval: formatDuration(config.server.authFailureIntervalMs),
      },
    },
  };
  if (config.stateFile !== undefined) out.state_file = config.stateFile;
  if (config.remoteWrite) out.remote_write = remoteWrite(config.remoteWrite);
  return out;
}

/** What `check-config` prints on success: the effective configuration as YAML, secrets redacted. */
export function checkConfigReport(config: Config): string {
  const header =
    '# cdn-exporter: effective configuration (defaults filled in, environment applied, tokens redacted)\n';
  // A token or password given inline that also appears elsewhere (a base_url query, an account name) is masked
  // there too.
  const inline = [
    config.api.token,
    config.api.password,
    ...config.accounts.flatMap((a) => [a.token, a.password]),
    config.remoteWrite?.basicAuth?.password,
  ].filter((t): t is string => typeof t === 'string');
  return redactSecrets(header + stringify(redactConfig(config), { lineWidth: 0 }), inline, 'config');
}
