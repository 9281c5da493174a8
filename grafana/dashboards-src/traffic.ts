/**
 * CDN traffic (uid `cdn-traffic`): requests, errors, bytes, cache and request time per account and resource, from
 * the traffic counters that step once per window. Every rate/increase uses `$window_range` (see common.ts); the
 * top-resource tables are instant queries over the dashboard's time range (`$__range`).
 *
 * The `job` variable picks the series the traffic panels read (issue 32, docs/remote-write.md): the scraped job
 * (`/metrics`: each window lands when it is read, its late part again at its revisit) or the settled job
 * (`remote_write.job`: each window at the minutes it happened, with final numbers). Every selector of a family the
 * settled job has (SETTLED_FAMILIES) carries `job=~"$job"`; the families only the scraped job has (window end,
 * resource info, revisit counters) are read from it whatever the variable says, and their panels say so.
 *
 * With `breakdown: account` the `resource` label is absent: the resource variable is then empty and its All
 * (`.*`) still matches, so every panel but the per-resource tables keeps working.
 */
import {
  QueryVariableBuilder,
  VariableRefresh,
  VariableSort,
} from '@grafana/grafana-foundation-sdk/dashboard';
import {
  DATASOURCE,
  type Dashboard,
  dashboard,
  labelVariable,
  OTHER,
  OTHER_TEXT,
  otherNamed,
  RESOURCES_PER_ACCOUNT,
  SCRAPE_LABELS,
  stat,
  table,
  timeseries,
  WINDOW_RANGE,
  windowRangeVariable,
} from './common.js';

export const UID = 'cdn-traffic';

/** The scrape job of examples/prometheus.yml and the compose stack: the job variable's default. */
export const SCRAPED_JOB = 'cdn-exporter';
/** `remote_write.job`'s default (src/config/schema.ts). */
export const SETTLED_JOB = 'cdn-exporter-settled';
/** The families the settled job writes (docs/remote-write.md, "What is written"); the scraped job has them too. */
export const SETTLED_FAMILIES: readonly string[] = (['edge', 'origin'] as const).flatMap((side) => [
  `cdn_${side}_responses_total`,
  `cdn_${side}_responses_by_class_total`,
  `cdn_${side}_requests_total`,
  `cdn_${side}_transferred_bytes_total`,
  `cdn_${side}_bandwidth_bytes_per_second`,
  `cdn_${side}_request_duration_median_seconds`,
  ...(side === 'edge' ? ['cdn_edge_cache_hit_bytes_total', 'cdn_edge_cache_hit_ratio'] : []),
]);

const JOB_DESCRIPTION =
  'Which series the traffic panels read. The scraped job (e.g. cdn-exporter): the counters as /metrics gives ' +
  'them, each window landing when it was read (metrics.delay after its end, catch-up in bursts) and, with ' +
  'metrics.revisit, its late part again at its revisit. The settled job (cdn-exporter-settled, remote_write.job): ' +
  'each window at the minutes it happened, with its final numbers, minutes after it ends; it needs remote_write. ' +
  'Listed alphabetically: the scraped job comes first and is the default when the settled one is named after it ' +
  '(<scrape job>-settled). Panels from exporter-only series (freshness, resources, late share) read the scraped job.';

/**
 * The job variable: one job at a time (the scraped and the settled series count the same traffic, so summing them
 * would double it), from the jobs that have the traffic counters.
 */
