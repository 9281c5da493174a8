/**
 * Seeded, platform-independent randomness for the simulator. Nothing here reads Math.random: the same seed and
 * the same parts give the same numbers on every run, so tests can assert exact values.
 */

/** A 32-bit hash of the seed and the parts (FNV-1a over the joined parts, then the murmur3 finaliser). */
export function hash32(seed: number, ...parts: (string | number)[]): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  const text = parts.join('\u0000');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/** A number in [0, 1). */
export function unit(seed: number, ...parts: (string | number)[]): number {
  return hash32(seed, ...parts) / 2 ** 32;
}

/** An integer in [min, max] (inclusive). */
export function intBetween(seed: number, min: number, max: number, ...parts: (string | number)[]): number {
  return min + Math.floor(unit(seed, ...parts) * (max - min + 1));
}

/** A number in [min, max). */
export function between(seed: number, min: number, max: number, ...parts: (string | number)[]): number {
  return min + unit(seed, ...parts) * (max - min);
}

/** A sequential PRNG (mulberry32): numbers in [0, 1), for when a stream of values is handier than a hash. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** A copy of `items` in an order fixed by the seed and the parts (Fisher-Yates over mulberry32). */
export function seededShuffle<T>(items: readonly T[], seed: number, ...parts: (string | number)[]): T[] {
  const out = [...items];
  const next = mulberry32(hash32(seed, 'shuffle', ...parts));
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
