/**
 * The cursor book: per account, the cursor a restart resumes at, kept in the optional state file (`state_file`).
 *
 * The rule (docs/metrics.md, "How traffic is counted"): the state file is a checkpoint of the counting state taken while no
 * window is half counted: each account's counted cursor, the traffic counters' values at that cursor, and the
 * windows awaiting a revisit. A restart resumes from it: its counters start at the saved values (they continue,
 * they do not reset) and its walk at the saved cursors. A scrape hands the counted cursors of the exposition it is
 * about to send to `commit`, which returns once a checkpoint at least that new is on disk; only then do the bytes
 * leave. So whatever a scraper saw, the next process's counters start at or above it and add exactly what the
 * windows after the checkpoint hold: nothing lost, nothing twice, and no reset that a scraper could miss (a
 * counter coming back after a crash at or above its old value, after a reset, would hide everything counted
 * before it from rate() and increase()).
 *
 * The state file itself (its format, checks on load, atomic writes) is ./state-file.ts.
 */
import { type Clock, systemClock } from '../clock.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { CountedCursors } from '../store/types.js';
import type { SavedCounters } from './saved-counters.js';
import type { SavedRevisits } from './saved-revisits.js';
import { type CursorLimits, type LoadedState, StateFile } from './state-file.js';

/**
 * The revisit part's owner (the traffic pipeline). `part` gives the part that goes with an exposition of these
 * counted cursors and revisit number (nothing it does not show); `shown` says a scrape was given an exposition with
 * revisits up to that number (every later write is for it or a newer one).
 */
export interface RevisitSource {
  part(cursors: ReadonlyMap<string, number>, revisitCount: number): SavedRevisits | undefined;
  shown(revisitCount: number): void;
}

/** What a write takes from the counting state at once, with no window half counted (./checkpoints.ts). */
export interface Checkpoint {
  /** Every polled account's counted cursor. */
  cursors: ReadonlyMap<string, number>;
  /** Revisits counted (CountingLedger.countRevisit): the checkpoint holds every one up to this number. */
  revisitCount: number;
  revisit?: SavedRevisits;
  counters?: SavedCounters;
}

/** The counting state's owner (the traffic pipeline): `take` resolves once no window is half counted. */
export interface CheckpointSource {
  /**
   * The checkpoint of the newest exposition rendered (at least as new as any a scrape was given). It may be
   * older than one `now` gave before; the book copes (CursorBook.checkpoint), a source need not.
   */
  take(): Promise<Checkpoint>;
  /** The counting state now, once no window is half counted (after a change no exposition shows yet). */
  now(): Promise<Checkpoint>;
}

/**
 * The least time between two writes asked for by the revisit part alone (CursorBook.touch). The part is rewritten
 * in full (tens of MB at 1M series), and it changes with every window read or revisit of every account.
 */
export const REVISIT_SAVE_GAP_MS = 10_000;

/**
 * Cursors by account. `load` reads the state file once; `commit` saves the cursors a scrape is about to show; `close`
 * waits for saves in progress. Only a loaded book saves: after a failed start nothing overwrites the cursors on
 * disk. Cursors of accounts this replica does not poll now (another shard's, a removed one) are kept on save.
 *
 * The revisit part (metrics.revisit) is written with every commit, and a change of it alone (`touch`) at most once
 * per `revisitGapMs`; every write takes the revisit part as it is when the write begins (StateFile.save).
 */
export class CursorBook {
  /** On disk (as far as this process knows). */
  private readonly durable = new Map<string, number>();
  /** Asked to be saved: durable, or newer and being (or failed to be) saved. Never moves back. */
  private readonly wanted = new Map<string, number>();
  /** Accounts stopped in this process: the cursor their kept counters go with (see `leave`). */
  private readonly left = new Map<string, number>();
  private readonly file: StateFile | undefined;
  private readonly saving = new Set<Promise<void>>();
  private loaded = false;
  /** The revisit part as loaded; then, once `revisits` is set, what it returns. */
  private savedRevisits: SavedRevisits | undefined;
  private revisitSource: RevisitSource | undefined;
  private checkpointSource: CheckpointSource | undefined;
  /** The counter part as loaded: written as it is until a checkpoint source takes over. */
  private savedCounters: SavedCounters | undefined;
  /** Revisits counted in the newest exposition a scrape was given (wanted), and in the state on disk (durable). */
  private wantedRevisitCount = 0;
  private durableRevisitCount = 0;
  /** When a write was last asked for (this clock), and the wait of a revisit-only write, if one is held back. */
  private lastSave = Number.NEGATIVE_INFINITY;
  private held: AbortController | undefined;
  /**
   * A write of the state now (`now`: a stop, a revisit change, an account stopped) is asked for and not begun.
   * Writes asked for meanwhile collapse into one (StateFile.write), which must then still take the state now,
   * not the last exposition a scrape asked with: that one may predate the change the first write was for.
   */
  private nowAsked = false;

