/**
 * Bandwidths in the configuration file, as CDN contracts write them: a number with a unit of bits per second,
 * decimal SI as in networking and billing (`bps`, `kbps`, `Mbps`, `Gbps`, `Tbps`: powers of 1000; `2Gbps` is
 * 2 * 10^9 bit/s). A fraction is allowed (`1.5Gbps`); the result is rounded to whole bits per second. Units are
 * case-sensitive except `k`/`K`: `MBps` (bytes) is not a bandwidth here and is refused, not guessed.
 */

const UNITS: Record<string, number> = {
  bps: 1,
  kbps: 1e3,
  Kbps: 1e3,
  Mbps: 1e6,
  Gbps: 1e9,
  Tbps: 1e12,
};

/** Bits per second, or undefined when `value` is not a bandwidth (no unit, unknown unit, negative, ...). */
export function parseBitRate(value: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/.exec(value.trim());
  if (!match) return undefined;
  const unit = UNITS[match[2]!];
  if (unit === undefined) return undefined;
  const bits = Math.round(Number(match[1]) * unit);
  return Number.isSafeInteger(bits) ? bits : undefined;
}

/** The shortest exact form (`2000000000` -> `2Gbps`), else bits per second. */
export function formatBitRate(bits: number): string {
  for (const [unit, size] of [
    ['Tbps', 1e12],
    ['Gbps', 1e9],
    ['Mbps', 1e6],
    ['kbps', 1e3],
  ] as const) {
    if (bits >= size && bits % size === 0) return `${bits / size}${unit}`;
  }
  return `${bits}bps`;
}
