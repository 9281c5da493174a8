/**
 * Sizes in the configuration file: a whole number of bytes (`1048576`), or a whole number with a unit, decimal
 * (`kB`, `MB`, `GB`, `TB`, `PB`: powers of 1000) or binary (`KiB`, `MiB`, `GiB`, `TiB`, `PiB`: powers of 1024), as
 * Prometheus and Kubernetes write them (`64MiB`, `500MB`). `B` alone is bytes. Units are case-sensitive except
 * `k`/`K`. CDN contracts count in decimal units (`50TB` is 50 * 10^12 bytes), so a commit written the way the
 * contract writes it is read as the contract means it.
 */

const UNITS: Record<string, number> = {
  '': 1,
  B: 1,
  kB: 1000,
  KB: 1000,
  MB: 1000 ** 2,
  GB: 1000 ** 3,
  TB: 1000 ** 4,
  PB: 1000 ** 5,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
  TiB: 1024 ** 4,
  PiB: 1024 ** 5,
};

/** Bytes, or undefined when `value` is not a size (negative, fractional, unknown unit, ...). */
export function parseSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  const match = /^(\d+)\s*([A-Za-z]*)$/.exec(value.trim());
  if (!match) return undefined;
  const unit = UNITS[match[2]!];
  if (unit === undefined) return undefined;
  const bytes = Number(match[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** The units a size is written in, largest first. */
const BINARY_UNITS = [
  ['PiB', 1024 ** 5],
  ['TiB', 1024 ** 4],
  ['GiB', 1024 ** 3],
  ['MiB', 1024 ** 2],
  ['KiB', 1024],
] as const;
const DECIMAL_UNITS = [
  ['PB', 1000 ** 5],
  ['TB', 1000 ** 4],
  ['GB', 1000 ** 3],
  ['MB', 1000 ** 2],
  ['kB', 1000],
] as const;

/** The shortest exact binary form (`67108864` -> `64MiB`), else bytes. */
export function formatSize(bytes: number): string {
  return shortestExact(bytes, BINARY_UNITS);
}

/** The shortest exact decimal form (`50000000000000` -> `50TB`), else bytes: how a contract writes a volume. */
export function formatDecimalSize(bytes: number): string {
  return shortestExact(bytes, DECIMAL_UNITS);
}

/** `units` largest first: the first that divides `bytes` exactly names it, else bytes. */
function shortestExact(bytes: number, units: readonly (readonly [string, number])[]): string {
  for (const [unit, size] of units) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}B`;
}