function jobVariable(): QueryVariableBuilder {
  const query = 'label_values(cdn_edge_requests_total, job)';
  return new QueryVariableBuilder('job')
    .label('Job')
    .description(JOB_DESCRIPTION)
    .datasource({ ...DATASOURCE })
    .query(query)
    .definition(query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(false)
    .includeAll(false)
    .current({ selected: true, text: SCRAPED_JOB, value: SCRAPED_JOB });
}

const SEL = 'job=~"$job",account=~"$account",resource=~"$resource"';
/** For the families only the scraped job has: no job matcher (the settled job has none of their series). */
const SCRAPED_SEL = 'account=~"$account",resource=~"$resource"';
const W = WINDOW_RANGE;

type Side = 'edge' | 'origin';

function rate(metric: string, extra = '', by = ''): string {
  const sel = extra ? `${SEL},${extra}` : SEL;
  const grouping = by ? ` by (${by})` : '';
  return `sum${grouping} (rate(${metric}{${sel}}[${W}]))`;
}

/** Share of requests in a status class: class counter over the requests counter (separate families). */
function classRatio(side: Side, cls: string, by = ''): string {
  return `${rate(`cdn_${side}_responses_by_class_total`, `class="${cls}"`, by)}\n/\n${rate(`cdn_${side}_requests_total`, '', by)}`;
}

/**
 * Cache hit ratio from the byte counters, so it aggregates over resources and over time exactly (the API's own
 * `edge_hit_ratio` gauge cannot be averaged across resources).
 */
function hitRatio(by = '', range = W): string {
  const g = by ? ` by (${by})` : '';
  return (
    `sum${g} (increase(cdn_edge_cache_hit_bytes_total{${SEL}}[${range}]))\n/\n` +
    `sum${g} (increase(cdn_edge_transferred_bytes_total{${SEL}}[${range}]))`
  );
}

function sideRow(side: Side) {
  const Side = side === 'edge' ? 'Edge' : 'Origin';
  const panels = [
    timeseries({
      title: `${Side} requests/s by status class`,
      description: `Requests per second at the ${side}, by HTTP status class (2xx..5xx), averaged over $window_range.`,
      unit: 'reqps',
      stack: true,
      queries: [{ expr: rate(`cdn_${side}_responses_by_class_total`, '', 'class'), legend: '{{class}}' }],
    }),
    timeseries({
      title: `${Side} requests/s by status code`,
      description: `Requests per second at the ${side}, by exact HTTP status code (200, 206, 404, 503, ...).`,
      unit: 'reqps',
      queries: [{ expr: rate(`cdn_${side}_responses_total`, '', 'code'), legend: '{{code}}' }],
    }),
    timeseries({
      title: `${Side} 5xx and 4xx ratios`,
      description:
        `Share of ${side} requests answered with a 5xx (the CDN or origin failed) and with a 4xx (clients asked ` +
        'for something wrong or forbidden): class counters over the requests counter.',
      unit: 'percentunit',
      min: 0,
      queries: [
        { expr: classRatio(side, '5xx'), legend: '5xx' },
        { expr: classRatio(side, '4xx'), legend: '4xx' },
      ],
    }),
    timeseries({
      title: `${Side} bytes/s`,
      description:
        side === 'edge'
          ? 'Bytes per second served by the edge to end users, and the part served from cache, per account.'
          : 'Bytes per second between the edge and the origin servers, per account.',
      unit: 'Bps',
      queries: [
        {
          expr: rate(`cdn_${side}_transferred_bytes_total`, '', 'account'),
          legend: '{{account}} transferred',
        },
        ...(side === 'edge'
          ? [
              {
                expr: rate('cdn_edge_cache_hit_bytes_total', '', 'account'),
                legend: '{{account}} from cache',
              },
            ]
          : []),
      ],
    }),
    timeseries({
      title: `${Side} median request time by response size`,
      description:
        `Median time the ${side} took for successful (2xx) responses, per response-size range, from the newest ` +
        'window. Medians do not add up: across several resources this shows the highest (worst) median. On the ' +
        "settled job each window's median is a point at its end.",
      unit: 's',
      queries: [
        {
          expr: `max by (size_range) (cdn_${side}_request_duration_median_seconds{${SEL}})`,
          legend: '{{size_range}}',
        },
      ],
    }),
  ];
  if (side === 'edge') {
    panels.splice(
      4,
      0,
      timeseries({
        title: 'Edge cache hit ratio (bytes)',
        description:
          'Share of edge bytes served from cache, per account: increase of cache-hit bytes over increase of ' +
          'transferred bytes, so it is exact over any set of resources.',
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [{ expr: hitRatio('account'), legend: '{{account}}' }],
      }),
    );
  }
  return { title: Side, panels };
}

/**
 * Per account, the resources with series of their own (their `cdn_resource_info`, `__other__` left out; one per
 * resource however many scrape targets have it) and the folded ones (`cdn_folded_resources`). Each column is 0,
 * not blank, for an account the other column lists: the gauge is absent until an account folds (no
 * top_resources, no full cap), and an account a full cap met first has no resource of its own. Both families exist
 * only with `breakdown: resource`, only on the scraped job.
 */
function resourcesPerAccount() {
  const acc = 'account=~"$account"';
  return table({
    title: RESOURCES_PER_ACCOUNT,
    description:
      'Per account, how many resources have series of their own (they are in the Resources table and the Resource ' +
      `variable) and how many are folded into the row "${OTHER_TEXT}" of the top-resources tables (limits.top_resources ` +
      'or a full series cap; 0 when none is), as of the newest window. breakdown: resource only. From the scraped ' +
      'job whatever the Job variable says (neither figure is written to the settled series).',
    unit: 'none',
    w: 8,
    queries: [
      {
        expr:
          `count by (account) (max by (account, resource) (cdn_resource_info{${acc},resource!="${OTHER}"}))\nor\n` +
          `0 * max by (account) (cdn_folded_resources{${acc}})`,
      },
      {
        expr:
          `max by (account) (cdn_folded_resources{${acc}})\nor\n` +
          `0 * count by (account) (cdn_resource_info{${acc}})`,
      },
    ],
    columns: [
      { name: 'Own series', unit: 'none' },
      { name: `${OTHER_TEXT[0]!.toUpperCase()}${OTHER_TEXT.slice(1)}`, unit: 'none' },
    ],
    hide: [...SCRAPE_LABELS],
    sortBy: { column: 'account', desc: false },
  });
}

/**
 * The folded resources of an account (`resource="__other__"`) rank as one row, where their total puts them, named
 * OTHER_TEXT: the same choice as the account page (docs/metrics.md, "Where `__other__` shows").
 */
const FOLDED_ROW =
  ` With limits.top_resources, the resources without series of their own are one row, "${OTHER_TEXT}", where ` +
  `their total puts them; how many resources it stands for: "${RESOURCES_PER_ACCOUNT}".`;

function topTable(title: string, description: string, rank: string, columns: [string, string, string][]) {
  const top = `topk(10, ${rank})`;
  return table({
    title,
    description: description + FOLDED_ROW,
    unit: 'none',
    w: 8,
    queries: columns.map(([, , expr], i) => ({
      expr: otherNamed(i === 0 ? top : `${expr}\nand on (account, resource)\n${top}`),
    })),
    columns: columns.map(([name, unit]) => ({ name, unit })),
    hide: [...SCRAPE_LABELS],
    sortBy: { column: columns[0]![0], desc: true },
  });
}

const R = '$__range';

function sumRange(metric: string, extra = ''): string {
  const sel = extra ? `${SEL},${extra}` : SEL;
  return `sum by (account, resource) (increase(${metric}{${sel}}[${R}]))`;
}

export function build(): Dashboard {
  const overview = [
    stat({
      title: 'Edge requests',
      description: 'Requests per second at the edge over the selected accounts and resources.',
      unit: 'reqps',
      graph: true,
      queries: [{ expr: rate('cdn_edge_requests_total') }],
    }),
    stat({
      title: 'Edge traffic',
      description: 'Bytes per second served to end users by the edge.',
      unit: 'Bps',
      graph: true,
      queries: [{ expr: rate('cdn_edge_transferred_bytes_total') }],
    }),
    stat({
      title: 'Edge 5xx ratio',
      description: 'Share of edge requests answered with a 5xx over the last $window_range.',
      unit: 'percentunit',
      thresholds: [
        [0.01, 'orange'],
        [0.05, 'red'],
      ],
      queries: [{ expr: classRatio('edge', '5xx') }],
    }),
    stat({
      title: 'Origin 5xx ratio',
      description: 'Share of origin requests answered with a 5xx over the last $window_range.',
      unit: 'percentunit',
      thresholds: [
        [0.01, 'orange'],
        [0.05, 'red'],
      ],
      queries: [{ expr: classRatio('origin', '5xx') }],
    }),
    stat({
      title: 'Cache hit ratio (bytes)',
      description:
        'Share of edge bytes served from cache over the last $window_range, all selected resources.',
      unit: 'percentunit',
      thresholdBase: 'red',
      thresholds: [
        [0.5, 'orange'],
        [0.8, 'green'],
      ],
      queries: [{ expr: hitRatio() }],
    }),
    stat({
      title: 'Data freshness',
      description:
        'Age of the newest counted traffic window (worst account): time() minus its end. Normal is about ' +
        'metrics.delay to metrics.delay plus one window (5 to 10 minutes with the defaults); above 30 minutes the data is stale. ' +
        'From the scraped job whatever the Job variable says (the settled series have no window end).',
      unit: 's',
      thresholds: [
        [1500, 'orange'],
        [1800, 'red'],
      ],
      queries: [{ expr: 'max(time() - cdn_metrics_window_end_timestamp_seconds{account=~"$account"})' }],
    }),
  ];

  const top = [
    topTable(
      'Top resources by edge traffic',
      'The 10 resources that served the most bytes at the edge over the dashboard time range, and their requests.',
      sumRange('cdn_edge_transferred_bytes_total'),
      [
        ['Bytes', 'bytes', ''],
        ['Requests', 'short', sumRange('cdn_edge_requests_total')],
      ],
    ),
    topTable(
      'Top resources by edge 5xx',
      'The 10 resources with the most 5xx answers at the edge over the dashboard time range, and their 4xx.',
      sumRange('cdn_edge_responses_by_class_total', 'class="5xx"'),
      [
        ['5xx', 'short', ''],
        ['4xx', 'short', sumRange('cdn_edge_responses_by_class_total', 'class="4xx"')],
        ['Requests', 'short', sumRange('cdn_edge_requests_total')],
      ],
    ),
    topTable(
      'Top resources by origin 5xx',
      'The 10 resources whose origin answered 5xx most often over the dashboard time range.',
      sumRange('cdn_origin_responses_by_class_total', 'class="5xx"'),
      [
        ['5xx', 'short', ''],
        ['Requests', 'short', sumRange('cdn_origin_requests_total')],
      ],
    ),
    resourcesPerAccount(),
    table({
      title: 'Resources',
      description:
        'Resources as the /resources API describes them: id, name and CNAME (breakdown: resource only), those with ' +
        `series of their own (with limits.top_resources, not the ${OTHER_TEXT}). From the ` +
        'scraped job whatever the Job variable says (resource info is not written to the settled series).',
      unit: 'none',
      queries: [
        {
          expr: `max by (account, resource, resource_name, cname) (cdn_resource_info{${SCRAPED_SEL},resource!="${OTHER}"})`,
        },
      ],
      columns: [{ name: 'Info', unit: 'none' }],
      w: 16,
      hide: [...SCRAPE_LABELS, 'Value'],
      sortBy: { column: 'resource', desc: false },
    }),
    timeseries({
      title: 'Data freshness per account',
      description:
        'Age of the newest counted traffic window per account. It saw-tooths by one window as windows are ' +
        'counted; a steady climb means the exporter is not getting windows (see the exporter dashboard). From the ' +
        'scraped job whatever the Job variable says.',
      unit: 's',
      w: 24,
      queries: [
        {
          expr: 'time() - max by (account) (cdn_metrics_window_end_timestamp_seconds{account=~"$account"})',
          legend: '{{account}}',
        },
      ],
    }),
    timeseries({
      title: 'Late traffic share per account',
      description:
        'Share of edge requests that arrived after the first read of their window and were added by its revisit ' +
        '(metrics.revisit). Empty with revisit off. A share that stays high means metrics.delay is too short: ' +
        'dashboards and alerts on the newest windows see too little (docs/metrics.md: choosing delay and revisit). ' +
        'Scraped job only: empty when the Job variable is the settled job, whose windows are final at once.',
      unit: 'percentunit',
      w: 24,
      queries: [
        {
          // Matched on (job, account): the revisit counter exists only on the scraped job, so with the settled job
          // selected nothing matches, rather than a scraped numerator over a settled denominator.
          expr:
            `sum by (job, account) (rate(cdn_metrics_revisit_edge_requests_total{account=~"$account"}[${W}]))\n/\n` +
            `sum by (job, account) (rate(cdn_edge_requests_total{job=~"$job",account=~"$account"}[${W}]))`,
          legend: '{{account}}',
        },
      ],
    }),
  ];

  return dashboard({
    uid: UID,
    title: 'CDN traffic',
    description:
      'Requests, errors, bytes, cache and request time of CDN resources, from cdn-exporter. The Job variable picks ' +
      'the series: scraped = the counters as read (each window lands when it was read, its late data later at ' +
      'the revisit); settled = each window at the minutes it happened, with final numbers (needs remote_write).',
    variables: [
      jobVariable(),
      labelVariable('account', 'account', 'cdn_edge_requests_total{job=~"$job"}', 'Account'),
      labelVariable(
        'resource',
        'resource',
        `cdn_edge_requests_total{job=~"$job",account=~"$account",resource!="${OTHER}"}`,
        'Resource',
      ).description(
        `The resources with series of their own. All also counts the ${OTHER_TEXT}: with limits.top_resources, ` +
          "those without series of their own, counted together (so All adds up to the accounts' traffic).",
      ),
      windowRangeVariable(),
    ],
    rows: [
      { title: 'Overview', panels: overview },
      sideRow('edge'),
      sideRow('origin'),
      { title: 'Top resources and freshness', panels: top },
    ],
  });
}
