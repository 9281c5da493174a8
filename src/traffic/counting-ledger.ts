/**
 * Traffic's ledger of what is counted: each account's counted cursor (every window before it is in the store's
 * values, none after it) and the number of revisits of late data counted (numbered 1, 2, ... in the order they are
 * counted). It is kept inside the series store's render lock (src/store/render-lock.ts: enter before a window
 * begins, leave once it is whole), and the store reads it (`counted`) each time it renders from a whole state, so
 * every exposition carries the ledger of the windows it shows (CountedCursors): what the exporter may save as seen
 * once those bytes are served (docs/architecture.md, "What a scrape has seen").
 */
import type { CountedCursors } from '../store/types.js';

/** What the ledger needs of the store: its render lock, and where it reads the ledger at each whole render. */
export interface WholeRenders {
  /** Undefined: the window may begin now (entered). Otherwise resolves once it is entered. */
  enter(): Promise<void> | undefined;
  leave(): void;
  /** Read at each render from a whole state (no window half counted); the ledger sets it. */
  counted: () => CountedCursors;
}

/**
 * Where the applier (./applier.ts) counts windows whole and keeps its ledger: a window is counted between `enter`
 * and `leave`, and its account's cursor set inside them.
 */
export interface CountingLock {
  /** Undefined: the window may begin now (entered). Otherwise resolves once it is entered. */
  enter(): Promise<void> | undefined;
  leave(): void;
  /** Every window of `account` before `cursor` is counted in the values (called inside enter/leave, in order). */
  setCounted(account: string, cursor: number): void;
  /** `account` is no longer counted (its series were removed): expositions carry no cursor for it (inside enter/leave). */
  forgetCounted(account: string): void;
  /** Where `account`'s counted windows end now (inside enter/leave); undefined: none counted. */
  countedOf?(account: string): number | undefined;
  /** A revisit of late data is counted in the values (inside enter/leave); returns its number (1, 2, ...). */
  countRevisit?(): number;
}

/** The ledger on the store's render lock: every exposition the store renders from now on carries it. */
export class CountingLedger implements CountingLock {
  /** Counted cursors now (set by the applier inside enter/leave). */
  readonly #counted = new Map<string, number>();
  /** Revisits of late data counted so far. */
  #revisitCount = 0;

  constructor(private readonly store: WholeRenders) {
    store.counted = () => this.now();
  }

  enter(): Promise<void> | undefined {
    return this.store.enter();
  }

  leave(): void {
    this.store.leave();
  }

  setCounted(account: string, cursor: number): void {
    this.#counted.set(account, cursor);
  }

  forgetCounted(account: string): void {
    this.#counted.delete(account);
  }

  countedOf(account: string): number | undefined {
    return this.#counted.get(account);
  }

  countRevisit(): number {
    return ++this.#revisitCount;
  }

  /** The counted cursors now, with the number of revisits counted (an exposition's `counted`). */
  now(): CountedCursors {
    return Object.assign(new Map(this.#counted), { revisitCount: this.#revisitCount });
  }
}
