/**
 * A file written whole or not at all: a temporary file in the same folder (`<file>.<pid>.tmp`), flushed to disk,
 * then renamed over the file. A crash leaves the old file or the new one, never a torn or empty one. For the files
 * kept beside `state_file` (the settled writer's, the ranking's, the gaps' and backfill's progress).
 */
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Characters written at once: a big text is made and written in pieces, the event loop free between them. */
const CHUNK = 1 << 20;

/** Writes `text` (one string, or pieces made as they are written) to `path` atomically. */
export async function writeAtomic(path: string, text: string | Iterable<string>): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w');
  let written = false;
  try {
    if (typeof text === 'string') await handle.write(text);
    else {
      let piece = '';
      for (const part of text) {
        piece += part;
        if (piece.length >= CHUNK) {
          await handle.write(piece);
          piece = '';
        }
      }
      await handle.write(piece);
    }
    await handle.sync();
    written = true;
  } finally {
    await handle.close();
    // A write that failed part way (a full disk, a piece that threw) leaves the old file and no stray temporary.
    if (!written) await unlink(tmp).catch(() => {});
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}
