/**
 * Small file helpers of the backfill: a JSON read that tells a missing file from an unreadable one, and the atomic
 * whole-file write (src/atomic-file.ts) the backfill's files use.
 */
import { readFile } from 'node:fs/promises';

export { writeAtomic } from '../atomic-file.js';

/** The parsed JSON of `path`; undefined when there is no file. Throws with `what` and the path otherwise. */
export async function readJson(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${what} ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`${what} ${path}: not valid JSON`);
  }
}
