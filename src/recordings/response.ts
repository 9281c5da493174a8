/**
 * Recording settings API (../shared/api/recorder-cloud.md): typed records and the tolerant parser of its answers.
 * The document does not show which object carries `status`: it is accepted on the setting and on its records;
 * the setting's own wins, else the newest record's (by start time).
 */
import type { FieldIssue } from '../traffic/response.js';

export const RECORDING_STATUSES = ['wait', 'progress', 'finish', 'error'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];

export interface RecordingInstance {
  /** Unix milliseconds. */
  start?: number;
  stop?: number;
  initPath?: string;
  status?: RecordingStatus;
}

export interface RecordingSetting {
  id: string;
  resourceId?: string;
  accountName?: string;
  sourceDomain?: string;
  sourcePath?: string;
  streamType?: string;
  launchType?: string;
  stopTimeout?: number;
  /** Days; -1 means kept forever. */
  storageTime?: number;
  dvrEnabled?: boolean;
  /** Seconds. */
  dvrWindow?: number;
  smil?: boolean;
  qualities: Record<string, string> | null;
  records: RecordingInstance[];
  path: string | null;
  /** The setting's own status when it carries one. */
  status?: RecordingStatus;
  /** Whether the setting is active; the API does not show a field for it: absent means active. */
  active?: boolean;
}

/** The status to expose: the setting's, else the newest record's, else undefined. */
export type EffectiveStatus = RecordingStatus | undefined;

export interface RecordingListResponse {
  settings: RecordingSetting[];
  issues: FieldIssue[];
  unknownKeys: string[];
}
