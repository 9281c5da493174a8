/**
 * The exporter itself (uid `cdn-exporter`): is it polling, how far behind the traffic windows are, how the CDN
 * APIs answer (codes, 429s, durations), the request queue, skipped minutes and parse errors, and the process.
 *
 * `cdn_api_*` move with every API request, but those are few: the metrics API is asked about once per window
 * and account in steady state, DVR and recordings once per interval. Over `$__rate_interval` (about 2 minutes at
 * a 30 s scrape) they show zeros and spikes, so they are read over `$window_range` too, like
 * `cdn_metrics_windows_total` and `cdn_metrics_skipped_seconds_total`, which step once per window.
 * `cdn_metrics_window_seconds{account}` (the largest window asked for now; it shrinks after 504s) is not in
 * the first metric catalogue; it is proposed with this dashboard and exported by src/traffic/metrics.ts.
 */
import {
  type Dashboard,
  dashboard,
  labelVariable,
  RATE_INTERVAL,
  stat,
  stateTimeline,
  timeseries,
  UP_DOWN,
  WINDOW_RANGE,
  windowRangeVariable,
} from './common.js';

export const UID = 'cdn-exporter';

const JOB = 'job=~"$job"';
const ACC = 'job=~"$job",account=~"$account"';
const RI = RATE_INTERVAL;
const W = WINDOW_RANGE;

function quantile(q: number): string {
  return `histogram_quantile(${q}, sum by (api, le) (rate(cdn_api_request_duration_seconds_bucket{${JOB}}[${W}])))`;
}

