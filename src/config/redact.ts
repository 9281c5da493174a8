/**
 * The effective configuration in printable form: the file's own shape (snake_case keys, durations as strings,
 * defaults filled in), with every token, and the user and password of a base_url, replaced by `<redacted>`. Token file paths are kept: they are not secret
 * and are what an operator needs to check. The output of `checkConfigReport` is itself a valid configuration
 * file (with tokens given by file, it loads back to the same Config).
 */
import { stringify } from 'yaml';
import { formatDuration } from './duration.js';
import type { AccountConfig, Config } from './schema.js';

export const REDACTED = '<redacted>';

export interface PrintableConfig {
  api: Record<string, unknown>;
  metrics: Record<string, unknown>;
  dvr: { interval: string };
  recordings: { interval: string };
  accounts: Record<string, unknown>[];
  state_file?: string;
  sharding: { shard: number; shards: number };
}

/** `https://user:pw@host/x` -> `https://<redacted>@host/x`; a URL without credentials as it is. */
export function redactUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  if (url.username === '' && url.password === '') return text;
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${REDACTED}@`);
}

function tokenKeys(source: { token?: string; tokenFile?: string }): Record<string, string> {
  const out: Record<string, string> = {};
  if (source.token !== undefined) out.token = REDACTED;
  if (source.tokenFile !== undefined) out.token_file = source.tokenFile;
  return out;
}

function account(a: AccountConfig): Record<string, unknown> {
  return { name: a.name, ...tokenKeys(a), dvr_streams: [...a.dvrStreams], recordings: a.recordings };
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
    },
    metrics: {
      breakdown: metrics.breakdown,
      window: formatDuration(metrics.windowMs),
      delay: formatDuration(metrics.delayMs),
      lookback: formatDuration(metrics.lookbackMs),
      metrics: [...metrics.metrics],
      resources: [...metrics.resources],
      window_gauges: metrics.windowGauges,
      revisit: formatDuration(metrics.revisitMs),
    },
    dvr: { interval: formatDuration(config.dvr.intervalMs) },
    recordings: { interval: formatDuration(config.recordings.intervalMs) },
    accounts: config.accounts.map(account),
    sharding: { ...config.sharding },
  };
  if (config.stateFile !== undefined) out.state_file = config.stateFile;
  return out;
}

/** What `check-config` prints on success: the effective configuration as YAML, secrets redacted. */
export function checkConfigReport(config: Config): string {
  const header =
    '# cdn-exporter: effective configuration (defaults filled in, environment applied, tokens redacted)\n';
  return header + stringify(redactConfig(config), { lineWidth: 0 });
}
