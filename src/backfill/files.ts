/**
 * Small file helpers of the backfill: a whole-file write that is atomic (a temporary file in the same folder,
 * flushed, renamed over the target, as src/settled/settled-state.ts does), and a JSON read that tells a missing file
 * from an unreadable one.
 */
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Writes `text` to `path` so that a reader sees the old file or the new one, never a part. */
export async function writeAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w');
  try {
    await handle.write(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}

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
