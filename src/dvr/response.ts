/**
 * Network-DVR API (../shared/api/dvr-net.md): typed records and the tolerant parser of its answers.
 * The document does not show the units of `dvr.window`, `dvr.duration` and `ranges[].duration`: seconds is
 * assumed (the DELETE form speaks in seconds, and timestamps have second precision).
 */
import type { FieldIssue } from '../traffic/response.js';

export interface DvrRange {
  /** Start, Unix seconds. */
  from: number;
  /** Length, seconds. */
  duration: number;
}

export interface DvrHostEntry {
  streamName: string;
  host: string;
  alive: boolean;
  dvr: {
    enabled: boolean;
    /** DVR depth, seconds (assumed). */
    window?: number;
    /** Recorded total excluding breaks, seconds (assumed). */
    duration?: number;
    /** First recording, Unix seconds. */
    from?: number;
    ranges: DvrRange[];
  };
}

export interface DvrStreamResponse {
  streamName: string;
  entries: DvrHostEntry[];
  issues: FieldIssue[];
  unknownKeys: string[];
}
