/**
 * The checks the state file's parts pass on load (./state-file.ts): one account's saved revisits, its saved
 * counters, and the counters' start timestamps; each names what is wrong, or drops what cannot be true.
 */
import type { SavedCounters } from './saved-counters.js';
import type { SavedRevisits } from './saved-revisits.js';

const MINUTE = 60_000;

/** A value as a problem names it. */
export const describe = (v: unknown): string =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'string'
        ? JSON.stringify(v)
        : typeof v === 'object' || typeof v === 'undefined'
          ? `an ${typeof v}`
          : `a ${typeof v}`;

/** A time as a problem names it, to the minute. */
export const iso = (ms: number) => new Date(ms).toISOString().replace(':00.000Z', 'Z');
/** Why one account's saved revisit windows cannot be used; undefined when they can. */
export function revisitProblem(
  part: SavedRevisits['accounts'][string],
  families: number,
  earliest: number,
  latest: number,
): string | undefined {
  if (part.series.some((s) => s !== null && s[0] >= families))
    return 'name a counter family the file does not list';
  for (const w of part.windows) {
    const start = Date.parse(w.start);
    const end = Date.parse(w.end);
    const span = `${iso(start)}..${iso(end)}`;
    if (start % MINUTE !== 0 || end % MINUTE !== 0 || !(start < end))
      return `include a window that is not whole minutes (${span})`;
    if (end > latest) return `include a window in the future (${span})`;
    if (start < earliest) return `include a window older than metrics.max_catch_up allows (${span})`;
    const record = Buffer.from(w.counted, 'base64');
    const bytes = record.length;
    if (bytes % 8 !== 0 || bytes / 8 > part.series.length)
      return `include a record that does not fit the account's ${part.series.length} series (${span})`;
    for (let i = 0; i < bytes; i += 8) {
      const v = record.readDoubleLE(i);
      if (!Number.isFinite(v) || v < 0)
        return `include a record with a count that is not a number >= 0 (${span})`;
    }
  }
  return undefined;
}

/** Why one account's saved counters cannot be used; undefined when they can. */
export function countersProblem(
  series: SavedCounters['accounts'][string],
  families: number,
): string | undefined {
  for (const s of series as unknown[]) {
    if (!Array.isArray(s)) return 'include a series that is not [family, value, start, ...labels]';
    const [fi, value, , ...labels] = s as unknown[];
    if (typeof fi !== 'number' || !Number.isInteger(fi) || fi < 0 || fi >= families)
      return 'name a counter family the file does not list';
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      return `include a value that is not a number >= 0 (${JSON.stringify(value)})`;
    // The start is checked by dropBadStarts, series by series: a bad one costs that series its start alone.
    if (labels.some((l) => typeof l !== 'string')) return 'include a label value that is not text';
  }
  return undefined;
}

/**
 * A counter's saved start can be used when it is whole Unix seconds, not after `latest` (the load time, as for a
 * cursor: a start in the future is a file from a clock ahead, or not seconds at all, such as milliseconds), and
 * within what the series store keeps (1 up to 2^32 - 1, in 2106). 0 is the file's "none" (a series saved without
 * a start). There is no floor but the epoch: a counter continued across restarts keeps the start of the first
 * window it counted, however long ago (the cursor's catch-up floor is not one for starts). Not checked against the
 * account's cursor: the bookkeeping counters (cdn_metrics_windows_total, cdn_metrics_skipped_seconds_total) start
 * when their series was made, after the cursor while a catch-up walks.
 */
export function goodStart(start: unknown, latest: number): boolean {
  return typeof start === 'number' && Number.isInteger(start) && start >= 0 && start <= latest;
}

/**
 * Sets every start goodStart refuses to 0 (none) in `counters`; returns how many, and the first (account, value as
 * found), or undefined when every start is good. A start dropped so is written back as 0 by the next save.
 */
export function dropBadStarts(
  counters: SavedCounters,
  latest: number,
): { count: number; account: string; sample: string } | undefined {
  let count = 0;
  let first: { account: string; sample: string } | undefined;
  for (const [account, series] of Object.entries(counters.accounts)) {
    for (const s of series) {
      if (goodStart(s[2], latest)) continue;
      count++;
      first ??= { account, sample: sampleOf(s[2]) };
      s[2] = 0;
    }
  }
  return first ? { count, ...first } : undefined;
}

/** A value as found, for a log line: a number as written, a text quoted and cut at 40 characters. */
export function sampleOf(v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') return describe(v);
  return v.length > 40 ? `${JSON.stringify(v.slice(0, 40))}...` : JSON.stringify(v);
}
