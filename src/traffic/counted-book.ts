/**
 * CountedBook (late data, `metrics.revisit`: ./revisit.ts): what was counted for each window still awaiting its
 * revisit, per counter series. It sits between TrafficMapping and the counter families (a Family wrapper), so the
 * mapping's hot path is unchanged: while a first read is counted, each add is also written to the window's record;
 * while a revisit is counted, each add becomes `max(0, answer - counted)`. Each counter series of an account has a
 * small dense number (its `cid`), so a window's record is one Float64Array indexed by cid: 8 bytes per counter
 * series per window held.
 */

import type { SavedAccountRevisits } from '../state-file/saved-revisits.js';
import type { Family, Slot } from '../store/types.js';

/** What a revisit found, series by series. */
export interface RevisitOutcome {
  /** Series the revisit added to. */
  up: number;
  /** Series the revisit reported less for than was counted (nothing taken back), missing ones included. */
  down: number;
  /** Edge requests added (cdn_edge_requests_total). */
  edgeRequests: number;
}

interface AccountBook {
  /** Numbers handed out: cids are below this. */
  next: number;
  free: number[];
  /** From the state file: series key (family index and labels after the account) -> cid, until it is created. */
  restored: Map<string, number> | undefined;
  /** The series table as `save` last made it; dropped whenever a number is handed out or freed. */
  saved?: SavedAccountRevisits['series'];
}

type Mode = 'off' | 'record' | 'revisit';

const SEP = '\u0000';

function keyOf(family: number, labels: readonly string[]): string {
  return `${family}${SEP}${labels.slice(1).join(SEP)}`;
}

/** A growable Int32Array filled with -1. */
class SlotMap {
  cids = new Int32Array(64).fill(-1);
  get(slot: Slot): number {
    return slot < this.cids.length ? this.cids[slot]! : -1;
  }
  set(slot: Slot, cid: number): void {
    if (slot >= this.cids.length) {
      let n = this.cids.length;
      while (n <= slot) n *= 2;
      const next = new Int32Array(n).fill(-1);
      next.set(this.cids);
      this.cids = next;
    }
    this.cids[slot] = cid;
  }
  /** Bytes held (4 per slot of the family, once, not per window). */
  get bytes(): number {
    return this.cids.byteLength;
  }
}

export class CountedBook {
  private readonly families: Family[] = [];
  private readonly maps: SlotMap[] = [];
  /** The family objects wrap() handed out, by their index. */
  private readonly wrapped = new Map<Family, number>();
  private readonly accounts = new Map<string, AccountBook>();
  private edgeRequests = -1;
  private mode: Mode = 'off';
  private current: AccountBook | undefined;
  /** record: the window's counts by cid (reused; grows). revisit: what was counted, by cid, NaN once seen. */
  private scratch = new Float64Array(1024);
  private outcome: RevisitOutcome = { up: 0, down: 0, edgeRequests: 0 };

  /**
   * The family to give TrafficMapping in place of `family`: the same series, with adds recorded or turned into
   * differences while a window is counted here. `edgeRequests`: this is cdn_edge_requests_total.
   */
  wrap(family: Family, edgeRequests = false): Family {
    const fi = this.families.length;
    const map = new SlotMap();
    this.families.push(family);
    this.maps.push(map);
    if (edgeRequests) this.edgeRequests = fi;
    const out: Family = {
      spec: family.spec,
      get size() {
        return family.size;
      },
      slot: (labels, startMs) => {
        const slot = family.slot(labels, startMs);
        if (map.get(slot) < 0) map.set(slot, this.number(fi, labels));
        return slot;
      },
      find: (labels) => family.find(labels),
      set: (slot, value) => family.set(slot, value),
      get: (slot) => family.get(slot),
      add: (slot, delta) => {
        if (this.mode === 'off') family.add(slot, delta);
        else this.count(fi, family, map.get(slot), slot, delta);
      },
      delete: (labels) => {
        const slot = family.find(labels);
        if (slot !== undefined) this.release(map, slot, labels[0]!);
        return family.delete(labels);
      },
      deleteWhere: (match) => {
        family.forEach((labels, _v, slot) => {
          if (match(labels)) this.release(map, slot, labels[0]!);
        });
        return family.deleteWhere(match);
      },
      forEach: (fn) => family.forEach(fn),
      startOf: (slot) => family.startOf?.(slot) ?? 0,
    };
    this.wrapped.set(out, fi);
    return out;
  }

