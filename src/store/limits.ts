/**
 * What the series caps (issue 15) share across APIs: why a series was refused, and how a descriptive label value
 * is cut to `limits.max_label_length`.
 */

export const REFUSAL_REASONS = ['max_series', 'max_series_per_account', 'label_too_long'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** The caps a process admits new series under (config `limits`), with the store's size now. */
export interface SeriesLimits {
  maxSeries: number;
  maxLabelLength: number;
  /** Series the store holds now. */
  storeSize(): number;
}

/** Appended to a truncated label value (it stays within max_label_length). */
export const TRUNCATED_MARKER = '...(truncated)';

/** True when `value` takes more than `max` bytes in UTF-8. */
export function overLength(value: string, max: number): boolean {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most values need no byte count.
  return value.length * 3 > max && Buffer.byteLength(value) > max;
}

/** `value` within `max` UTF-8 bytes: as it is, or cut with TRUNCATED_MARKER at the end; undefined when as it is. */
export function truncateLabel(value: string, max: number): string | undefined {
  if (!overLength(value, max)) return undefined;
  const room = max - Buffer.byteLength(TRUNCATED_MARKER);
  let cut = value.slice(0, room);
  while (Buffer.byteLength(cut) > room) cut = cut.slice(0, cut.length - Math.max(1, cut.length >> 4));
  // A lone high surrogate at the cut would not be valid UTF-8.
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return cut + TRUNCATED_MARKER;
}
