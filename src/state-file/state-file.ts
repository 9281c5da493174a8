/**
 * The state file (`state_file`): the cursors, counters and revisit part the cursor book (./cursor-book.ts) keeps,
 * in its format on disk, checked on load.
 *
 * It is written atomically (a temporary file in the same folder, flushed to disk, then renamed over the
 * old one: a crash leaves the old state or the new, never an empty or torn file), one write at a time, the newest
 * state winning.
 *
 * Beside the cursors it holds a `revisit` part (metrics.revisit): what was counted for each window awaiting its
 * revisit, so a restart can still revisit late data.
 */
import { copyFile, mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { countersProblem, describe, dropBadStarts, iso, revisitProblem } from './checks.js';
import type { SavedCounters } from './saved-counters.js';
import type { SavedRevisits } from './saved-revisits.js';

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
  /** Windows awaiting a revisit (metrics.revisit), checked; absent when the file has none. */
  revisits?: SavedRevisits;
  /** The counters' values at the saved cursors, checked; absent when the file has none (an older file). */
  counters?: SavedCounters;
  /** A state file was there: this process follows one that ran (and may have been killed a moment ago). */
  existed: boolean;
}

/**
 * The revisit part of the state file (`revisit`, versioned on its own, so the cursor part can change without it):
 * what was counted for each window awaiting its revisit, per counter series. See ./saved-revisits.ts.
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

/** The counter part: checked as a whole here, series by series in StateFile.load. */
const countersSchema = z.strictObject({
  version: z.literal(1),
  families: z.array(z.string()),
  // Each series is checked by countersProblem: a schema per element costs seconds at a million series.
  accounts: z.record(z.string(), z.array(z.unknown())),
});

export interface SavedState {
  version: 1;
  /** Account name to cursor (ISO 8601, UTC). */
  cursors: Record<string, string>;
  /** Windows awaiting a revisit (metrics.revisit); absent when there are none or revisit is off. */
  revisit?: SavedRevisits;
  /** The traffic counters' values at the cursors; absent when there are none. */
  counters?: SavedCounters;
}

/** What one write holds, taken when it begins (StateFile.write). */
interface WriteAsked {
  cursors: ReadonlyMap<string, number>;
  revisit?: SavedRevisits;
  counters?: SavedCounters;
}

const CHUNK = 1 << 20;
/** Series of the revisit part made into text at a time. */
const SERIES_SLICE = 20_000;

export class StateFile {
  /** The next write: what it takes, and who waits for it (every save asked for since the last write began). */
  private pending: { take: () => Promise<WriteAsked>; waiters: Array<(err?: unknown) => void> } | undefined;
  private writing = false;

  constructor(private readonly path: string) {}

