/**
 * The cursor book: the walking cursor of each account (every minute before it has been counted), kept in memory and
 * in the optional state file (`state_file`), so a restart resumes where the last run stopped instead of at
 * now - lookback.
 *
 * The state file is Written atomically (a temporary file in the same folder, flushed to
 * disk, then renamed over the old one: a crash leaves the old state or the new, never an empty or torn file), one
 * write at a time, the newest state winning.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';

/**
 * Cursors by account. `load` reads the state file once; `record` saves on every change of a cursor (a failed save
 * is logged; the next change tries again); `close` saves once more. Only a loaded book saves: closing after a
 * failed start must not overwrite the cursors on disk. Cursors of accounts this replica does not poll now (another
 * shard's, a removed one) are kept on save.
 */
export class CursorBook {
  private readonly cursors = new Map<string, number>();
  private readonly file: StateFile | undefined;
  private loaded = false;

  constructor(
    path: string | undefined,
    private readonly log: Logger,
  ) {
    this.file = path ? new StateFile(path) : undefined;
  }

  /** Reads the state file (none configured: an empty book). Throws when the file cannot be used. */
  async load(): Promise<void> {
    const saved = this.file ? await this.file.load() : new Map<string, number>();
    this.loaded = true;
    for (const [account, cursor] of saved) this.cursors.set(account, cursor);
  }

  /** Where the account's walk resumes; undefined: start at now - lookback. */
  get(account: string): number | undefined {
    return this.cursors.get(account);
  }

  /** The account's cursor moved (or was first published): saved when it changed. */
  record(account: string, cursor: number): void {
    if (this.cursors.get(account) === cursor) return;
    this.cursors.set(account, cursor);
    this.file
      ?.save(this.cursors)
      .catch((err: unknown) => this.log.error({ err: describeError(err) }, 'saving state_file failed'));
  }

  /** Saves the cursors as they are now (at stop, after every handed-over window has been counted). */
  async close(): Promise<void> {
    if (this.file && this.loaded) await this.file.save(this.cursors);
  }
}

export interface SavedState {
  version: 1;
  /** Account name to cursor (ISO 8601, UTC). */
  cursors: Record<string, string>;
}

export class StateFile {
  private pending: SavedState | undefined;
  private writing: Promise<void> | undefined;

  constructor(private readonly path: string) {}

  /** Cursors by account (ms). A missing file is an empty state; an unreadable one is an error naming the file. */
  async load(): Promise<Map<string, number>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new Error(`state_file ${this.path}: ${(err as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`state_file ${this.path}: not valid JSON; move it away to start from lookback`);
    }
    const cursors = (parsed as Partial<SavedState>)?.cursors;
    if ((parsed as Partial<SavedState>)?.version !== 1 || !cursors || typeof cursors !== 'object') {
      throw new Error(`state_file ${this.path}: unknown format; move it away to start from lookback`);
    }
    const out = new Map<string, number>();
    for (const [account, iso] of Object.entries(cursors)) {
      const ms = Date.parse(String(iso));
      if (Number.isFinite(ms) && ms % 60_000 === 0) out.set(account, ms);
    }
    return out;
  }

  /** Schedules a write of these cursors; returns when this state (or a newer one) is on disk. */
  save(cursors: ReadonlyMap<string, number>): Promise<void> {
    const state: SavedState = { version: 1, cursors: {} };
    for (const [account, ms] of cursors) state.cursors[account] = new Date(ms).toISOString();
    this.pending = state;
    if (!this.writing) this.writing = this.drain();
    return this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending) {
        const state = this.pending;
        this.pending = undefined;
        await mkdir(dirname(this.path), { recursive: true });
        const tmp = `${this.path}.${process.pid}.tmp`;
        const file = await open(tmp, 'w');
        try {
          await file.writeFile(`${JSON.stringify(state, null, 2)}\n`);
          await file.sync();
        } finally {
          await file.close();
        }
        await rename(tmp, this.path);
      }
    } finally {
      this.writing = undefined;
    }
  }
}
