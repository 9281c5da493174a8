/**
 * Keeps rendering and sliced counting apart, so every exposition holds whole windows only: a window is counted in
 * slices across turns of the event loop (src/traffic/applier.ts), and a render in between would show part of it.
 * The applier enters before it begins a window and leaves when the window is counted (and its cursor set); a
 * refresh or a checkpoint reads (beginRead/endRead, `whole`) only while no window is half counted, and holds the
 * next one back meanwhile.
 *
 * What an exposition carries of the windows it shows (CountedCursors) is read from `counted` at each render from
 * a whole state: traffic's ledger sets it (src/traffic/counting-ledger.ts). Also here, because it follows the same
 * windows: the store's announcement of a change (`onChange`, then a refresh) once per turn, or once the window being
 * counted is whole.
 */
import type { Logger } from '../log.js';
import type { CountedCursors } from './types.js';

export abstract class RenderLock {
  /**
   * What an exposition rendered now carries (read only while no window is half counted): the counted cursors and
   * revisits of traffic's ledger (src/traffic/counting-ledger.ts), which sets it; without one, none.
   */
  counted: () => CountedCursors = () => Object.assign(new Map<string, number>(), { revisitCount: 0 });
  /** Windows being counted (entered, not left). */
  protected writers = 0;
  /** A refresh renders family bodies: no window may begin. */
  private reading = false;
  private readonly writerWaiters: (() => void)[] = [];
  private readonly readerWaiters: (() => void)[] = [];
  /** A family changed since the last announcement (see `touched`). */
  private changeSeen = false;
  /** An announcement is queued for the next turn. */
  private announcing = false;

  /**
   * Told once per change of the store, on the turn after it (a window counted, a DVR or recordings round written,
   * an account's series removed), just before the refresh that change brings: where the exporter gives memory
   * back after a shrink and saves the ranking of top resources.
   */
  onChange: (() => void) | undefined;

  /** `refreshLog`: the store refreshes itself after a change, and logs a failed refresh here. */
  constructor(private readonly refreshLog: Pick<Logger, 'error'> | undefined) {}

  /** Re-renders what changed (SeriesStore.refresh). */
  abstract refresh(): Promise<void>;

  /**
   * A family changed. Outside a window being counted the change is announced on the next turn; inside one, when
   * the window is whole (leave): a refresh in the middle of a window would wait for it anyway.
   */
  protected readonly touched = (): void => {
    if (this.changeSeen || (this.refreshLog === undefined && this.onChange === undefined)) return;
    this.changeSeen = true;
    if (this.writers === 0) this.announceSoon();
  };

  private announceSoon(): void {
    if (this.announcing) return;
    this.announcing = true;
    setImmediate(() => {
      this.announcing = false;
      this.changeSeen = false;
      this.onChange?.();
      const log = this.refreshLog;
      if (log) this.refresh().catch((err: unknown) => log.error({ err }, 'rebuilding /metrics text failed'));
    });
  }

  enter(): Promise<void> | undefined {
    if (!this.reading && this.readerWaiters.length === 0) {
      this.writers++;
      return undefined;
    }
    return new Promise((resolve) =>
      this.writerWaiters.push(() => {
        this.writers++;
        resolve();
      }),
    );
  }

  leave(): void {
    if (this.writers === 1 && this.changeSeen) this.announceSoon();
    this.writers = Math.max(0, this.writers - 1);
    // Handed over at once: the applier goes on to its next window in the same turn.
    if (this.writers === 0 && this.readerWaiters.length > 0) {
      this.reading = true;
      this.readerWaiters.shift()!();
    }
  }

  /**
   * Runs `read` once no window is half counted, with the counted cursors of that moment; no window begins until
   * it returns (a checkpoint of the counting state: src/state-file/cursor-book.ts).
   */
  async whole<T>(read: (counted: CountedCursors) => T): Promise<T> {
    const waiting = this.beginRead();
    if (waiting) await waiting;
    try {
      return read(this.counted());
    } finally {
      this.endRead();
    }
  }

  /** Undefined: reading now. Otherwise resolves once reading (no window half counted). */
  protected beginRead(): Promise<void> | undefined {
    if (this.writers === 0 && !this.reading) {
      this.reading = true;
      return undefined;
    }
    return new Promise((resolve) => this.readerWaiters.push(resolve));
  }

  protected endRead(): void {
    this.reading = false;
    if (this.readerWaiters.length > 0 && this.writers === 0) {
      this.reading = true;
      this.readerWaiters.shift()!();
      return;
    }
    for (const w of this.writerWaiters.splice(0)) w();
  }
}
