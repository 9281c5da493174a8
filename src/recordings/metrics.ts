/** Recording families (docs/metrics.md, "Recordings"), labels account, id. */
import type { Family, SeriesStoreApi } from '../store/types.js';

export interface RecordingFamilies {
  info: Family;
  status: Family;
  instances: Family;
  lastStart: Family;
  lastStop: Family;
  dvrEnabled: Family;
  dvrWindow: Family;
  storage: Family;
}

export function createRecordingFamilies(store: SeriesStoreApi): RecordingFamilies {
  const gauge = (name: string, help: string, extra: string[] = []) =>
    store.family({ name, help, type: 'gauge', labelNames: ['account', 'id', ...extra] });
  return {
    info: gauge('cdn_recording_info', 'A recording setting and its source; always 1.', [
      'resource_id',
      'stream_type',
      'launch_type',
      'source_domain',
      'source_path',
    ]),
    status: gauge(
      'cdn_recording_status',
      'Recording status as a state set: 1 for the current status (wait, progress, finish, error), 0 for the others.',
      ['status'],
    ),
    instances: gauge('cdn_recording_instances', 'Recording instances (records) of the setting.'),
    lastStart: gauge(
      'cdn_recording_last_start_timestamp_seconds',
      'Start of the newest recording instance, Unix seconds.',
    ),
    lastStop: gauge(
      'cdn_recording_last_stop_timestamp_seconds',
      'Latest stop of a recording instance, Unix seconds.',
    ),
    dvrEnabled: gauge(
      'cdn_recording_dvr_enabled',
      'Whether DVR is enabled in the player for the setting, 1 or 0.',
    ),
    dvrWindow: gauge('cdn_recording_dvr_window_seconds', 'DVR window of the setting, seconds.'),
    storage: gauge(
      'cdn_recording_storage_seconds',
      'How long recordings are kept, seconds (storage_time days x 86400); -1 means kept forever.',
    ),
  };
}
