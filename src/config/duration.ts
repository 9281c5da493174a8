/**
 * Durations in the configuration file are strings in Prometheus' own format: one or more `<integer><unit>` parts,
 * units in decreasing order and each at most once (`90s`, `5m`, `1h30m`, `1m30s`, `500ms`), or a bare `0`.
 * Units: y (365d), w, d, h, m, s, ms. Parsed to whole milliseconds.
 */

const UNITS: ReadonlyArray<readonly [string, number]> = [
  ['y', 365 * 24 * 3_600_000],
  ['w', 7 * 24 * 3_600_000],
  ['d', 24 * 3_600_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
];

const PATTERN = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;

/** Milliseconds, or undefined when `text` is not a duration (empty, no unit, units out of order, negative, ...). */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text === '') return undefined;
  const match = PATTERN.exec(text);
  if (!match) return undefined;
  let ms = 0;
  for (let i = 0; i < UNITS.length; i++) {
    const part = match[i + 1];
    if (part !== undefined) ms += Number(part) * UNITS[i]![1];
  }
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The shortest duration string for `ms` (`90000` -> `1m30s`, `0` -> `0s`); `parseDuration` reads it back. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = Math.round(ms);
  let out = '';
  // Years and weeks are skipped on output: `7d` reads better than `1w` in a printed configuration.
  for (const [unit, size] of UNITS.slice(2)) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
