/**
 * The state file's revisit part as the traffic pipeline keeps it (metrics.revisit): the windows awaiting a revisit
 * read from the file until each account's queue takes them, the part written with each checkpoint (only what the
 * exposition it goes with shows), the revisits counted but not shown yet, and what is kept for an account stopped
 * at run time. The part's format and codec: ./saved-revisits.ts.
 */
import type { Family } from '../store/types.js';
import {
  decodeCounted,
  encodeCounted,
  type SavedAccountRevisits,
  type SavedRevisits,
} from './saved-revisits.js';

/** A window awaiting its revisit (src/traffic/revisit.ts, PendingWindow), as far as the file is concerned. */
export interface KeptWindow {
  start: number;
  end: number;
  /** What its first read counted, by the book's series numbers. */
  counted: Float64Array;
  /** When it was counted (ms). */
  countedAt: number;
  /** `counted` as the state file holds it (encodeCounted), made once, on the first save that needs it. */
  encoded?: string;
}

/** The numbering of the series the windows' records refer to (src/traffic/counted-book.ts, CountedBook). */
export interface NumberedSeries {
  familyNames(): string[];
  save(accounts: readonly string[]): Map<string, SavedAccountRevisits['series']>;
  restore(account: string, families: readonly string[], series: SavedAccountRevisits['series']): void;
  saveOne(
    account: string,
    each: (fn: (family: Family, labelValues: readonly string[]) => void) => void,
  ): SavedAccountRevisits['series'];
}

/** A window awaiting a revisit as the state file holds it; its record is encoded once, however often it is saved. */
function savedWindow(w: KeptWindow): SavedAccountRevisits['windows'][number] {
  w.encoded ??= encodeCounted(w.counted);
  return { start: new Date(w.start).toISOString(), end: new Date(w.end).toISOString(), counted: w.encoded };
}

export class RevisitKeep {
  /** Windows read from the state file, until the account's queue takes them. */
  private readonly restored = new Map<string, KeptWindow[]>();
  /**
   * The revisit part as loaded: kept on save for accounts this replica does not poll (another shard's, or one
   * stopped at run time: `keep`).
   */
  private loaded: SavedRevisits | undefined;
  /**
   * Revisits counted (and gone from their queue) with their number (CountingLedger.countRevisit), until an exposition
   * that includes them is given to a scrape (`shown`): a state file for an older exposition still lists their
   * windows as pending, with what their first read counted, so a restart revisits the late part that exposition
   * lacked.
   */
  private unsaved: { account: string; n: number; windows: readonly KeptWindow[] }[] = [];

  constructor(private readonly book: NumberedSeries) {}

  /** Takes the windows awaiting a revisit from the state file (before any poller is made). */
  restore(saved: SavedRevisits | undefined, now: number): void {
    if (!saved) return;
    this.loaded = saved;
    for (const [account, a] of Object.entries(saved.accounts)) this.restoreAccount(account, a, now);
  }

  /** The account is polled (again): what was kept for it is numbered as it was, for its queue to take. */
  returning(account: string, now: number): void {
    const kept = this.loaded?.accounts[account];
    if (kept && !this.restored.has(account)) this.restoreAccount(account, kept, now);
  }

  /** The account's windows from the file, handed to its queue once. */
  take(account: string): KeptWindow[] {
    const windows = this.restored.get(account) ?? [];
    this.restored.delete(account);
    return windows;
  }

  private restoreAccount(account: string, a: SavedAccountRevisits, now: number): void {
    this.book.restore(account, this.loaded!.families, a.series);
    this.restored.set(
      account,
      a.windows.map((w) => ({
        start: Date.parse(w.start),
        end: Date.parse(w.end),
        counted: decodeCounted(w.counted),
        encoded: w.counted,
        countedAt: now,
      })),
    );
  }

  /**
   * The revisit part of the state file: every account's windows awaiting a revisit (`queues`: the polled
   * accounts' pending windows), and the kept part of the others.
   *
   * Given the counted cursors and revisit number of an exposition (what a scrape was given), it is the part that
   * goes with that exposition and nothing newer: a window whose first read that exposition does not include (its
   * end past the account's cursor; no cursor: none of the account's) is left out, a restart reads it from scratch;
   * a window whose revisit the exposition does not include is listed as pending, with what its first read counted.
   */
  save(
    queues: ReadonlyMap<string, { readonly pending: readonly KeptWindow[] }>,
    cursors?: ReadonlyMap<string, number>,
    revisitCount?: number,
  ): SavedRevisits {
    const book = this.book;
    const out: SavedRevisits = { version: 1, families: book.familyNames(), accounts: {} };
    const loaded = this.loaded;
    if (loaded && loaded.families.join() === out.families.join()) {
      for (const [account, a] of Object.entries(loaded.accounts))
        if (!queues.has(account)) out.accounts[account] = a;
    }
    const shown = (account: string, w: KeptWindow) =>
      cursors === undefined || w.end <= (cursors.get(account) ?? Number.NEGATIVE_INFINITY);
    const byAccount = new Map<string, KeptWindow[]>();
    for (const [account, queue] of queues) {
      const ws = queue.pending.filter((w) => shown(account, w));
      if (ws.length > 0) byAccount.set(account, ws);
    }
    if (revisitCount !== undefined) {
      for (const r of this.unsaved) {
        if (r.n <= revisitCount || !queues.has(r.account)) continue;
        const ws = byAccount.get(r.account) ?? [];
        ws.push(...r.windows.filter((w) => shown(r.account, w)));
        if (ws.length > 0) byAccount.set(r.account, ws);
      }
    }
    const series = book.save([...byAccount.keys()]);
    for (const [account, windows] of byAccount) {
      windows.sort((a, b) => a.start - b.start);
      out.accounts[account] = {
        series: series.get(account)!,
        windows: windows.map(savedWindow),
      };
    }
    return out;
  }

  /** A revisit numbered `n` was counted over `windows` whose first read a scrape was already given. */
  revisitCounted(account: string, n: number, windows: readonly KeptWindow[]): void {
    this.unsaved.push({ account, n, windows });
  }

  /**
   * A scrape was given an exposition that includes revisits up to number `revisitCount`: no later write of the state
   * file is for an older one, so they are held no more.
   */
  shown(revisitCount: number): void {
    this.unsaved = this.unsaved.filter((r) => r.n > revisitCount);
  }

  /** The account is no longer polled: what was held for it from the file or its revisits goes (see keep). */
  leave(account: string): void {
    this.restored.delete(account);
    this.unsaved = this.unsaved.filter((r) => r.account !== account);
    this.forget(account);
  }

  /**
   * The account's windows awaiting a revisit, with the numbers of the series their records refer to, where save()
   * (the state file) and a return (`returning`) find them, as for an account loaded from the file. `each`: the
   * account's counter series (its series are going).
   */
  keep(
    account: string,
    pending: readonly KeptWindow[],
    each: (fn: (family: Family, labelValues: readonly string[]) => void) => void,
  ): void {
    const book = this.book;
    this.forget(account);
    if (pending.length === 0) return;
    const families = book.familyNames();
    // A part of another version (other families) is not carried by save() anyway.
    if (this.loaded?.families.join() !== families.join())
      this.loaded = { version: 1, families, accounts: {} };
    this.loaded.accounts[account] = {
      series: book.saveOne(account, each),
      windows: [...pending].sort((a, b) => a.start - b.start).map(savedWindow),
    };
  }

  /** What was kept for the account goes. */
  forget(account: string): void {
    if (this.loaded) delete this.loaded.accounts[account];
  }
}
