/**
 * The state file's counter part (./state-file.ts stores it, ./checks.ts checks it on load): the traffic counters'
 * values at the saved cursors, so a restart continues them; and what is kept of them in memory for accounts not
 * polled here (another shard's, or one stopped at run time and not back yet).
 */
import type { Logger } from '../log.js';
import type { Family } from '../store/types.js';

/**
 * The counter part of the state file. Per account, each series as [family index, value, start (created timestamp,
 * Unix seconds; 0: none), ...label values after the account].
 */
export interface SavedCounters {
  version: 1;
  families: string[];
  accounts: Record<string, Array<[number, number, number, ...string[]]>>;
}

/** One account's counter series in the file. */
export type SavedCounterRows = SavedCounters['accounts'][string];

/** Sets one counter series to its saved value and start; false: the series is no longer configured. */
export type RestoreCounter = (
  family: Family,
  labels: readonly string[],
  value: number,
  startMs: number,
) => boolean;

/** Calls `fn` for every counter series an account has (TrafficMapping.eachCounter). */
export type EachCounter = (fn: (family: Family, labelValues: readonly string[]) => void) => void;

/** A series' start as the file holds it: whole Unix seconds, 0 for none. */
function startSecondsIn(family: Family, slot: number): number {
  return Math.floor((family.startOf?.(slot) ?? 0) / 1000);
}

/**
 * The counter part as loaded, until each account's poller takes its series (`continueAccount`), and what is kept
 * for accounts not polled here. `families` is every counter family whose series the file holds.
 */
export class CounterKeep {
  private loaded: SavedCounters | undefined;

  constructor(private readonly families: () => readonly Family[]) {}

  /** Takes the counter part of the state file (before any poller is made). */
  restore(saved: SavedCounters | undefined): void {
    this.loaded = saved;
  }

  /**
   * The account's counters start where the state file left them, at its saved cursor: a restart continues them.
   * A series of a family this version does not have, or with other labels, is left out (logged once).
   */
  continueAccount(account: string, restore: RestoreCounter, log: Logger): void {
    const saved = this.loaded;
    const series = saved?.accounts[account];
    if (!saved || !series) return;
    delete saved.accounts[account];
    const byName = new Map(this.families().map((f) => [f.spec.name, f]));
    let left = 0;
    let off = 0;
    for (const [fi, value, startSeconds, ...labels] of series) {
      const family = byName.get(saved.families[fi] ?? '');
      if (!family || labels.length + 1 !== family.spec.labelNames.length) {
        left++;
        continue;
      }
      // Its start too: a created timestamp moved to the restart would be a zero (a reset) for Prometheus'
      // created-timestamp zero ingestion, under a value that goes on.
      if (!restore(family, [account, ...labels], value, startSeconds * 1000)) off++;
    }
    if (left > 0)
      log.warn(
        { series: left },
        'state_file: saved counters of families or labels this version does not have; they start at 0',
      );
    if (off > 0)
      log.info(
        { series: off },
        'state_file: saved counters of metrics, status codes or resources no longer configured are left out',
      );
  }

  /**
   * The counter part of the state file: every counter series' value now (call it with no window half counted,
   * SeriesStore.whole), and the kept part of accounts not polled here (`polled`: the accounts with a poller).
   */
  save(polled: ReadonlySet<string>): SavedCounters {
    const families = this.families();
    const names = families.map((f) => f.spec.name);
    const out: SavedCounters = { version: 1, families: names, accounts: {} };
    const loaded = this.loaded;
    if (loaded) {
      for (const [account, series] of Object.entries(loaded.accounts)) {
        if (polled.has(account)) continue;
        out.accounts[account] = series.flatMap(([fi, value, start, ...labels]) => {
          const at = names.indexOf(loaded.families[fi] ?? '');
          return at < 0 ? [] : [[at, value, start, ...labels] as [number, number, number, ...string[]]];
        });
      }
    }
    families.forEach((family, fi) => {
      family.forEach((labels, value, slot) => {
        const account = labels[0]!;
        let list = out.accounts[account];
        if (!list) {
          list = [];
          out.accounts[account] = list;
        }
        list.push([fi, value, startSecondsIn(family, slot), ...labels.slice(1)]);
      });
    });
    return out;
  }

  /** The account's counter series now, where save() and continueAccount() find them (its series are going). */
  keep(account: string, each: EachCounter): void {
    this.loaded ??= { version: 1, families: this.families().map((f) => f.spec.name), accounts: {} };
    const saved = this.loaded;
    const rows: SavedCounterRows = [];
    each((family, labels) => {
      const slot = family.find(labels);
      if (slot === undefined) return;
      let fi = saved.families.indexOf(family.spec.name);
      if (fi < 0) fi = saved.families.push(family.spec.name) - 1;
      rows.push([fi, family.get(slot), startSecondsIn(family, slot), ...labels.slice(1)]);
    });
    if (rows.length > 0) saved.accounts[account] = rows;
    else delete saved.accounts[account];
  }

  /** What was kept for the account goes (it was away longer than metrics.counter_retention). */
  forget(account: string): void {
    if (this.loaded) delete this.loaded.accounts[account];
  }
}
