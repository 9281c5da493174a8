/**
 * Bandwidths in the configuration file, as CDN contracts write them: a number with a unit of bits per second,
 * decimal SI as in networking and billing (`bps`, `kbps`, `Mbps`, `Gbps`, `Tbps`: powers of 1000; `2Gbps` is
 * 2 * 10^9 bit/s). A fraction is allowed (`1.5Gbps`); the result is rounded to whole bits per second, computed
 * exactly (no floating point). Units are case-sensitive except `k`/`K`: `MBps` (bytes) is not a bandwidth here and is refused, not guessed.
 */

import { scaleDecimal } from './size.js';

const UNITS: Record<string, number> = {
  bps: 1,
  kbps: 1e3,
  Kbps: 1e3,
  Mbps: 1e6,
  Gbps: 1e9,
  Tbps: 1e12,
};

/**
 * Bits per second, exactly (a bigint, rounded half up to whole bits: `1.5bps` is 2), whatever its size; undefined
 * when `value` is not a bandwidth (no unit, unknown unit, negative, ...). The caller caps it (MAX_EXACT).
 */
export function parseBitRate(value: string): bigint | undefined {
  const match = /^(\d+)(?:\.(\d+))?\s*([A-Za-z]+)$/.exec(value.trim());
  if (!match) return undefined;
  const unit = UNITS[match[3]!];
  if (unit === undefined) return undefined;
  return scaleDecimal(match[1]!, match[2] ?? '', unit);
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
