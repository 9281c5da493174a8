/**
 * A small seeded hash for the DVR and recorder simulators: the same seed and parts give the same numbers on every
 * run and platform (FNV-1a over the parts, then a murmur3 finaliser).
 */

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
