/**
 * The revisit part of the state file as the pipeline keeps it (src/state-file/revisit-keep.ts): windows read from
 * the file handed once to their account's queue, the part written with each checkpoint holding only what the
 * exposition it goes with shows (docs/architecture.md, "What a scrape has seen"), revisits counted but not shown yet
 * still listed as pending, and what is kept of an account stopped at run time or polled by another shard.
 *
 * The series numbering (NumberedSeries, src/traffic/counted-book.ts in the exporter) is a fake that hands out the
 * tables it was given: what is checked here is where the windows go, not how series are numbered.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type KeptWindow, type NumberedSeries, RevisitKeep } from '../../src/state-file/revisit-keep.js';
import {
  decodeCounted,
  encodeCounted,
  type SavedAccountRevisits,
  type SavedRevisits,
} from '../../src/state-file/saved-revisits.js';
import type { Family } from '../../src/store/types.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const FAMILIES = ['cdn_edge_requests_total', 'cdn_edge_responses_total'];

type Table = SavedAccountRevisits['series'];

class FakeBook implements NumberedSeries {
  families = [...FAMILIES];
  /** Per account, the table save() gives. */
  readonly tables = new Map<string, Table>();
  readonly restored: { account: string; families: readonly string[]; series: Table }[] = [];
  familyNames(): string[] {
    return [...this.families];
  }
  save(accounts: readonly string[]): Map<string, Table> {
    return new Map(accounts.map((a) => [a, this.tables.get(a) ?? []]));
  }
  restore(account: string, families: readonly string[], series: Table): void {
    this.restored.push({ account, families, series });
  }
  saveOne(
    _account: string,
    each: (fn: (family: Family, labelValues: readonly string[]) => void) => void,
  ): Table {
    const rows: Table = [];
    each((family, labels) => rows.push([this.families.indexOf(family.spec.name), ...labels.slice(1)]));
    return rows;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
const win = (startMin: number, endMin: number, counted: number[]): KeptWindow => ({
  start: T + startMin * MINUTE,
  end: T + endMin * MINUTE,
  counted: Float64Array.from(counted),
  countedAt: T,
});
/** A window as the file holds it. */
const filed = (w: KeptWindow) => ({
  start: iso(w.start),
  end: iso(w.end),
  counted: encodeCounted(w.counted),
});
const queue = (...pending: KeptWindow[]) => ({ pending });

function fileWith(accounts: Record<string, SavedAccountRevisits>, families = FAMILIES): SavedRevisits {
  return { version: 1, families, accounts };
}

describe('revisit part: read from the state file', () => {
  it("numbers each account's series as saved and hands its windows to its queue once, records as counted", () => {
    const book = new FakeBook();
    const keep = new RevisitKeep(book);
    const w1 = win(0, 5, [10, 2]);
    const w2 = win(5, 10, [0, 7.5]);
    const acme: SavedAccountRevisits = {
      series: [[0, 'r1'], null, [1, 'r1', '200']],
      windows: [filed(w1), filed(w2)],
    };
    keep.restore(fileWith({ acme }), T + 20 * MINUTE);
    expect(book.restored).toEqual([{ account: 'acme', families: FAMILIES, series: acme.series }]);
    const taken = keep.take('acme');
    expect(taken.map((w) => [w.start, w.end, [...w.counted], w.countedAt])).toEqual([
      [w1.start, w1.end, [10, 2], T + 20 * MINUTE],
      [w2.start, w2.end, [0, 7.5], T + 20 * MINUTE],
    ]);
    expect(keep.take('acme')).toEqual([]);
    expect(keep.take('never')).toEqual([]);
  });

  it('keeps an account nobody polls here (another shard) in every save as it was loaded', () => {
    const book = new FakeBook();
    const keep = new RevisitKeep(book);
    const other: SavedAccountRevisits = { series: [[0, 'x']], windows: [filed(win(0, 5, [3]))] };
    keep.restore(fileWith({ other }), T);
    expect(keep.save(new Map()).accounts).toEqual({ other });
    // Polled here after all: its part comes from its queue, no longer from the file.
    expect(keep.save(new Map([['other', queue()]])).accounts).toEqual({});
  });

  it("carries no part of another version's families: their series numbers would point elsewhere", () => {
    const book = new FakeBook();
    const keep = new RevisitKeep(book);
    keep.restore(
      fileWith({ other: { series: [[0, 'x']], windows: [filed(win(0, 5, [3]))] } }, ['cdn_edge_gone_total']),
      T,
    );
    const saved = keep.save(new Map());
    expect(saved.families).toEqual(FAMILIES);
    expect(saved.accounts).toEqual({});
  });
});

describe('revisit part: written with a checkpoint', () => {
  it("lists every polled account's pending windows in start order, with its series table", () => {
    const book = new FakeBook();
    book.tables.set('acme', [[0, 'r1']]);
    const keep = new RevisitKeep(book);
    const late = win(5, 10, [4]);
    const early = win(0, 5, [6]);
    const saved = keep.save(
      new Map([
        ['acme', queue(late, early)],
        ['idle', queue()],
      ]),
    );
    expect(saved).toEqual({
      version: 1,
      families: FAMILIES,
      accounts: { acme: { series: [[0, 'r1']], windows: [filed(early), filed(late)] } },
    });
    expect([...decodeCounted(saved.accounts.acme!.windows[1]!.counted)]).toEqual([4]);
  });

  it("leaves out a window whose first read the exposition lacks: past the account's cursor, or no cursor at all", () => {
    const keep = new RevisitKeep(new FakeBook());
    const shown = win(0, 5, [1]);
    const atCursor = win(5, 10, [2]);
    const notShown = win(10, 15, [3]);
    const saved = keep.save(
      new Map([
        ['acme', queue(shown, atCursor, notShown)],
        ['fresh', queue(win(0, 5, [9]))],
      ]),
      new Map([['acme', T + 10 * MINUTE]]),
      0,
    );
    // A restart reads the left-out window from scratch, at the cursor the file holds.
    expect(Object.keys(saved.accounts)).toEqual(['acme']);
    expect(saved.accounts.acme!.windows).toEqual([filed(shown), filed(atCursor)]);
  });

  it('lists a revisit the exposition does not include yet as pending, with what its first read counted, until shown', () => {
    const keep = new RevisitKeep(new FakeBook());
    const cursors = new Map([['acme', T + 30 * MINUTE]]);
    const first = win(0, 5, [10]);
    const second = win(5, 10, [20]);
    const pendingStill = win(10, 15, [30]);
    const queues = new Map([['acme', queue(pendingStill)]]);
    // Revisits 1 and 2 were counted (their windows left the queue).
    keep.revisitCounted('acme', 1, [first]);
    keep.revisitCounted('acme', 2, [second]);
    const windowsOf = (revisitCount: number) =>
      keep.save(queues, cursors, revisitCount).accounts.acme!.windows.map((w) => Date.parse(w.start));

    // An exposition with none of them: both are still pending in its state file.
    expect(windowsOf(0)).toEqual([first.start, second.start, pendingStill.start]);
    expect(keep.save(queues, cursors, 0).accounts.acme!.windows[0]).toEqual(filed(first));
    // One with the first: only the second is.
    expect(windowsOf(1)).toEqual([second.start, pendingStill.start]);
    // A scrape was given an exposition with both: no later file lists them.
    keep.shown(2);
    expect(windowsOf(0)).toEqual([pendingStill.start]);
  });

  it('drops what was held of a revisit for an account not polled any more', () => {
    const keep = new RevisitKeep(new FakeBook());
    keep.revisitCounted('acme', 1, [win(0, 5, [1])]);
    expect(keep.save(new Map(), new Map([['acme', T + 5 * MINUTE]]), 0).accounts).toEqual({});
  });
});

describe('revisit part: an account stopped at run time', () => {
  const requests = { spec: { name: 'cdn_edge_requests_total' } } as Family;
  const each = (fn: (family: Family, labelValues: readonly string[]) => void) => fn(requests, ['acme', 'r1']);

  it('is kept where save() and its return find it, numbered as it was, until forgotten', () => {
    const book = new FakeBook();
    const keep = new RevisitKeep(book);
    const a = win(5, 10, [2]);
    const b = win(0, 5, [1]);
    keep.keep('acme', [a, b], each);
    const part = { series: [[0, 'r1']], windows: [filed(b), filed(a)] };
    expect(keep.save(new Map()).accounts).toEqual({ acme: part });

    // It comes back: its windows wait for its queue again, its series numbered as kept.
    keep.returning('acme', T + 30 * MINUTE);
    keep.returning('acme', T + 31 * MINUTE);
    expect(book.restored).toEqual([{ account: 'acme', families: FAMILIES, series: part.series }]);
    expect(keep.take('acme').map((w) => [w.start, [...w.counted]])).toEqual([
      [b.start, [1]],
      [a.start, [2]],
    ]);

    keep.forget('acme');
    expect(keep.save(new Map()).accounts).toEqual({});
    keep.returning('acme', T + 40 * MINUTE);
    expect(keep.take('acme')).toEqual([]);
  });

  it('keeps nothing when nothing was pending, and replaces what was kept before', () => {
    const keep = new RevisitKeep(new FakeBook());
    keep.keep('acme', [win(0, 5, [1])], each);
    keep.keep('acme', [], each);
    expect(keep.save(new Map()).accounts).toEqual({});
  });

  it('leave() lets go of everything held for the account: windows from the file, revisits, the kept part', () => {
    const keep = new RevisitKeep(new FakeBook());
    keep.restore(fileWith({ acme: { series: [], windows: [filed(win(0, 5, []))] } }), T);
    keep.revisitCounted('acme', 1, [win(5, 10, [])]);
    keep.leave('acme');
    expect(keep.take('acme')).toEqual([]);
    expect(keep.save(new Map([['acme', queue()]]), new Map([['acme', T + 60 * MINUTE]]), 0).accounts).toEqual(
      {},
    );
    expect(keep.save(new Map()).accounts).toEqual({});
  });
});
