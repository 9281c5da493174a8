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
import { copyFile, mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { CountedCursors } from '../store/types.js';

const MINUTE = 60_000;
/** What save() writes: `2026-06-01T12:00:00.000Z`; seconds and milliseconds optional on reading. */
const CURSOR_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?Z$/;

/** How far a saved cursor may be trusted, checked on load. */
export interface CursorLimits {
  /** Now, ms, on the exporter's clock. */
  now: number;
  /**
   * The furthest back a restart resumes: an older cursor is moved up to floor_minute(now - maxCatchUpMs), and
   * the minutes in between are given up (the caller counts them as skipped).
   */
  maxCatchUpMs: number;
}

export interface LoadedState {
  /** Usable cursors by account (ms): whole minutes, not in the future, moved up to the catch-up limit. */
  cursors: Map<string, number>;
  /** Accounts whose cursor was moved up: the minutes [from, to) that will not be asked for. */
  clamped: Map<string, { from: number; to: number }>;
  /** One line per problem found, naming the file; each has been logged. */
  problems: string[];
  /** Where a copy of the file was kept when some of its cursors were bad (the next save overwrites the file). */
  keptAs?: string;
}

const describe = (v: unknown): string =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'string'
        ? JSON.stringify(v)
        : `a ${typeof v}`;
const iso = (ms: number) => new Date(ms).toISOString().replace(':00.000Z', 'Z');

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

  /**
   * Reads the state file (none configured: an empty book), its cursors checked against `limits` (StateFile.load).
   * Throws when the file cannot be used as a whole; returns what was found wrong with single cursors (logged).
   */
  async load(limits?: CursorLimits): Promise<LoadedState> {
    const loaded = this.file
      ? await this.file.load(limits, this.log)
      : { cursors: new Map<string, number>(), clamped: new Map(), problems: [] };
    this.loaded = true;
    for (const [account, cursor] of loaded.cursors) {
      this.durable.set(account, cursor);
      this.wanted.set(account, cursor);
    }
    return loaded;
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

  /**
   * The saved cursors, checked. A missing file is an empty state; a file that cannot be read (permissions) is an
   * error naming it. Nothing bad is taken silently or walked from (a cursor in 1990 would walk 36 years, one in
   * 2099 would stall the account until then):
   * - a file that is not JSON, or not this format, is refused: the error names the file, which is left as it is;
   * - a cursor that is not a time on a whole minute, or is in the future, is ignored (that account starts from
   *   lookback), and the file is copied to `<file>.corrupt-<time>` before the next save overwrites it;
   * - a cursor older than `limits.maxCatchUpMs` is moved up to that limit.
   * Each problem is logged at error level (the move-up as a warning) and returned.
   */
  async load(limits?: CursorLimits, log?: Logger): Promise<LoadedState> {
    const now = limits?.now ?? Date.now();
    const out: LoadedState = { cursors: new Map(), clamped: new Map(), problems: [] };
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
      throw new Error(`state_file ${this.path}: ${(err as Error).message}`);
    }
    const aside = `${this.path}.corrupt-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
    // A file unreadable as a whole is refused (the process does not start, its error names the file): every
    // account's cursor is in doubt, and the file is left as it is for the operator to repair or move away.
    const wholeFile = (problem: string): never => {
      throw new Error(
        `state_file ${this.path}: ${problem}; repair it, or move it away to start from lookback`,
      );
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return wholeFile('not valid JSON');
    }
    const state = parsed as Partial<SavedState> | null;
    const cursors = state?.cursors;
    if (
      typeof state !== 'object' ||
      state?.version !== 1 ||
      !cursors ||
      typeof cursors !== 'object' ||
      Array.isArray(cursors)
    ) {
      return wholeFile('unknown format (expected {"version": 1, "cursors": {account: time}})');
    }
    const latest = Math.floor(now / MINUTE) * MINUTE;
    const earliest = limits
      ? Math.floor((now - limits.maxCatchUpMs) / MINUTE) * MINUTE
      : Number.NEGATIVE_INFINITY;
    let bad = false;
    const refuse = (account: string, problem: string) => {
      bad = true;
      const line = `state_file ${this.path}: cursor of account ${JSON.stringify(account)} ${problem}; ignored, the account starts from lookback`;
      out.problems.push(line);
      log?.error({ file: this.path, account, problem }, line);
    };
    for (const [account, value] of Object.entries(cursors as Record<string, unknown>)) {
      const ms = typeof value === 'string' && CURSOR_TEXT.test(value) ? Date.parse(value) : Number.NaN;
      if (!Number.isFinite(ms))
        refuse(account, `is not a UTC time like 2026-06-01T12:00:00.000Z (got ${describe(value)})`);
      else if (ms % MINUTE !== 0) refuse(account, `is not on a whole minute (${value as string})`);
      else if (ms > latest) refuse(account, `is in the future (${iso(ms)}, now ${iso(now)})`);
      else if (ms < earliest) {
        const line =
          `state_file ${this.path}: cursor of account ${JSON.stringify(account)} (${iso(ms)}) is older than ` +
          `metrics.max_catch_up allows; moved up to ${iso(earliest)}, the minutes between are skipped`;
        out.problems.push(line);
        log?.warn({ file: this.path, account, cursor: iso(ms), moved_to: iso(earliest) }, line);
        out.clamped.set(account, { from: ms, to: earliest });
        out.cursors.set(account, earliest);
      } else out.cursors.set(account, ms);
    }
    if (bad) {
      await copyFile(this.path, aside);
      out.keptAs = aside;
      log?.error(
        { file: this.path, kept_as: aside },
        `state_file ${this.path}: kept as ${aside} before it is rewritten`,
      );
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
