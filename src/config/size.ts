/**
 * Sizes in the configuration file: a whole number of bytes (`1048576`), or a whole number with a unit, decimal
 * (`kB`, `MB`, `GB`, `TB`, `PB`: powers of 1000) or binary (`KiB`, `MiB`, `GiB`, `TiB`, `PiB`: powers of 1024), as
 * Prometheus and Kubernetes write them (`64MiB`, `500MB`). `B` alone is bytes. Units are case-sensitive except
 * `k`/`K`. CDN contracts count in decimal units (`50TB` is 50 * 10^12 bytes), so a commit written the way the
 * contract writes it is read as the contract means it; a commit may also be a fraction (`1.5TB`, parseVolume).
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

/**
 * The largest whole number a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER, 2^53 - 1): the cap of a
 * byte count or a bit rate read from the file, which the exporter keeps as a number. 9007199254740991 bytes is
 * 9.007199254740991PB; as bits per second, 9007.199254740991Tbps.
 */
export const MAX_EXACT = Number.MAX_SAFE_INTEGER;

/**
 * `whole.fraction` times `unit`, exactly (no floating point), rounded half up to a whole number: `1.5` TB is
 * 1500000000000. `fraction` may be empty.
 */
export function scaleDecimal(whole: string, fraction: string, unit: number): bigint {
  const scale = 10n ** BigInt(fraction.length);
  const scaled = BigInt(`${whole}${fraction}`) * BigInt(unit);
  return (scaled * 2n + scale) / (2n * scale);
}

/**
 * A volume (the commit's monthly transfer): a size as parseSize reads it, or a decimal fraction with a unit
 * (`1.5TB`, `0.5PiB`), rounded half up to whole bytes; a number is whole bytes. Exact whatever its size (a
 * bigint), so a caller can say by how much it is over MAX_EXACT; undefined when it is not a volume.
 */
export function parseVolume(value: string | number): bigint | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? BigInt(value) : undefined;
  const match = /^(\d+)(?:\.(\d+))?\s*([A-Za-z]*)$/.exec(value.trim());
  if (!match) return undefined;
  const unit = UNITS[match[3]!];
  if (unit === undefined) return undefined;
  return scaleDecimal(match[1]!, match[2] ?? '', unit);
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
