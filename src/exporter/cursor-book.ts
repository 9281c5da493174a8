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
import { z } from 'zod';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { SavedRevisits } from '../traffic/revisit.js';

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
  /** The revisit part as loaded; then, once `revisits` is set, what it returns. */
  private savedRevisits: SavedRevisits | undefined;
  private revisitSource: (() => SavedRevisits | undefined) | undefined;

  constructor(
    path: string | undefined,
    private readonly log: Logger,
  ) {
    this.file = path ? new StateFile(path) : undefined;
  }

  /** Reads the state file (none configured: an empty book). Throws when the file cannot be used. */
  async load(): Promise<void> {
    const saved = this.file ? await this.file.loadState() : { cursors: new Map<string, number>() };
    this.loaded = true;
    for (const [account, cursor] of saved.cursors) this.cursors.set(account, cursor);
    this.savedRevisits = saved.revisits;
  }

  /** The windows awaiting a re-read as the state file had them (metrics.revisit); undefined: none. */
  get loadedRevisits(): SavedRevisits | undefined {
    return this.savedRevisits;
  }

  /** Where each save takes the revisit part from (the traffic pipeline). */
  set revisits(source: () => SavedRevisits | undefined) {
    this.revisitSource = source;
  }

  /** The revisit part changed: saved with the cursors as they are. */
  touch(): void {
    this.save();
  }

  /** Where the account's walk resumes; undefined: start at now - lookback. */
  get(account: string): number | undefined {
    return this.cursors.get(account);
  }

  /** The account's cursor moved (or was first published): saved when it changed. */
  record(account: string, cursor: number): void {
    if (this.cursors.get(account) === cursor) return;
    this.cursors.set(account, cursor);
    this.save();
  }

  /** Saves the cursors as they are now (at stop, after every handed-over window has been counted). */
  async close(): Promise<void> {
    if (this.file && this.loaded) await this.file.save(this.cursors, this.revisitPart());
  }

  private save(): void {
    if (!this.file || !this.loaded) return;
    this.file
      .save(this.cursors, this.revisitPart())
      .catch((err: unknown) => this.log.error({ err: describeError(err) }, 'saving state_file failed'));
  }

  /** Before the pipeline took over: what was loaded, kept as it was (a failed start must not lose it). */
  private revisitPart(): SavedRevisits | undefined {
    return this.revisitSource ? this.revisitSource() : this.savedRevisits;
  }
}

/**
 * The revisit part of the state file (`revisit`, versioned on its own, so the cursor part can change without it):
 * what was counted for each window awaiting its re-read, per counter series. See src/traffic/revisit.ts.
 */
const revisitsSchema = z.strictObject({
  version: z.literal(1),
  families: z.array(z.string()),
  accounts: z.record(
    z.string(),
    z.strictObject({
      series: z.array(z.tuple([z.int().min(0)], z.string()).nullable()),
      windows: z.array(
        z.strictObject({
          start: z.iso.datetime(),
          end: z.iso.datetime(),
          counted: z.base64(),
        }),
      ),
    }),
  ),
});

export interface SavedState {
  version: 1;
  /** Account name to cursor (ISO 8601, UTC). */
  cursors: Record<string, string>;
  /** Windows awaiting a re-read (metrics.revisit); absent when there are none or revisit is off. */
  revisit?: SavedRevisits;
}

export interface LoadedState {
  cursors: Map<string, number>;
  revisits?: SavedRevisits;
}

export class StateFile {
  private pending: SavedState | undefined;
  private writing: Promise<void> | undefined;

  constructor(private readonly path: string) {}

  /** Cursors by account (ms). A missing file is an empty state; an unreadable one is an error naming the file. */
  async load(): Promise<Map<string, number>> {
    return (await this.loadState()).cursors;
  }

  /** Cursors and the revisit part. A revisit part that is not of the known format is an error naming the file. */
  async loadState(): Promise<LoadedState> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { cursors: new Map() };
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
    const raw = (parsed as { revisit?: unknown }).revisit;
    if (raw === undefined) return { cursors: out };
    const revisits = revisitsSchema.safeParse(raw);
    if (!revisits.success) {
      throw new Error(
        `state_file ${this.path}: its revisit part is of an unknown format (${revisits.error.issues[0]?.message}); move the file away to start from lookback`,
      );
    }
    return { cursors: out, revisits: revisits.data as SavedRevisits };
  }

  /** Schedules a write of these cursors; returns when this state (or a newer one) is on disk. */
  save(cursors: ReadonlyMap<string, number>, revisits?: SavedRevisits): Promise<void> {
    const state: SavedState = { version: 1, cursors: {} };
    for (const [account, ms] of cursors) state.cursors[account] = new Date(ms).toISOString();
    if (revisits && Object.keys(revisits.accounts).length > 0) state.revisit = revisits;
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
          await file.writeFile(stateText(state));
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

/** The cursors readable; the revisit part (its records are base64 anyway) on one line, to stay compact. */
function stateText(state: SavedState): string {
  const { revisit, ...cursors } = state;
  const head = JSON.stringify(cursors, null, 2);
  if (!revisit) return `${head}\n`;
  return `${head.slice(0, -2)},\n  "revisit": ${JSON.stringify(revisit)}\n}\n`;
}