  /** The number of a series of a family wrap() handed out; -1: none. */
  cidOf(family: Family, slot: Slot): number {
    const fi = this.wrapped.get(family);
    return fi === undefined ? -1 : this.maps[fi]!.get(slot);
  }

  /**
   * What the revisit being counted has as counted for the series (its windows' records summed); 0 when nothing,
   * when the series has no number, or outside a revisit. Folding reads it to tell where a late part goes.
   */
  counted(family: Family, slot: Slot): number {
    if (this.mode !== 'revisit') return 0;
    const cid = this.cidOf(family, slot);
    const v = cid < 0 ? 0 : this.scratch[cid]!;
    return Number.isNaN(v) ? 0 : v;
  }

  /** Counter series numbered for this account (live ones, freed ones and ones restored and not yet seen again). */
  size(account: string): number {
    return this.accounts.get(account)?.next ?? 0;
  }

  /** Bytes of the slot maps (4 per counter slot; held once, whatever the number of windows). */
  get mapBytes(): number {
    return this.maps.reduce((n, m) => n + m.bytes, 0);
  }

  /** The next window counted is a first read that will be revisited: record what it adds. */
  beginRecord(account: string): void {
    this.mode = 'record';
    this.current = this.book(account);
    this.ensure(this.current.next);
    this.scratch.fill(0, 0, this.current.next);
  }

  /** What the window begun with beginRecord added, by cid. */
  endRecord(): Float64Array {
    const n = this.current?.next ?? 0;
    this.mode = 'off';
    this.current = undefined;
    return this.scratch.slice(0, n);
  }

  /** The next window counted is a revisit of windows whose records are `counted` (summed here). */
  beginRevisit(account: string, counted: readonly Float64Array[]): void {
    this.mode = 'revisit';
    this.current = this.book(account);
    const n = Math.max(this.current.next, ...counted.map((c) => c.length));
    this.ensure(n);
    this.scratch.fill(0, 0, this.scratch.length);
    for (const c of counted) for (let i = 0; i < c.length; i++) this.scratch[i]! += c[i]!;
    this.outcome = { up: 0, down: 0, edgeRequests: 0 };
  }

  /** What the revisit begun with beginRevisit found. Series counted before but missing from it went down. */
  endRevisit(): RevisitOutcome {
    const s = this.scratch;
    for (let i = 0; i < s.length; i++) if (s[i]! > 0) this.outcome.down++;
    this.mode = 'off';
    this.current = undefined;
    return this.outcome;
  }

  /** Ends a window begun here that could not be counted (counting threw). */
  abort(): void {
    this.mode = 'off';
    this.current = undefined;
  }

  /**
   * Every series number of each of `accounts`, with its family and labels, for the state file (one pass over the
   * counter families, whatever the number of accounts).
   */
  save(accounts: readonly string[]): Map<string, SavedAccountRevisits['series']> {
    const out = new Map<string, SavedAccountRevisits['series']>();
    const made = new Map<string, SavedAccountRevisits['series']>();
    for (const account of accounts) {
      const acc = this.accounts.get(account);
      // Unchanged since the last save (the usual case: series come and go far less often than windows): the same
      // table, without the pass over every counter series.
      if (acc?.saved) {
        out.set(account, acc.saved);
        continue;
      }
      const series = this.tableOf(acc);
      out.set(account, series);
      made.set(account, series);
    }
    if (made.size === 0) return out;
    this.families.forEach((family, fi) => {
      const map = this.maps[fi]!;
      family.forEach((labels, _v, slot) => {
        const series = made.get(labels[0]!);
        if (!series) return;
        const cid = map.get(slot);
        if (cid >= 0) series[cid] = [fi, ...labels.slice(1)];
      });
    });
    for (const [account, series] of made) {
      const acc = this.accounts.get(account);
      if (acc) acc.saved = series;
    }
    return out;
  }

