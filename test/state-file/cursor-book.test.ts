/**
 * The cursor book's rule (src/state-file/cursor-book.ts): the state file holds only cursors a scrape is about to
 * serve, on disk before the bytes leave; concurrent scrapes share writes and never move it back; a failed save is
 * counted, leaves the durable cursor where it was and does not hold the scrape.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Checkpoint, CursorBook } from '../../src/state-file/cursor-book.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const M = 60_000;

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function onDisk(path: string): Record<string, string> {
  return (JSON.parse(readFileSync(path, 'utf8')) as { cursors: Record<string, string> }).cursors;
}

/** A loaded book on a fresh state file, writes not spaced out (revisitGapMs 0). */
async function loadedBook() {
  dir = mkdtempSync(join(tmpdir(), 'cdn-book-'));
  const path = join(dir, 'state.json');
  const book = new CursorBook(path, captureLog().log, () => {}, undefined, 0);
  await book.load();
  return { path, book };
}

/** A checkpoint of account `acme` at `cursor`. */
const at = (cursor: number): Checkpoint => ({ cursors: new Map([['acme', cursor]]), revisitCount: 0 });

describe('cursor book', () => {
  it('saves a served cursor before commit resolves, keeps other accounts, never moves back', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdn-book-'));
    const path = join(dir, 'state.json');
    const book = new CursorBook(path, captureLog().log);
    await book.load();
    await book.commit(new Map([['other', T]]));
    expect(onDisk(path)).toEqual({ other: new Date(T).toISOString() });
    // Two scrapes at once, the newer one first: the file ends at the newer cursor.
    await Promise.all([
      book.commit(new Map([['acme', T + 20 * M]])),
      book.commit(new Map([['acme', T + 10 * M]])),
    ]);
    expect(onDisk(path)).toEqual({
      other: new Date(T).toISOString(),
      acme: new Date(T + 20 * M).toISOString(),
    });
    // A restart resumes at what was served.
    const again = new CursorBook(path, captureLog().log);
    await again.load();
    expect(again.get('acme')).toBe(T + 20 * M);
  });

  it('a failed save is logged and counted, the scrape goes on, the durable cursor stays', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdn-book-'));
    // The state file's folder is a file: no one, root included, can write there.
    const folder = join(dir, 'blocked');
    const path = join(folder, 'state.json');
    const { log, lines } = captureLog();
    let failures = 0;
    const book = new CursorBook(path, log, () => failures++);
    await book.load();
    writeFileSync(folder, 'not a folder');
    await expect(book.commit(new Map([['acme', T]]))).resolves.toBeUndefined();
    expect(failures).toBe(1);
    expect(lines.some((l) => l.includes('saving state_file failed'))).toBe(true);
    expect(book.get('acme')).toBeUndefined();
    rmSync(folder);
    await book.commit(new Map([['acme', T]]));
    expect(book.get('acme')).toBe(T);
    expect(onDisk(path)).toEqual({ acme: new Date(T).toISOString() });
  });

  it('a checkpoint of the state now, then an older one of the last exposition: a scrape of the newer state waits for it on disk', async () => {
    // The checkpoint source's contract lets `take` (the newest exposition rendered) be older than `now` (the
    // counting state, which may have moved on since the last render). A write of each, one queued behind the
    // other, must not leave the book believing the newer one is on disk.
    const { path, book } = await loadedBook();
    let rendered = at(T + 10 * M);
    // A window is half counted: the checkpoint of the state now waits for it to be whole.
    let whole: ((c: Checkpoint) => void) | undefined;
    book.checkpoints = {
      take: async () => rendered,
      now: () =>
        new Promise<Checkpoint>((resolve) => {
          whole = resolve;
        }),
    };
    book.touch(); // the revisit part changed: a write of the state now begins, and waits for the window
    for (let i = 0; i < 100 && !whole; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(whole, 'the write of the state now has begun').toBeDefined();
    // Meanwhile a scrape is served the last exposition rendered: its write queues behind that one.
    const served = book.commit(rendered.cursors);
    whole!(at(T + 20 * M)); // the window is counted: the state now is T+20m, and that write goes on
    await served;
    // The next scrape renders the state now: once its commit resolves, T+20m is on disk.
    rendered = at(T + 20 * M);
    await book.commit(rendered.cursors);
    expect(onDisk(path)).toEqual({ acme: new Date(T + 20 * M).toISOString() });
  });

  it("a write of the state now and a scrape's write asked together are one write of the state now", async () => {
    // An account stopped (or a stop): the book asks for the state now; a scrape of an exposition rendered before
    // that change asks in the same turn. The one write they share must not be of the older exposition.
    const { path, book } = await loadedBook();
    const rendered = at(T + 10 * M);
    book.checkpoints = { take: async () => rendered, now: async () => at(T + 20 * M) };
    book.touch();
    await book.commit(rendered.cursors);
    expect(onDisk(path)).toEqual({ acme: new Date(T + 20 * M).toISOString() });
  });
});
