/**
 * The exporter's own metrics (docs/metrics.md, "The exporter itself"), kept in prom-client on the registry
 * given (never prom-client's global one), plus prom-client's process and Node.js defaults (no prefix).
 *
 * Label values of `api` are chosen by the callers; the pollers use the API names `metrics`, `dvr-net`, `recorder-cloud`.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from 'prom-client';
import { SECRETS } from '../redact.js';
import { REFUSAL_REASONS } from '../store/limits.js';

/** Seconds; HTTP APIs answer in tens of ms to tens of seconds (the default client timeout is 30 s). */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30];

/**
 * prom-client defaults that are gauges named `*_total`: `promtool check metrics` rejects them ("non-counter
 * metrics should not have _total suffix") and in OpenMetrics a `_total` sample belongs to a counter. Each is the
 * sum of a per-type family that stays (`nodejs_active_handles{type}` and so on), so nothing is lost.
 */
export const DROPPED_DEFAULT_METRICS: readonly string[] = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

export interface SelfMetricsOptions {
  version: string;
  /** API label values whose counters start at 0, so `rate()` and `increase()` see the first increment. */
  apis?: readonly string[];
  /** Read at every scrape for `cdn_api_queue_length`; can also be set later with trackQueueLength. */
  queueLength?: () => number;
  /** prom-client's process and Node.js defaults; on unless false (tests that render often turn them off). */
  defaultMetrics?: boolean;
}

export type ApiAccountLabels = 'api' | 'account';

export interface SelfMetrics {
  /** cdn_up{api,account}: 1 when the last poll succeeded. */
  readonly up: Gauge<ApiAccountLabels>;
  /** cdn_api_requests_total{api,code}: code is the HTTP status, or `error` for network failures. */
  readonly requests: Counter<'api' | 'code'>;
  readonly requestDuration: Histogram<'api'>;
  readonly queueLength: Gauge;
  readonly lastSuccess: Gauge<ApiAccountLabels>;
  readonly parseErrors: Counter<'api'>;
  readonly buildInfo: Gauge<'version'>;
  readonly seriesRefused: Counter<'account' | 'reason'>;
  /** cdn_exporter_state_save_failures_total: saves of state_file that failed (the scrape was served anyway). */
  readonly stateSaveFailures: Counter;
  /** Counts one finished API request: its status code (or `error`) and its duration. */
  observeRequest(api: string, code: number | 'error', seconds: number): void;
  /** Records one poll's outcome for an account: up 1 and the success time (ms, the injected clock's), or up 0. */
  setPollResult(api: string, account: string, ok: boolean, atMs: number): void;
  /** Sets where `cdn_api_queue_length` is read from at each scrape (the shared request queue's size). */
  trackQueueLength(source: () => number): void;
  /** Removes every series of that account (an account that left the configuration or the shard). */
  removeAccount(api: string, account: string): void;
}

export function createSelfMetrics(registry: Registry, opts: SelfMetricsOptions): SelfMetrics {
  const registers = [registry];
  let queueSource = opts.queueLength;

  const up = new Gauge({
    name: 'cdn_up',
    help: 'Whether the last poll of this API for this account succeeded (1) or not (0).',
    labelNames: ['api', 'account'] as const,
    registers,
  });
  const requests = new Counter({
    name: 'cdn_api_requests_total',
    help: 'Requests made to the CDN APIs, by HTTP status code (code="error" for network failures and timeouts).',
    labelNames: ['api', 'code'] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: 'cdn_api_request_duration_seconds',
    help: 'Duration of requests to the CDN APIs, in seconds.',
    labelNames: ['api'] as const,
    buckets: [...REQUEST_DURATION_BUCKETS],
    registers,
  });
  const queueLength = new Gauge({
    name: 'cdn_api_queue_length',
    help: 'Requests waiting in the shared CDN API request queue.',
    registers,
    collect() {
      if (queueSource) this.set(queueSource());
    },
  });
  const lastSuccess = new Gauge({
    name: 'cdn_exporter_last_success_timestamp_seconds',
    help: 'Unix time of the last successful poll of this API for this account.',
    labelNames: ['api', 'account'] as const,
    registers,
  });
  const parseErrors = new Counter({
    name: 'cdn_exporter_parse_errors_total',
    help: 'Values in CDN API answers that could not be understood and were skipped.',
    labelNames: ['api'] as const,
    registers,
  });
  const buildInfo = new Gauge({
    name: 'cdn_exporter_build_info',
    help: 'Build information of the exporter; the value is always 1.',
    labelNames: ['version'] as const,
    registers,
  });
  buildInfo.set({ version: opts.version }, 1);
  const seriesRefused = new Counter({
    name: 'cdn_series_refused_total',
    help:
      'Series not created because a limit refused them (reason: max_series, max_series_per_account, ' +
      'label_too_long), counted each window they are refused.',
    labelNames: ['account', 'reason'] as const,
    registers,
  });
  const stateSaveFailures = new Counter({
    name: 'cdn_exporter_state_save_failures_total',
    help: 'Saves of state_file that failed; the scrape was served, and a crash before the next good save may count its windows twice.',
    registers,
  });
  let labelsMasked = SECRETS.redactions('label');
  new Counter({
    name: 'cdn_exporter_secret_label_values_total',
    help: 'Series created with a secret (the token, as an upstream echoed it) masked in a label value.',
    registers,
    collect() {
      const now = SECRETS.redactions('label');
      if (now > labelsMasked) this.inc(now - labelsMasked);
      labelsMasked = now;
    },
  });

  for (const api of opts.apis ?? []) {
    parseErrors.inc({ api }, 0);
    requestDuration.zero({ api });
  }

  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  }

  return {
    up,
    requests,
    requestDuration,
    queueLength,
    lastSuccess,
    parseErrors,
    buildInfo,
    seriesRefused,
    stateSaveFailures,
    observeRequest(api, code, seconds) {
      requests.inc({ api, code: String(code) });
      requestDuration.observe({ api }, seconds);
    },
    setPollResult(api, account, ok, atMs) {
      up.set({ api, account }, ok ? 1 : 0);
      if (ok) lastSuccess.set({ api, account }, atMs / 1000);
    },
    trackQueueLength(source) {
      queueSource = source;
    },
    removeAccount(api, account) {
      up.remove({ api, account });
      lastSuccess.remove({ api, account });
      for (const reason of REFUSAL_REASONS) seriesRefused.remove({ account, reason });
    },
  };
}