export function build(): Dashboard {
  const health = [
    stat({
      title: 'Targets up',
      description:
        'Exporter targets Prometheus scraped successfully, out of all targets of the selected jobs.',
      unit: 'none',
      queries: [
        { expr: `sum(up{${JOB}})`, legend: 'up' },
        { expr: `count(up{${JOB}})`, legend: 'targets' },
      ],
    }),
    stat({
      title: 'Accounts down',
      description: 'API and account pairs whose last poll failed (cdn_up 0): bad token, no access, API down.',
      unit: 'none',
      thresholds: [[1, 'red']],
      queries: [{ expr: `count(cdn_up{${ACC}} == 0) or vector(0)` }],
    }),
    stat({
      title: 'Worst window lag',
      description:
        'Age of the newest counted traffic window, worst account. Normal: between metrics.delay and ' +
        'metrics.delay plus one window (5 to 10 minutes with the defaults).',
      unit: 's',
      thresholds: [
        [1500, 'orange'],
        [1800, 'red'],
      ],
      queries: [{ expr: `max(time() - cdn_metrics_window_end_timestamp_seconds{${ACC}})` }],
    }),
    stat({
      title: 'Traffic time skipped',
      description:
        'Minutes of traffic never counted (the API rejected the window with 422) over the last $window_range. ' +
        'Anything but 0 is data lost for good.',
      unit: 's',
      thresholds: [[1, 'red']],
      queries: [{ expr: `sum(increase(cdn_metrics_skipped_seconds_total{${ACC}}[${W}])) or vector(0)` }],
    }),
    stat({
      title: 'Queued requests',
      description: 'Requests waiting in the shared CDN API request queue now (all targets).',
      unit: 'none',
      thresholds: [[50, 'orange']],
      queries: [{ expr: `sum(cdn_api_queue_length{${JOB}})` }],
    }),
    stat({
      title: 'Version',
      description: 'cdn-exporter versions running (cdn_exporter_build_info).',
      unit: 'none',
      queries: [{ expr: `count by (version) (cdn_exporter_build_info{${JOB}})`, legend: '{{version}}' }],
    }),
    stateTimeline({
      title: 'API polls per account',
      description: 'cdn_up per API and account: whether the last poll succeeded.',
      unit: 'none',
      w: 24,
      mappings: UP_DOWN,
      queries: [{ expr: `max by (api, account) (cdn_up{${ACC}})`, legend: '{{api}} {{account}}' }],
    }),
  ];

  const windows = [
    timeseries({
      title: 'Window lag per account',
      description:
        'time() minus the end of the last counted traffic window. A saw-tooth of one window is normal; a climb ' +
        'means windows are not being counted (API errors, 429s, a long catch-up).',
      unit: 's',
      queries: [
        {
          expr: `time() - max by (account) (cdn_metrics_window_end_timestamp_seconds{${ACC}})`,
          legend: '{{account}}',
        },
      ],
    }),
    timeseries({
      title: 'Window size per account',
      description:
        'Largest window the exporter asks for now (cdn_metrics_window_seconds). It halves after a 504 from the ' +
        'metrics API and grows back after successes; 60 s for long means the API keeps timing out.',
      unit: 's',
      min: 0,
      queries: [{ expr: `max by (account) (cdn_metrics_window_seconds{${ACC}})`, legend: '{{account}}' }],
    }),
    timeseries({
      title: 'Windows counted per minute',
      description:
        'Traffic windows counted per minute, per account. About 1/5 per minute with 5-minute windows; higher ' +
        'while catching up after downtime.',
      unit: 'cpm',
      queries: [
        {
          expr: `sum by (account) (rate(cdn_metrics_windows_total{${ACC}}[${W}])) * 60`,
          legend: '{{account}}',
        },
      ],
    }),
    timeseries({
      title: 'Skipped traffic time',
      description: 'Minutes of traffic never counted over the last $window_range, per account and reason.',
      unit: 's',
      queries: [
        {
          expr: `sum by (account, reason) (increase(cdn_metrics_skipped_seconds_total{${ACC}}[${W}]))`,
          legend: '{{account}} {{reason}}',
        },
      ],
    }),
  ];

  const api = [
    timeseries({
      title: 'API requests/s by code',
      description:
        'Requests to the CDN APIs per second over $window_range, by API and HTTP status (error: network failure or ' +
        'timeout). The metrics API is asked about once per window and account, so shorter ranges show spikes.',
      unit: 'reqps',
      stack: true,
      queries: [
        {
          expr: `sum by (api, code) (rate(cdn_api_requests_total{${JOB}}[${W}]))`,
          legend: '{{api}} {{code}}',
        },
      ],
    }),
    timeseries({
      title: 'API 429s/s',
      description:
        'Requests the CDN rate-limited (429) per second. The exporter waits for Retry-After and slows the shared ' +
        'queue; a steady flow means requests_per_second is above what the API allows for this token.',
      unit: 'reqps',
      queries: [
        // `or 0 * all requests`: no 429 series exists until the first 429; show 0 for each API, not "No data".
        {
          expr:
            `sum by (api) (rate(cdn_api_requests_total{${JOB},code="429"}[${W}]))\nor\n` +
            `0 * sum by (api) (rate(cdn_api_requests_total{${JOB}}[${W}]))`,
          legend: '{{api}}',
        },
      ],
    }),
    timeseries({
      title: 'API error ratio',
      description:
        'Share of API requests over $window_range that did not get a 2xx, per API (429s and network errors ' +
        'included).',
      unit: 'percentunit',
      min: 0,
      queries: [
        {
          // Without any failure there is no non-2xx series: 0 for each API instead of "No data".
          expr:
            `(\n  sum by (api) (rate(cdn_api_requests_total{${JOB},code!~"2.."}[${W}]))\n  or\n` +
            `  0 * sum by (api) (rate(cdn_api_requests_total{${JOB}}[${W}]))\n)\n/\n` +
            `sum by (api) (rate(cdn_api_requests_total{${JOB}}[${W}]))`,
          legend: '{{api}}',
        },
      ],
    }),
    timeseries({
      title: 'API request duration',
      description:
        'Median, 90th and 99th percentile of API request durations per API over $window_range (from the histogram).',
      unit: 's',
      queries: [
        { expr: quantile(0.5), legend: '{{api}} p50' },
        { expr: quantile(0.9), legend: '{{api}} p90' },
        { expr: quantile(0.99), legend: '{{api}} p99' },
      ],
    }),
    timeseries({
      title: 'Queue length',
      description: 'Requests waiting in the shared CDN API request queue, per exporter instance.',
      unit: 'none',
      queries: [{ expr: `sum by (instance) (cdn_api_queue_length{${JOB}})`, legend: '{{instance}}' }],
    }),
    timeseries({
      title: 'Parse errors',
      description:
        'Values in API answers the exporter could not understand and skipped, per API, over the last ' +
        '$window_range. Non-zero means the API answers in a shape the exporter does not know.',
      unit: 'none',
      queries: [
        { expr: `sum by (api) (increase(cdn_exporter_parse_errors_total{${JOB}}[${W}]))`, legend: '{{api}}' },
      ],
    }),
    timeseries({
      title: 'Time since last successful poll',
      description: 'time() minus the last successful poll, per API and account.',
      unit: 's',
      w: 24,
      queries: [
        {
          expr: `time() - max by (api, account) (cdn_exporter_last_success_timestamp_seconds{${ACC}})`,
          legend: '{{api}} {{account}}',
        },
      ],
    }),
  ];

  // Logins (src/auth): absent for fixed tokens, so these panels show "No data" for an exporter without a login.
  const logins = [
    timeseries({
      title: 'Token expiry per login',
      description:
        'Time left before the current token of each login expires. A saw-tooth is normal: the token is renewed ' +
        'when 85 % of its lifetime has passed (54 minutes before a 6-hour token expires). A line that runs down ' +
        'to 0 means renewal fails (see the logins panel and the exporter log).',
      unit: 's',
      min: 0,
      w: 8,
      queries: [
        {
          expr: `max by (login) (cdn_auth_token_expiry_timestamp_seconds{${JOB}}) - time()`,
          legend: '{{login}}',
        },
      ],
    }),
    timeseries({
      title: 'Logins by result',
      description:
        'Login requests over $window_range, per login and result: ok (a token, renewals included), refused ' +
        '(wrong username or password, or a banned user: fix the password file), error (no usable answer; retried).',
      unit: 'none',
      w: 8,
      queries: [
        {
          expr: `sum by (login, result) (increase(cdn_auth_logins_total{${JOB}}[${W}]))`,
          legend: '{{login}} {{result}}',
        },
      ],
    }),
    timeseries({
      title: 'Discovered accounts',
      description:
        'Accounts the inventory API lists for each login or token and the accounts_discovery filters keep ' +
        '(all shards together; each shard polls its share).',
      unit: 'none',
      min: 0,
      w: 8,
      queries: [{ expr: `max by (login) (cdn_discovered_accounts{${JOB}})`, legend: '{{login}}' }],
    }),
  ];

  const proc = [
    timeseries({
      title: 'Memory',
      description: 'Resident memory and V8 heap in use, per exporter instance.',
      unit: 'bytes',
      w: 8,
      queries: [
        { expr: `process_resident_memory_bytes{${JOB}}`, legend: '{{instance}} resident' },
        { expr: `nodejs_heap_size_used_bytes{${JOB}}`, legend: '{{instance}} heap used' },
      ],
    }),
    timeseries({
      title: 'CPU',
      description: 'CPU time used per second of wall time (1 = one full core), per exporter instance.',
      unit: 'percentunit',
      w: 8,
      queries: [{ expr: `rate(process_cpu_seconds_total{${JOB}}[${RI}])`, legend: '{{instance}}' }],
    }),
    timeseries({
      title: 'Event loop lag p99',
      description: 'The event loop lag 99th percentile; high values make scrapes slow.',
      unit: 's',
      w: 8,
      queries: [{ expr: `nodejs_eventloop_lag_p99_seconds{${JOB}}`, legend: '{{instance}}' }],
    }),
  ];

  return dashboard({
    uid: UID,
    title: 'CDN exporter',
    description: 'Health of cdn-exporter: polling, traffic windows, CDN API answers, queue and process.',
    variables: [
      labelVariable('job', 'job', 'cdn_exporter_build_info', 'Job'),
      labelVariable('account', 'account', 'cdn_up{job=~"$job"}', 'Account'),
      windowRangeVariable(),
    ],
    rows: [
      { title: 'Health', panels: health },
      { title: 'Traffic windows', panels: windows },
      { title: 'CDN API', panels: api },
      { title: 'Logins', panels: logins },
      { title: 'Process', panels: proc },
    ],
  });
}
