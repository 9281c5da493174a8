/**
 * Cost (uid `cdn-cost`): the calendar month so far against the contract's commit, from the cost recording rules of
 * rules/cdn-exporter.rules.yml (docs/metrics.md, "Cost recording rules"). Opens on Grafana's "This month
 * so far" (`now/M` to `now`, UTC, as CDNs bill): every month figure is an instant query over `[$__range]`, so
 * another range gives that range's figures. Volume is exact (per-minute deltas of the counters, summed); the 95th
 * percentile is over the month's 5-minute window averages; minutes without a 5-minute figure count as not seen,
 * never as zero traffic. No job variable (issue 32): every panel reads the recording rules, which read the
 * scraped job; the settled series (remote_write) stay out of them.
 */
import {
  type Dashboard,
  dashboard,
  labelVariable,
  OTHER_TEXT,
  otherNamed,
  RESOURCES_PER_ACCOUNT,
  SCRAPE_LABELS,
  stat,
  table,
  timeseries,
} from './common.js';

export const UID = 'cdn-cost';

const SEL = '{account=~"$account"}';
/**
 * Seconds the month's figures span: the range, plus the minute before it (the first per-minute figure of the
 * month holds it; see the cost rules).
 */
const SPAN = '($__range_s + 60)';
const VOLUME = `sum by (account) (sum_over_time(cdn:edge_transferred_bytes:increase1m${SEL}[$__range]))`;
const P95 = `max by (account) (quantile_over_time(0.95, cdn:edge_bandwidth_bits_per_second:avg5m${SEL}[$__range]))`;
const SEEN_SECONDS = `sum by (account) (count_over_time(cdn:edge_bandwidth_bits_per_second:avg5m${SEL}[$__range])) * 300`;
const COMMIT_TRANSFER = `max by (account) (cdn_commit_transfer_bytes${SEL})`;
const COMMIT_P95 = `max by (account) (cdn_commit_bandwidth_bits_per_second${SEL})`;
/** Seconds from the start of the month (UTC) to the query's time, and in the whole month. */
const ELAPSED = 'scalar((day_of_month() - 1) * 86400 + hour() * 3600 + minute() * 60)';
const MONTH = 'scalar(days_in_month() * 86400)';

export function build(): Dashboard {
  const month = [
    table({
      title: 'Month so far per account',
      description:
        'Per account, for the dashboard range (open it as "This month so far"): the edge volume transferred ' +
        '(exact), its commit and the share used; the volume projected to the month end at the rate so far; the ' +
        '95th percentile of the 5-minute edge bandwidths and its commit; the share of the range without a ' +
        '5-minute figure (exporter or Prometheus down, catching up): the p95 and the projection rest on the rest. ' +
        'From the cost recording rules, on the scraped job (not the settled series of remote_write).',
      unit: 'none',
      queries: [
        { expr: VOLUME },
        { expr: COMMIT_TRANSFER },
        { expr: `${VOLUME} / on (account) ${COMMIT_TRANSFER}` },
        { expr: `${VOLUME} * ${MONTH} / ${SPAN}` },
        { expr: P95 },
        { expr: COMMIT_P95 },
        {
          expr:
            `1 - (${SEEN_SECONDS} / ${SPAN} or on (account) 0 * ` +
            `max by (account) (cdn_commit_transfer_bytes${SEL} or cdn_commit_bandwidth_bits_per_second${SEL}))`,
        },
      ],
      columns: [
        { name: 'Volume', unit: 'decbytes' },
        { name: 'Volume commit', unit: 'decbytes' },
        {
          name: 'Of commit',
          unit: 'percentunit',
          thresholds: [
            [0.9, 'orange'],
            [1, 'red'],
          ],
        },
        { name: 'Projected month end', unit: 'decbytes' },
        { name: '95th percentile', unit: 'bps' },
        { name: 'p95 commit', unit: 'bps' },
        { name: 'Not seen', unit: 'percentunit', thresholds: [[0.02, 'orange']] },
      ],
      hide: [...SCRAPE_LABELS],
      sortBy: { column: 'Volume', desc: true },
      h: 8,
    }),
    stat({
      title: 'Days left',
      description: 'Days left in the calendar month (UTC) at the end of the dashboard range.',
      unit: 'none',
      decimals: 1,
      queries: [{ expr: `(vector(${MONTH}) - vector(${ELAPSED})) / 86400`, instant: true }],
    }),
    stat({
      title: 'Volume, all accounts',
      description: 'Edge volume of the selected accounts over the dashboard range, exact.',
      unit: 'decbytes',
      queries: [{ expr: `sum(${VOLUME})`, instant: true }],
    }),
    stat({
      title: 'Projected, all accounts',
      description:
        'Edge volume of the selected accounts projected to the month end at the rate of the range.',
      unit: 'decbytes',
      queries: [{ expr: `sum(${VOLUME}) * ${MONTH} / ${SPAN}`, instant: true }],
    }),
  ];

  const trends = [
    timeseries({
      title: '5-minute bandwidth',
      description:
        "Each account's average edge bandwidth per counted window (5 minutes with metrics.window 5m): the " +
        'figures the 95th percentile is taken over, against the p95 commit. Gaps are windows the exporter did ' +
        'not count as 5-minute figures, not zero traffic.',
      unit: 'bps',
      w: 24,
      queries: [
        { expr: `max by (account) (cdn:edge_bandwidth_bits_per_second:avg5m${SEL})`, legend: '{{account}}' },
        { expr: COMMIT_P95, legend: '{{account}} p95 commit' },
      ],
    }),
    timeseries({
      title: 'Volume per hour',
      description: 'Edge bytes transferred per hour and account, exact (one point at the end of each hour).',
      unit: 'decbytes',
      w: 24,
      queries: [
        { expr: `sum by (account) (cdn:edge_transferred_bytes:increase1h${SEL})`, legend: '{{account}}' },
      ],
    }),
  ];

  const resources = [
    table({
      title: 'Top resources by volume',
      description:
        'The 20 resources with the most edge bytes over the dashboard range, from the hourly per-resource figures ' +
        '(an estimate: increase() extrapolates within each hour; the account totals above are exact). With ' +
        `limits.top_resources, the resources without series of their own are one row, "${OTHER_TEXT}", where ` +
        `their total puts them; how many resources it stands for: "${RESOURCES_PER_ACCOUNT}" on the CDN traffic ` +
        'dashboard.',
      unit: 'decbytes',
      queries: [
        {
          expr: otherNamed(
            'topk(20, sum by (account, resource) ' +
              `(sum_over_time(cdn_resource:edge_transferred_bytes:increase1h${SEL}[$__range])))`,
          ),
        },
      ],
      columns: [{ name: 'Volume', unit: 'decbytes' }],
      hide: [...SCRAPE_LABELS],
      sortBy: { column: 'Volume', desc: true },
    }),
  ];

  return dashboard({
    uid: UID,
    title: 'CDN cost',
    description:
      'The calendar month so far against the contract commit: volume, projection, 95th percentile of 5-minute ' +
      "bandwidth, days left and the share of the month the exporter did not see. From cdn-exporter's cost rules, " +
      'which read the scraped job: the settled series written by remote_write are not in these figures.',
    variables: [labelVariable('account', 'account', 'cdn:edge_transferred_bytes:increase1m', 'Account')],
    rows: [
      { title: 'This month so far', panels: month },
      { title: 'Over the month', panels: trends },
      { title: 'Resources', panels: resources },
    ],
    // CDNs bill the calendar month in UTC: open on "This month so far", in UTC.
    opensOn: { time: { from: 'now/M', to: 'now' }, timezone: 'utc' },
  });
}
