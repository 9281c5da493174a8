/**
 * The state file tied to the counting state: what the traffic pipeline takes from the loaded file, and the
 * checkpoints the cursor book (./cursor-book.ts) writes. Every write is one moment of the counting state: cursors,
 * counters, revisits pending. It is copied when the exposition's bodies are rendered from that moment (the
 * store's `settled`), so a scrape never waits for a window being counted: what it serves is that moment or an older
 * one, never newer than the copy.
 */
import type { CountedCursors } from '../store/types.js';
import type { Checkpoint, CursorBook } from './cursor-book.js';
import type { SavedCounters } from './saved-counters.js';
import type { SavedRevisits } from './saved-revisits.js';

/** Where the counting state is read whole (the series store: SeriesStore.whole and `settled`). */
export interface WholeMoments {
  settled: ((counted: CountedCursors) => void) | undefined;
  whole<T>(read: (counted: CountedCursors) => T): Promise<T>;
}

/** The traffic pipeline, as far as the state file is concerned (src/traffic/pipeline.ts). */
export interface SavedTraffic {
  /** Set with revisit on: what was counted for each window awaiting its revisit. */
  readonly book: object | undefined;
  shownCursor: (account: string) => number;
  restoreRevisits(saved: SavedRevisits | undefined, now: number): void;
  restoreCounters(saved: SavedCounters | undefined): void;
  savedRevisits(cursors?: ReadonlyMap<string, number>, revisitCount?: number): SavedRevisits | undefined;
  revisitsShown(revisitCount: number): void;
  savedCounters(): SavedCounters;
}

export interface StateFileTies {
  store: WholeMoments;
  traffic: SavedTraffic;
  /** Loaded already: its revisit part restores the windows awaiting a revisit, its counter part the counters. */
  cursors: Pick<CursorBook, 'loadedRevisits' | 'loadedCounters' | 'shown' | 'revisits' | 'checkpoints'>;
  now: number;
  /** A state file is configured: checkpoints are copied for it. */
  stateFile?: boolean;
}

/** Gives the pipeline what the file held, and the cursor book its checkpoints (before any poller is made). */
export function tieStateFile(d: StateFileTies): void {
  const { store, traffic, cursors } = d;
  traffic.restoreRevisits(cursors.loadedRevisits, d.now);
  // After the revisit part: a restored series takes its saved number (CountedBook.restore) when it is made.
  traffic.restoreCounters(cursors.loadedCounters);
  if (traffic.book) {
    traffic.shownCursor = (account) => cursors.shown(account);
    cursors.revisits = {
      part: (saved, revisitCount) => traffic.savedRevisits(saved, revisitCount),
      shown: (revisitCount) => traffic.revisitsShown(revisitCount),
    };
  }
  if (!d.stateFile) return;
  let latest: Checkpoint | undefined;
  const take = (counted: CountedCursors): Checkpoint => {
    const revisitCount = counted.revisitCount ?? 0;
    return {
      cursors: counted,
      revisitCount,
      revisit: traffic.savedRevisits(counted, revisitCount),
      counters: traffic.savedCounters(),
    };
  };
  store.settled = (counted) => {
    latest = take(counted);
  };
  cursors.checkpoints = {
    take: async () => latest ?? (await store.whole(take)),
    // Kept as the newest too: a write of `take` queued behind this one (a scrape's) then holds this state or a
    // newer one, so the file never goes back to an older state, and a stop's last checkpoint stays the last.
    now: () => store.whole((counted) => (latest = take(counted))),
  };
}
