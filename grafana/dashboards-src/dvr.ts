/**
 * DVR health (uid `cdn-dvr`): per stream and host, liveness and how well the DVR window is covered. All DVR
 * families are gauges refreshed every `dvr.interval`; no rate is involved. The API does not show the units of the
 * DVR window and durations: the exporter assumes seconds (docs/upstream-api.md), and so do these panels.
 */
import {
  type Dashboard,
  dashboard,
  labelVariable,
  stat,
  stateTimeline,
  table,
  timeseries,
  UP_DOWN,
  YES_NO,
} from './common.js';

export const UID = 'cdn-dvr';

const SEL = 'account=~"$account",stream=~"$stream"';
const KEY = 'account, stream, host';
const LEGEND = '{{account}} {{stream}} @ {{host}}';

/** Stream-level liveness: a stream is alive when at least one host has it alive. */
const STREAM_ALIVE = `max by (account, stream) (cdn_dvr_stream_alive{${SEL}})`;

export function build(): Dashboard {
  const overview = [
    stat({
      title: 'Streams alive',
      description: 'Streams alive on at least one host.',
      unit: 'none',
      queries: [{ expr: `count(${STREAM_ALIVE} == 1) or vector(0)` }],
    }),
    stat({
      title: 'Streams down',
      description: 'Streams alive on no host at all: viewers get nothing live and the DVR stops growing.',
      unit: 'none',
      thresholds: [[1, 'red']],
      queries: [{ expr: `count(${STREAM_ALIVE} == 0) or vector(0)` }],
    }),
    stat({
      title: 'Stream hosts alive',
      description: 'Stream and host pairs where the stream is alive, out of all pairs the API reports.',
      unit: 'none',
      queries: [
        { expr: `sum(cdn_dvr_stream_alive{${SEL}})`, legend: 'alive' },
        { expr: `count(cdn_dvr_stream_alive{${SEL}})`, legend: 'total' },
      ],
    }),
    stat({
      title: 'Lowest coverage',
      description:
        'The worst share of [now - DVR window, now] covered by recorded ranges, over all streams and hosts.',
      unit: 'percentunit',
      thresholdBase: 'red',
      thresholds: [
        [0.8, 'orange'],
        [0.95, 'green'],
      ],
      queries: [{ expr: `min(cdn_dvr_coverage_ratio{${SEL}})` }],
    }),
    stat({
      title: 'Worst largest gap',
      description: 'The longest break between two recorded ranges, over all streams and hosts.',
      unit: 's',
      thresholds: [
        [60, 'orange'],
        [300, 'red'],
      ],
      queries: [{ expr: `max(cdn_dvr_largest_gap_seconds{${SEL}})` }],
    }),
    stat({
      title: 'Oldest newest range',
      description:
        'How long ago the newest recorded range ended, for the worst stream and host. An alive stream keeps ' +
        'this near zero; a growing value means the DVR stopped recording.',
      unit: 's',
      thresholds: [
        [120, 'orange'],
        [600, 'red'],
      ],
      queries: [{ expr: `max(time() - cdn_dvr_last_timestamp_seconds{${SEL}})` }],
    }),
  ];

  const liveness = [
    stateTimeline({
      title: 'Alive per stream and host',
      description: 'Whether each stream is alive on each host (is_alive), over time.',
      unit: 'none',
      w: 24,
      h: 10,
      mappings: UP_DOWN,
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_stream_alive{${SEL}})`, legend: LEGEND }],
    }),
    stateTimeline({
      title: 'Polled per stream',
      description:
        'Whether the poll of each configured stream got its answer (cdn_dvr_stream_up). Down: the API does not ' +
        'know the stream (404: a misspelt or deleted name in dvr_streams) or its request fails; such a stream ' +
        'has no per-host series at all.',
      unit: 'none',
      w: 24,
      h: 6,
      mappings: UP_DOWN,
      queries: [
        { expr: `max by (account, stream) (cdn_dvr_stream_up{${SEL}})`, legend: '{{account}} {{stream}}' },
      ],
    }),
  ];

  const coverage = [
    timeseries({
      title: 'Coverage',
      description: 'Share of [now - DVR window, now] covered by recorded ranges, per stream and host.',
      unit: 'percentunit',
      min: 0,
      max: 1,
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_coverage_ratio{${SEL}})`, legend: LEGEND }],
    }),
    timeseries({
      title: 'Recorded duration',
      description: 'Total recorded duration kept in the DVR (breaks excluded), per stream and host.',
      unit: 's',
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_recorded_seconds{${SEL}})`, legend: LEGEND }],
    }),
    timeseries({
      title: 'Gaps',
      description:
        'Sum of the breaks between the first range start and the last range end. A step up is a new break ' +
        '(the stream stopped and came back, or a slice was deleted); it steps down as old ranges age out.',
      unit: 's',
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_gap_seconds{${SEL}})`, legend: LEGEND }],
    }),
    timeseries({
      title: 'Largest gap',
      description: 'The longest single break between two recorded ranges, per stream and host.',
      unit: 's',
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_largest_gap_seconds{${SEL}})`, legend: LEGEND }],
    }),
    timeseries({
      title: 'Age of the newest range',
      description: 'time() minus the end of the newest recorded range, per stream and host.',
      unit: 's',
      queries: [
        { expr: `time() - max by (${KEY}) (cdn_dvr_last_timestamp_seconds{${SEL}})`, legend: LEGEND },
      ],
    }),
    timeseries({
      title: 'Ranges',
      description:
        'Number of distinct recorded periods (after merging overlaps); each extra range means a break.',
      unit: 'none',
      decimals: 0,
      queries: [{ expr: `max by (${KEY}) (cdn_dvr_ranges{${SEL}})`, legend: LEGEND }],
    }),
  ];

  const worst = `bottomk(20, max by (${KEY}) (cdn_dvr_coverage_ratio{${SEL}}))`;
  const col = (metric: string, pre = '') =>
    `${pre}max by (${KEY}) (${metric}{${SEL}})\nand on (${KEY})\n${worst}`;
  const worstTable = table({
    title: 'Worst streams',
    description:
      'The 20 stream and host pairs with the lowest coverage, with what explains it: liveness, DVR enabled, ' +
      'gaps and how old the newest range is.',
    unit: 'none',
    h: 12,
    queries: [
      { expr: worst },
      { expr: col('cdn_dvr_stream_alive') },
      { expr: col('cdn_dvr_enabled') },
      { expr: col('cdn_dvr_largest_gap_seconds') },
      { expr: col('cdn_dvr_gap_seconds') },
      { expr: col('cdn_dvr_ranges') },
      { expr: col('cdn_dvr_last_timestamp_seconds', 'time() - ') },
      { expr: col('cdn_dvr_window_seconds') },
    ],
    columns: [
      {
        name: 'Coverage',
        unit: 'percentunit',
        thresholdBase: 'red',
        thresholds: [
          [0.8, 'orange'],
          [0.95, 'green'],
        ],
      },
      { name: 'Alive', unit: 'none', mappings: UP_DOWN },
      { name: 'DVR enabled', unit: 'none', mappings: YES_NO },
      { name: 'Largest gap', unit: 's' },
      { name: 'Gaps', unit: 's' },
      { name: 'Ranges', unit: 'none' },
      { name: 'Newest range age', unit: 's' },
      { name: 'DVR window', unit: 's' },
    ],
    sortBy: { column: 'Coverage', desc: false },
  });

  return dashboard({
    uid: UID,
    title: 'CDN DVR health',
    description: 'Network-DVR liveness and coverage per stream and host, from cdn-exporter.',
    variables: [
      labelVariable('account', 'account', 'cdn_dvr_stream_alive', 'Account'),
      labelVariable('stream', 'stream', 'cdn_dvr_stream_alive{account=~"$account"}', 'Stream'),
    ],
    rows: [
      { title: 'Overview', panels: overview },
      { title: 'Liveness', panels: liveness },
      { title: 'Coverage and gaps', panels: coverage },
      { title: 'Worst streams', panels: [worstTable] },
    ],
  });
}
