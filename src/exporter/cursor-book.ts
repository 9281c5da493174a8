/**
 * The cursor book: per account, the cursor a restart resumes at, kept in the optional state file (`state_file`).
 *
 * The rule (README, "How traffic is counted"): the saved cursor covers only windows whose counts a served /metrics
 * response has included. A scrape hands the counted cursors of the exposition it is about to send to `commit`,
 * which returns once they are on disk; only then do the bytes leave. So after any crash or stop a restart re-reads
 * exactly the windows no scrape has seen: the old process's last scraped values, a counter reset, then the new
 * process's values add up to the truth, nothing lost and nothing twice.
 *
 * The state file is written atomically (a temporary file in the same folder, flushed to disk, then renamed over the
 * old one: a crash leaves the old state or the new, never an empty or torn file), one write at a time, the newest
 * state winning.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { CountedCursors } from '../store/types.js';

/**
 * Cursors by account. `load` reads the state file once; `commit` saves the cursors a scrape is about to show; `close`
 * waits for saves in progress. Only a loaded book saves: after a failed start nothing overwrites the cursors on
 * disk. Cursors of accounts this replica does not poll now (another shard's, a removed one) are kept on save.
 */
export class CursorBook {
  /** On disk (as far as this process knows). */
  private readonly durable = new Map<string, number>();
  /** Asked to be saved: durable, or newer and being (or failed to be) saved. Never moves back. */
  private readonly wanted = new Map<string, number>();
  private readonly file: StateFile | undefined;
  private readonly saving = new Set<Promise<void>>();
  private loaded = false;

  constructor(
    path: string | undefined,
    private readonly log: Logger,
    /** A save failed (it is logged; the bytes are still served). */
    private readonly saveFailed: () => void = () => {},
  ) {
    this.file = path ? new StateFile(path) : undefined;
  }

  /** Reads the state file (none configured: an empty book). Throws when the file cannot be used. */
  async load(): Promise<void> {
    const saved = this.file ? await this.file.load() : new Map<string, number>();
    this.loaded = true;
    for (const [account, cursor] of saved) {
      this.durable.set(account, cursor);
      this.wanted.set(account, cursor);
    }
  }

  /** Where the account's walk resumes; undefined: start at now - lookback. */
  get(account: string): number | undefined {
    return this.durable.get(account);
  }

  /**
   * Makes `counted` durable before the exposition showing it is served. Resolves at once when it already is (or
   * there is no state file); otherwise once it, or a newer state, is on disk. Concurrent calls share writes. Never
   * rejects: a failed save is logged and counted, the durable cursors stay as they were, and the caller serves
   * anyway (a crash before the next good save may then count the windows since the last good one twice).
   */
  commit(counted: CountedCursors): Promise<void> {
    if (!this.file || !this.loaded) return Promise.resolve();
    let newer = false;
    for (const [account, cursor] of counted) {
      if (cursor > (this.durable.get(account) ?? Number.NEGATIVE_INFINITY)) newer = true;
      if (cursor > (this.wanted.get(account) ?? Number.NEGATIVE_INFINITY)) this.wanted.set(account, cursor);
    }
    if (!newer) return Promise.resolve();
    const snapshot = new Map(this.wanted);
    const p = this.file.save(snapshot).then(
      () => {
        // This state or a newer one (wanted never moves back) is on disk.
        for (const [account, cursor] of snapshot) {
          if (cursor > (this.durable.get(account) ?? Number.NEGATIVE_INFINITY))
            this.durable.set(account, cursor);
        }
      },
      (err: unknown) => {
        this.saveFailed();
        this.log.error(
          { err: describeError(err) },
          'saving state_file failed: a crash now would count the windows since the last good save twice',
        );
      },
    );
    this.saving.add(p);
    void p.finally(() => this.saving.delete(p));
    return p;
  }

  /** Waits for the saves in progress. Nothing new is saved: the cursors on disk are the ones a scrape saw. */
  async close(): Promise<void> {
    await Promise.all([...this.saving]);
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