  constructor(
    path: string | undefined,
    private readonly log: Logger,
    /** A save failed (it is logged; the bytes are still served). */
    private readonly saveFailed: () => void = () => {},
    private readonly clock: Clock = systemClock,
    private readonly revisitGapMs = REVISIT_SAVE_GAP_MS,
  ) {
    this.file = path ? new StateFile(path) : undefined;
  }

  /**
   * Reads the state file (none configured: an empty book), its cursors checked against `limits` (StateFile.load).
   * Throws when the file cannot be used as a whole; returns what was found wrong with single cursors (logged).
   */
  async load(limits?: CursorLimits): Promise<LoadedState> {
    const loaded: LoadedState = this.file
      ? await this.file.load(limits, this.log)
      : { cursors: new Map<string, number>(), clamped: new Map(), problems: [], existed: false };
    this.loaded = true;
    this.savedCounters = loaded.counters;
    for (const [account, cursor] of loaded.cursors) {
      this.durable.set(account, cursor);
      this.wanted.set(account, cursor);
    }
    this.savedRevisits = loaded.revisits;
    return loaded;
  }

  /**
   * With no state file found at load: writes an empty one before the first request, so the next process knows
   * that this one ran, even if it is killed before its first checkpoint (RequestGate.spentAt). A failure is logged
   * and counted; the start goes on.
   */
  async claim(existed: boolean): Promise<void> {
    if (!this.file || existed) return;
    await this.file.save(new Map()).catch((err: unknown) => {
      this.saveFailed();
      this.log.error({ err: describeError(err) }, 'saving state_file failed');
    });
  }

  /** The windows awaiting a revisit as the state file had them (metrics.revisit); undefined: none. */
  get loadedRevisits(): SavedRevisits | undefined {
    return this.savedRevisits;
  }

  /** Where each save takes the revisit part from (the traffic pipeline). */
  set revisits(source: RevisitSource) {
    this.revisitSource = source;
  }

  /** The counter part as the state file had it; undefined: none. */
  get loadedCounters(): SavedCounters | undefined {
    return this.savedCounters;
  }

  /**
   * Where each write takes its checkpoint from (the traffic pipeline): from then on a write holds the counting
   * state as it is when the write begins (cursors, counters and revisit part of one moment), not the cursors of
   * the exposition that asked for it. A checkpoint is never older than what a scrape was given.
   */
  set checkpoints(source: CheckpointSource) {
    this.checkpointSource = source;
  }

  /**
   * The revisit part changed: saved with the cursors as they are, at most once per `revisitGapMs` (a write asked
   * for meanwhile, by a cursor or by close, takes this change with it).
   */
  touch(): void {
    if (!this.file || !this.loaded || this.held) return;
    const wait = this.lastSave + this.revisitGapMs - this.clock.now();
    if (wait <= 0) {
      this.save();
      return;
    }
    const held = new AbortController();
    this.held = held;
    this.clock.sleep(wait, held.signal).then(
      () => {
        if (this.held === held) this.save();
      },
      () => undefined, // a save took it with it
    );
  }

  /** The account's cursor in the newest exposition a scrape was given (saved or being saved); -Infinity: none. */
  shown(account: string): number {
    return this.wanted.get(account) ?? Number.NEGATIVE_INFINITY;
  }

  /** Where the account's walk resumes; undefined: start at now - lookback. */
  get(account: string): number | undefined {
    return this.left.get(account) ?? this.durable.get(account);
  }

  /**
   * The account stopped (discovery no longer lists it) at `cursor`, the end of what it counted, with the counter
   * values kept for it (TrafficPipeline.removeAccount, which calls this in the same step): if it comes back in
   * this process it resumes there, and the next write saves that cursor with those values. Undefined: it had
   * counted nothing; it resumes where it would have. Writes nothing itself (`touch` does).
   */
  leave(account: string, cursor: number | undefined): void {
    if (cursor === undefined) return;
    this.left.set(account, cursor);
    if (cursor > (this.wanted.get(account) ?? Number.NEGATIVE_INFINITY)) this.wanted.set(account, cursor);
  }