  /**
   * One account's series table, as `save` makes it, from the label values of its counter series (`each` calls
   * back with every one of them, as TrafficMapping.eachCounter does): O(its series), not a pass over every family.
   * For an account that stops with windows awaiting a revisit.
   */
  saveOne(
    account: string,
    each: (fn: (family: Family, labelValues: readonly string[]) => void) => void,
  ): SavedAccountRevisits['series'] {
    const acc = this.accounts.get(account);
    if (acc?.saved) return acc.saved;
    const series = this.tableOf(acc);
    const names = this.familyNames();
    each((family, labels) => {
      const fi = names.indexOf(family.spec.name);
      const slot = fi < 0 ? undefined : this.families[fi]!.find(labels);
      const cid = slot === undefined ? -1 : this.maps[fi]!.get(slot);
      if (cid >= 0) series[cid] = [fi, ...labels.slice(1)];
    });
    return series;
  }

  /** An account's table before its live series are filled in: the restored ones not created again yet. */
  private tableOf(acc: AccountBook | undefined): SavedAccountRevisits['series'] {
    const series: SavedAccountRevisits['series'] = new Array(acc?.next ?? 0).fill(null);
    for (const [key, cid] of acc?.restored ?? []) {
      const [fi, ...rest] = key.split(SEP);
      series[cid] = [Number(fi), ...rest];
    }
    return series;
  }

  /** Family names in wrap order (a saved series' family index refers to this list). */
  familyNames(): string[] {
    return this.families.map((f) => f.spec.name);
  }

  /**
   * Numbers the series of a saved state as they were: records read from the state file stay valid. Call before
   * any window of the account is counted. Series of families no longer present are kept out (their counts are
   * read as missing, i.e. a revision down).
   */
  restore(account: string, families: readonly string[], series: SavedAccountRevisits['series']): void {
    const names = this.familyNames();
    const restored = new Map<string, number>();
    series.forEach((s, cid) => {
      if (!s) return;
      const fi = names.indexOf(families[s[0]] ?? '');
      if (fi >= 0) restored.set(`${fi}${SEP}${s.slice(1).join(SEP)}`, cid);
    });
    const free: number[] = [];
    for (let cid = series.length - 1; cid >= 0; cid--) if (!series[cid]) free.push(cid);
    this.accounts.set(account, { next: series.length, free, restored, saved: undefined });
  }

  /** Forgets an account (removed from this shard): its numbers go with its series. */
  forget(account: string): void {
    this.accounts.delete(account);
  }

  private book(account: string): AccountBook {
    let acc = this.accounts.get(account);
    if (!acc) {
      acc = { next: 0, free: [], restored: undefined };
      this.accounts.set(account, acc);
    }
    return acc;
  }

  private number(fi: number, labels: readonly string[]): number {
    const acc = this.book(labels[0]!);
    acc.saved = undefined;
    if (acc.restored) {
      const key = keyOf(fi, labels);
      const cid = acc.restored.get(key);
      if (cid !== undefined) {
        acc.restored.delete(key);
        return cid;
      }
    }
    const cid = acc.free.pop() ?? acc.next++;
    if (this.current === acc) {
      // A new series: nothing was counted for it in any window held, and the scratch may hold another account's.
      this.ensure(acc.next);
      this.scratch[cid] = 0;
    }
    return cid;
  }

  /**
   * A counter series was deleted. Its number is free again at once: TrafficMapping deletes counters only of
   * resources not seen since before the oldest window awaiting a revisit (MappingOptions.keepSeenSince, ./mapping-base.ts), so no
   * record held has a count under it.
   */
  private release(map: SlotMap, slot: Slot, account: string): void {
    const cid = map.get(slot);
    if (cid < 0) return;
    map.set(slot, -1);
    const acc = this.accounts.get(account);
    if (!acc) return;
    acc.free.push(cid);
    acc.saved = undefined;
  }

  private ensure(n: number): void {
    if (n <= this.scratch.length) return;
    let len = this.scratch.length;
    while (len < n) len *= 2;
    const next = new Float64Array(len);
    next.set(this.scratch);
    this.scratch = next;
  }

  private count(fi: number, family: Family, cid: number, slot: Slot, n: number): void {
    if (cid < 0) {
      family.add(slot, n);
      return;
    }
    const s = this.scratch;
    if (this.mode === 'record') {
      family.add(slot, n);
      s[cid]! += n;
      return;
    }
    const counted = s[cid]!;
    s[cid] = Number.NaN;
    if (Number.isNaN(counted)) return;
    if (n > counted) {
      family.add(slot, n - counted);
      this.outcome.up++;
      if (fi === this.edgeRequests) this.outcome.edgeRequests += n - counted;
    } else if (n < counted) this.outcome.down++;
  }
}