  /**
   * The saved cursors, checked. A missing file is an empty state; a file that cannot be read (permissions) is an
   * error naming it. Nothing bad is taken silently or walked from (a cursor in 1990 would walk 36 years, one in
   * 2099 would stall the account until then):
   * - a file that is not JSON, or not this format, is refused: the error names the file, which is left as it is;
   * - a cursor that is not a time on a whole minute, or is in the future, is ignored (that account starts from
   *   lookback), and the file is copied to `<file>.corrupt-<time>` before the next save overwrites it;
   * - a cursor older than `limits.maxCatchUpMs` is moved up to that limit.
   * - a revisit part of an unknown format (not version 1 of its schema) refuses the file as a whole; one account's
   *   windows that cannot be true (not whole minutes, in the future, older than the catch-up limit, a record that
   *   is not whole 8-byte values or names more series than the account has) are dropped: those minutes keep what
   *   their first read counted, and the file is copied aside as for a bad cursor.
   * - a counter's start that cannot be true (see startProblem) is dropped for that series alone: it keeps its
   *   value and continues without a start (0, none: no `_created`, no `created_timestamp`), one warning says how
   *   many, and the file is copied aside as for a bad cursor. Other problems of an account's counters drop them all.
   * Each problem is logged at error level (the move-up and dropped starts as a warning) and returned.
   */
  async load(limits?: CursorLimits, log?: Logger): Promise<LoadedState> {
    const now = limits?.now ?? Date.now();
    const out: LoadedState = { cursors: new Map(), clamped: new Map(), problems: [], existed: false };
    await this.removeLeftovers(log);
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
      throw new Error(`state_file ${this.path}: ${(err as Error).message}`);
    }
    out.existed = true;
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
    // The revisit and counter parts: a part of an unknown format refuses the file; an account's entry that
    // cannot be used is dropped alone, said, and the file kept aside before it is rewritten.
    const part = <T extends { families: string[]; accounts: Record<string, E> }, E>(
      key: 'revisit' | 'counters',
      schema: z.ZodType,
      problemOf: (entry: E, families: number) => string | undefined,
      what: string,
      dropped: string,
    ): T | undefined => {
      const raw = (parsed as Record<string, unknown>)[key];
      if (raw === undefined) return undefined;
      const result = schema.safeParse(raw);
      if (!result.success) {
        const issue = result.error.issues[0];
        const where = issue?.path.length ? ` at ${key}.${issue.path.join('.')}` : '';
        return wholeFile(`its ${key} part is of an unknown format (${issue?.message}${where})`);
      }
      const checked = result.data as T;
      for (const [account, entry] of Object.entries(checked.accounts)) {
        const problem =
          problemOf(entry, checked.families.length) ??
          (out.cursors.has(account) ? undefined : 'belong to an account without a usable cursor');
        if (problem === undefined) continue;
        bad = true;
        delete checked.accounts[account];
        const line = `state_file ${this.path}: ${what} of account ${JSON.stringify(account)} ${problem}; dropped, ${dropped}`;
        out.problems.push(line);
        log?.error({ file: this.path, account, problem }, line);
      }
      return Object.keys(checked.accounts).length > 0 ? checked : undefined;
    };
    const revisits = part<SavedRevisits, SavedRevisits['accounts'][string]>(
      'revisit',
      revisitsSchema,
      (entry, families) => revisitProblem(entry, families, earliest, latest),
      'revisit windows',
      'those minutes keep what their first read counted',
    );
    if (revisits) out.revisits = revisits;
    const counters = part<SavedCounters, SavedCounters['accounts'][string]>(
      'counters',
      countersSchema,
      countersProblem,
      'counters',
      'its counters start at 0 (a counter reset)',
    );
    if (counters) {
      out.counters = counters;
      const dropped = dropBadStarts(counters, Math.floor(now / 1000));
      if (dropped) {
        bad = true;
        const line =
          `state_file ${this.path}: ${dropped.count} counter start(s) are not Unix seconds from 1970 up to now ` +
          `(the first: account ${JSON.stringify(dropped.account)}, ${dropped.sample}); those series keep their ` +
          'values and continue without a start (no _created, no created_timestamp)';
        out.problems.push(line);
        log?.warn({ file: this.path, starts: dropped.count, account: dropped.account }, line);
      }
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

  /** The same as load (its older name, kept for callers that read the revisit part). */
  loadState(limits?: CursorLimits, log?: Logger): Promise<LoadedState> {
    return this.load(limits, log);
  }

  /**
   * Schedules a write of these cursors and revisit part; returns when this state (or a newer one) is on disk. One
   * write at a time: saves asked for while one is under way collapse into one write, of the latest. `cursors` is
   * read, and `revisits` (when a function) called, only when that write begins, so a live map and a source of the
   * revisit part cost nothing per save: what is written is one snapshot of both, taken at once.
   */
  save(
    cursors: ReadonlyMap<string, number>,
    revisits?: SavedRevisits | (() => SavedRevisits | undefined),
    counters?: SavedCounters,
  ): Promise<void> {
    return this.write(async () => ({
      cursors,
      revisit: typeof revisits === 'function' ? revisits() : revisits,
      counters,
    }));
  }

  /**
   * The same as save, with everything the write holds taken by `take` when the write begins (one write at a time,
   * saves asked for meanwhile collapsing into one write of the latest).
   */
  write(take: () => Promise<WriteAsked>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter = (err?: unknown) => (err === undefined ? resolve() : reject(err));
      if (this.pending) {
        this.pending.take = take;
        this.pending.waiters.push(waiter);
      } else this.pending = { take, waiters: [waiter] };
      if (!this.writing) {
        this.writing = true;
        void this.drain();
      }
    });
  }

  /**
   * Temporary files a killed process left (`<file>.<pid>.tmp`, written and never renamed): removed, each said
   * once. They hold a state newer than the file at most by the write that was cut; the file is what counts.
   */
  private async removeLeftovers(log?: Logger): Promise<void> {
    const folder = dirname(this.path);
    const prefix = `${basename(this.path)}.`;
    let names: string[];
    try {
      names = await readdir(folder);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith(prefix) || !/^\d+\.tmp$/.test(name.slice(prefix.length))) continue;
      if (name === `${prefix}${process.pid}.tmp` && this.writing) continue;
      const leftover = join(folder, name);
      try {
        await unlink(leftover);
        log?.warn(
          { file: leftover },
          `state_file ${this.path}: removed ${leftover}, left by a process that was stopped while writing`,
        );
      } catch {
        // gone already, or not ours to remove: left as it is
      }
    }
  }

  private async drain(): Promise<void> {
    try {
      // Off the caller's stack: a burst of saves within one turn of the event loop is one write.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // Each save resolves once the first write that began after it is on disk, not when the writes stop: saves
      // that keep coming (a scrape every few ms during a catch-up) must not hold every earlier one.
      while (this.pending) {
        const { take, waiters } = this.pending;
        this.pending = undefined;
        try {
          await this.writeOnce(await take());
          for (const w of waiters) w();
        } catch (err) {
          for (const w of waiters) w(err ?? new Error('writing the state file failed'));
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private async writeOnce(asked: WriteAsked): Promise<void> {
    const state: SavedState = { version: 1, cursors: {} };
    for (const [account, ms] of asked.cursors) state.cursors[account] = new Date(ms).toISOString();
    const revisits = asked.revisit;
    if (revisits && Object.keys(revisits.accounts).length > 0) state.revisit = revisits;
    if (asked.counters && Object.keys(asked.counters.accounts).length > 0) state.counters = asked.counters;
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    const file = await open(tmp, 'w');
    try {
      // Written in pieces of about 1 MiB, each an await: the text is made between them, so the event loop
      // (scrapes, answers) is never held for the whole part.
      let piece = '';
      for (const chunk of stateChunks(state)) {
        piece += chunk;
        if (piece.length >= CHUNK) {
          await file.write(piece);
          piece = '';
        }
      }
      if (piece) await file.write(piece);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, this.path);
  }
}

/**
 * The file's text, in pieces: the cursors readable; the revisit part (its records are base64 anyway) on one line,
 * to stay compact, the same text as JSON.stringify would make of it, made a slice of series or a window at a time.
 */
function* stateChunks(state: SavedState): Generator<string> {
  const { revisit, counters, ...cursors } = state;
  const head = JSON.stringify(cursors, null, 2);
  if (!revisit && !counters) {
    yield `${head}\n`;
    return;
  }
  yield head.slice(0, -2);
  if (revisit) yield* revisitChunks(revisit);
  if (counters) yield* counterChunks(counters);
  yield '\n}\n';
}

/** The counter part on one line, a slice of series at a time. */
function* counterChunks(counters: SavedCounters): Generator<string> {
  yield `,\n  "counters": {"version":${JSON.stringify(counters.version)},"families":${JSON.stringify(counters.families)},"accounts":{`;
  let first = true;
  for (const [account, series] of Object.entries(counters.accounts)) {
    yield `${first ? '' : ','}${JSON.stringify(account)}:[`;
    first = false;
    for (let i = 0; i < series.length; i += SERIES_SLICE) {
      yield `${i > 0 ? ',' : ''}${JSON.stringify(series.slice(i, i + SERIES_SLICE)).slice(1, -1)}`;
    }
    yield ']';
  }
  yield '}}';
}

function* revisitChunks(revisit: SavedRevisits): Generator<string> {
  yield `,\n  "revisit": {"version":${JSON.stringify(revisit.version)},"families":${JSON.stringify(revisit.families)},"accounts":{`;
  let first = true;
  for (const [account, part] of Object.entries(revisit.accounts)) {
    yield `${first ? '' : ','}${JSON.stringify(account)}:{"series":[`;
    first = false;
    for (let i = 0; i < part.series.length; i += SERIES_SLICE) {
      yield `${i > 0 ? ',' : ''}${JSON.stringify(part.series.slice(i, i + SERIES_SLICE)).slice(1, -1)}`;
    }
    yield '],"windows":[';
    for (let i = 0; i < part.windows.length; i++) {
      const w = part.windows[i]!;
      yield `${i > 0 ? ',' : ''}${JSON.stringify({ start: w.start, end: w.end, counted: w.counted })}`;
    }
    yield ']}';
  }
  yield '}}';
}