  /**
   * The account is gone for good (TrafficPipeline.forgetAway): its cursor leaves the book, and the state file
   * with the next write (`touch` asks for one).
   */
  forget(account: string): void {
    this.left.delete(account);
    this.wanted.delete(account);
    this.durable.delete(account);
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
    // A revisit's late part shown for the first time: its window must be on disk as done before the bytes leave.
    const revisitCount = counted.revisitCount ?? 0;
    if ((this.revisitSource || this.checkpointSource) && revisitCount > this.durableRevisitCount)
      newer = true;
    if (revisitCount > this.wantedRevisitCount) {
      this.wantedRevisitCount = revisitCount;
      this.revisitSource?.shown(revisitCount);
    }
    for (const [account, cursor] of counted) {
      if (cursor > (this.durable.get(account) ?? Number.NEGATIVE_INFINITY)) newer = true;
      if (cursor > (this.wanted.get(account) ?? Number.NEGATIVE_INFINITY)) this.wanted.set(account, cursor);
    }
    if (!newer) return Promise.resolve();
    if (this.checkpointSource)
      return this.checkpoint(
        false,
        'saving state_file failed: a crash now would count the windows since the last good save twice',
      );
    const snapshot = new Map(this.wanted);
    const snapshotRevisitCount = this.wantedRevisitCount;
    this.release();
    this.lastSave = this.clock.now();
    const p = this.file
      .save(snapshot, () => this.revisitPart(snapshot, snapshotRevisitCount), this.savedCounters)
      .then(
        () => {
          if (snapshotRevisitCount > this.durableRevisitCount)
            this.durableRevisitCount = snapshotRevisitCount;
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

  /**
   * Waits for the saves in progress, after one last checkpoint: everything counted is kept, the next process
   * continues from it.
   */
  async close(): Promise<void> {
    this.release();
    if (this.file && this.loaded && this.checkpointSource)
      void this.checkpoint(true, 'saving state_file failed');
    // The revisit part as it stands, with the cursors scrapes were given: nothing counted is added by a stop.
    else if (this.file && this.loaded && this.revisitSource) this.save();
    await Promise.all([...this.saving]);
  }

  /**
   * Writes a checkpoint taken when the write begins (CheckpointSource.take); resolves once it is on disk (a failed
   * write is logged with `failed` and counted; it resolves all the same).
   */
  private checkpoint(live: boolean, failed: string): Promise<void> {
    const file = this.file!;
    const source = this.checkpointSource!;
    this.release();
    this.lastSave = this.clock.now();
    let taken: Checkpoint | undefined;
    let cursors = new Map<string, number>();
    if (live) this.nowAsked = true;
    const p = file
      .write(async () => {
        const now = this.nowAsked;
        this.nowAsked = false;
        taken = await (now ? source.now() : source.take());
        // Accounts not polled now (another shard's, a removed one) keep what the file had.
        cursors = new Map(this.wanted);
        for (const [account, cursor] of taken.cursors) cursors.set(account, cursor);
        return { cursors, revisit: taken.revisit, counters: taken.counters };
      })
      .then(
        () => {
          // Undefined: a newer write took this one's place (StateFile.write) and updates the book itself.
          const t = taken;
          if (!t) return;
          // What this write holds is what is on disk now, even where it is older than a write before it: a
          // checkpoint of the state now (`now`, from a close or a revisit change) may be followed by one of an
          // older exposition (`take`, for a scrape that asked while the first was being written). Keeping the
          // newer cursors here would let a scrape of that newer state go out with no write, and a crash then
          // would restart the counters below what it showed: a drop every scraper reads as a reset.
          this.durableRevisitCount = t.revisitCount;
          for (const [account, cursor] of cursors) this.durable.set(account, cursor);
        },
        (err: unknown) => {
          this.saveFailed();
          this.log.error({ err: describeError(err) }, failed);
        },
      );
    this.saving.add(p);
    void p.finally(() => this.saving.delete(p));
    return p;
  }

  /** A revisit-only write (touch): the cursors a scrape was given, the revisit part as it stands. */
  private save(): void {
    if (!this.file || !this.loaded) return;
    if (this.checkpointSource) {
      void this.checkpoint(true, 'saving state_file failed');
      return;
    }
    this.release();
    this.lastSave = this.clock.now();
    const snapshot = new Map(this.wanted);
    const snapshotRevisitCount = this.wantedRevisitCount;
    const p = this.file
      .save(snapshot, () => this.revisitPart(snapshot, snapshotRevisitCount), this.savedCounters)
      .then(
        () => undefined,
        (err: unknown) => {
          this.saveFailed();
          this.log.error({ err: describeError(err) }, 'saving state_file failed');
        },
      );
    this.saving.add(p);
    void p.finally(() => this.saving.delete(p));
  }

  /** A write is asked for: a revisit-only write held back is no longer needed. */
  private release(): void {
    const held = this.held;
    this.held = undefined;
    held?.abort();
  }

  /** Before the pipeline took over: what was loaded, kept as it was (a failed start must not lose it). */
  private revisitPart(cursors: ReadonlyMap<string, number>, revisitCount: number): SavedRevisits | undefined {
    return this.revisitSource ? this.revisitSource.part(cursors, revisitCount) : this.savedRevisits;
  }
}
