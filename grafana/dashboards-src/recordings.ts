/**
 * Recordings (uid `cdn-recordings`): recording settings by status, those in error, their instances and last
 * start/stop. `cdn_recording_status` is a state set (1 for the current status, 0 for the other three), so
 * `sum by (status)` counts settings per status. All families are gauges; no rate is involved.
 */
import {
  type Dashboard,
  dashboard,
  labelVariable,
  SCRAPE_LABELS,
  stat,
  table,
  timeseries,
  YES_NO,
} from './common.js';

export const UID = 'cdn-recordings';

const SEL = 'account=~"$account"';
const INFO_LABELS = 'resource_id, stream_type, launch_type, source_domain, source_path';

/** Settings (one series per account and id) whose current status matches, with their info labels. */
function withInfo(statusMatcher: string): string {
  return (
    `max by (account, id, status, ${INFO_LABELS}) (\n` +
    `  (cdn_recording_status{${SEL},${statusMatcher}} == 1)\n` +
    `  * on (account, id) group_left (${INFO_LABELS})\n` +
    `  max by (account, id, ${INFO_LABELS}) (cdn_recording_info{${SEL}})\n)`
  );
}

/** A per-setting column restricted to the settings of `rows`. */
function column(expr: string, rows: string): string {
  return `${expr}\nand on (account, id)\n(cdn_recording_status{${SEL},${rows}} == 1)`;
}

function settingsTable(title: string, description: string, statusMatcher: string) {
  const col = (metric: string, scale = '') =>
    column(`max by (account, id) (cdn_recording_${metric}{${SEL}})${scale}`, statusMatcher);
  return table({
    title,
    description,
    unit: 'none',
    queries: [
      { expr: withInfo(statusMatcher) },
      { expr: col('instances') },
      { expr: col('last_start_timestamp_seconds', ' * 1000') },
      { expr: col('last_stop_timestamp_seconds', ' * 1000') },
      { expr: col('dvr_enabled') },
      { expr: col('dvr_window_seconds') },
      { expr: col('storage_seconds') },
    ],
    columns: [
      { name: 'Current', unit: 'none' },
      { name: 'Instances', unit: 'none' },
      { name: 'Last start', unit: 'dateTimeAsIso' },
      { name: 'Last stop', unit: 'dateTimeAsIso' },
      { name: 'DVR', unit: 'none', mappings: YES_NO },
      { name: 'DVR window', unit: 's' },
      // The API documents storage_time -1 as "never delete"; the exporter keeps -1 for it.
      { name: 'Kept', unit: 's', mappings: { '-1': { text: 'forever', color: 'text' } } },
    ],
    hide: [...SCRAPE_LABELS, 'Value #A'],
    sortBy: { column: 'Last start', desc: true },
  });
}

export function build(): Dashboard {
  const overview = [
    stat({
      title: 'Settings by status',
      description:
        'Recording settings per current status: wait (armed, not recording), progress (recording), finish ' +
        '(done), error (failed).',
      unit: 'none',
      w: 12,
      queries: [{ expr: `sum by (status) (cdn_recording_status{${SEL}})`, legend: '{{status}}' }],
    }),
    stat({
      title: 'In error',
      description: 'Recording settings whose current status is error.',
      unit: 'none',
      thresholds: [[1, 'red']],
      queries: [{ expr: `sum(cdn_recording_status{${SEL},status="error"}) or vector(0)` }],
    }),
    stat({
      title: 'Recording instances',
      description: 'Recording instances (records) over all selected settings.',
      unit: 'none',
      queries: [{ expr: `sum(cdn_recording_instances{${SEL}})` }],
    }),
    stat({
      title: 'Starts in time range',
      description:
        'How many times a setting started a new recording during the dashboard time range (changes of the ' +
        'last start time).',
      unit: 'none',
      queries: [
        {
          expr: `sum(changes(cdn_recording_last_start_timestamp_seconds{${SEL}}[$__range])) or vector(0)`,
          instant: true,
        },
      ],
    }),
  ];

  const trends = [
    timeseries({
      title: 'Settings by status over time',
      description: 'Recording settings per status over time; a rise in error is the thing to look at.',
      unit: 'none',
      stack: true,
      decimals: 0,
      queries: [{ expr: `sum by (status) (cdn_recording_status{${SEL}})`, legend: '{{status}}' }],
    }),
    timeseries({
      title: 'Instances per setting',
      description: 'Recording instances (records) per setting over time.',
      unit: 'none',
      decimals: 0,
      queries: [
        { expr: `max by (account, id) (cdn_recording_instances{${SEL}})`, legend: '{{account}} {{id}}' },
      ],
    }),
    timeseries({
      title: 'Time since last start and stop',
      description:
        'How long ago each setting last started and last stopped recording. A setting in progress has a start ' +
        'newer than its stop.',
      unit: 's',
      w: 24,
      queries: [
        {
          expr: `time() - max by (account, id) (cdn_recording_last_start_timestamp_seconds{${SEL}})`,
          legend: '{{account}} {{id}} start',
        },
        {
          expr: `time() - max by (account, id) (cdn_recording_last_stop_timestamp_seconds{${SEL}})`,
          legend: '{{account}} {{id}} stop',
        },
      ],
    }),
  ];

  const tables = [
    settingsTable(
      'Recordings in error',
      'Settings whose current status is error, with their source, resource and last start/stop.',
      'status="error"',
    ),
    settingsTable(
      'All recording settings',
      'Every recording setting with its status, source, instances, last start/stop, DVR and retention.',
      'status=~".+"',
    ),
  ];

  return dashboard({
    uid: UID,
    title: 'CDN recordings',
    description: 'Stream recording settings, their status and instances, from cdn-exporter.',
    variables: [labelVariable('account', 'account', 'cdn_recording_info', 'Account')],
    rows: [
      { title: 'Overview', panels: overview },
      { title: 'Over time', panels: trends },
      { title: 'Settings', panels: tables },
    ],
  });
}
