/**
 * The state file's revisit part (./state-file.ts stores it beside the cursors, and checks it on load): the windows
 * awaiting a revisit (src/traffic/revisit.ts) and what was counted for each (src/traffic/counted-book.ts), and the
 * codec of those records. How the pipeline keeps it between saves: ./revisit-keep.ts.
 */

export interface SavedRevisits {
  version: 1;
  /** Counter family names; a series' first element indexes this list. */
  families: string[];
  accounts: Record<string, SavedAccountRevisits>;
}

export interface SavedAccountRevisits {
  /** By cid: [family index, ...label values after the account], or null for an unused number. */
  series: Array<[number, ...string[]] | null>;
  /** Windows awaiting their revisit, in order: start, end (ISO), what was counted (Float64 LE by cid, base64). */
  windows: Array<{ start: string; end: string; counted: string }>;
}

/** A record for the state file: the Float64 values, little-endian, base64. */
export function encodeCounted(counted: Float64Array): string {
  const buf = Buffer.alloc(counted.length * 8);
  for (let i = 0; i < counted.length; i++) buf.writeDoubleLE(counted[i]!, i * 8);
  return buf.toString('base64');
}

/** The inverse of encodeCounted; throws when the text is not a whole number of Float64 values. */
export function decodeCounted(text: string): Float64Array {
  const buf = Buffer.from(text, 'base64');
  if (buf.length % 8 !== 0) throw new Error('a revisit record is not a whole number of 8-byte values');
  const out = new Float64Array(buf.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = buf.readDoubleLE(i * 8);
  return out;
}
