/**
 * The state file tied to the counting state (src/state-file/checkpoints.ts): the pipeline is given what the file
 * held (revisits first, then counters), and the cursor book's checkpoints are copies of one whole moment: taken when
 * the store renders its bodies from a state with no window half counted, so what a scrape is served and what the
 * file then holds go together, and a scrape never waits for a window being counted. The store is the real series
 * store (its render lock); the pipeline and the cursor book are fakes of the narrow interfaces declared there.
 */
import { describe, expect, it } from 'vitest';
import { type SavedTraffic, type StateFileTies, tieStateFile } from '../../src/state-file/checkpoints.js';
import type { Checkpoint, CheckpointSource, RevisitSource } from '../../src/state-file/cursor-book.js';
import type { SavedCounters } from '../../src/state-file/saved-counters.js';
import type { SavedRevisits } from '../../src/state-file/saved-revisits.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { CountedCursors } from '../../src/store/types.js';
import { settle } from '../helpers/fake-clock.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const MINUTE = 60_000;

const LOADED_REVISITS: SavedRevisits = { version: 1, families: ['f_total'], accounts: {} };
const LOADED_COUNTERS: SavedCounters = {
  version: 1,
  families: ['f_total'],
  accounts: { acme: [[0, 5, 0, 'r']] },
};

/** The pipeline as the state file sees it: its counter value now, and what it was asked. */
class FakeTraffic implements SavedTraffic {
  book: object | undefined;
  value = 0;
  readonly calls: string[] = [];
  readonly shownRevisits: number[] = [];
  shownCursor = (_account: string) => Number.NEGATIVE_INFINITY;
  constructor(revisit: boolean) {
    this.book = revisit ? {} : undefined;
  }
  restoreRevisits(saved: SavedRevisits | undefined, now: number): void {
    this.calls.push(`revisits ${saved === LOADED_REVISITS} ${now}`);
  }
  restoreCounters(saved: SavedCounters | undefined): void {
    this.calls.push(`counters ${saved === LOADED_COUNTERS}`);
  }
  savedRevisits(cursors?: ReadonlyMap<string, number>, revisitCount?: number): SavedRevisits {
    return { version: 1, families: [`at ${cursors?.get('acme')} #${revisitCount}`], accounts: {} };
  }
  revisitsShown(revisitCount: number): void {
    this.shownRevisits.push(revisitCount);
  }
  savedCounters(): SavedCounters {
    return { version: 1, families: ['f_total'], accounts: { acme: [[0, this.value, 0, 'r']] } };
  }
}

/** The cursor book's side: what it loaded, and the sources tieStateFile gives it (its setters, kept in `given`). */
class FakeBook {
  readonly loadedRevisits = LOADED_REVISITS;
  readonly loadedCounters = LOADED_COUNTERS;
  readonly given: { revisits?: RevisitSource; checkpoints?: CheckpointSource } = {};
  shown(account: string): number {
    return account === 'acme' ? T : Number.NEGATIVE_INFINITY;
  }
  set revisits(source: RevisitSource) {
    this.given.revisits = source;
  }
  set checkpoints(source: CheckpointSource) {
    this.given.checkpoints = source;
  }
}

/** A store whose counted cursors the test moves, as traffic's ledger does. */
function store() {
  const s = new SeriesStore({ clock: { now: () => T } });
  const counted = new Map<string, number>();
  let revisitCount = 0;
  s.counted = (): CountedCursors => Object.assign(new Map(counted), { revisitCount });
  const family = s.family({ name: 'f_total', help: 'F.', type: 'counter', labelNames: ['r'] });
  return {
    s,
    /** A window of acme counted up to `cursor`, with `revisits` counted in all. */
    count(cursor: number, revisits = revisitCount) {
      counted.set('acme', cursor);
      revisitCount = revisits;
      family.add(family.slot(['r']), 1);
    },
  };
}

const value = (c: Checkpoint) => c.counters?.accounts.acme?.[0]?.[1];

function tie(o: { revisit: boolean; stateFile: boolean }) {
  const st = store();
  const traffic = new FakeTraffic(o.revisit);
  const cursors = new FakeBook();
  const ties: StateFileTies = { store: st.s, traffic, cursors, now: T + 5 * MINUTE, stateFile: o.stateFile };
  tieStateFile(ties);
  return { ...st, traffic, cursors };
}

describe('tieStateFile: what the file held', () => {
  it('restores the revisit part first (a restored series takes its saved number), then the counters', () => {
    const { traffic } = tie({ revisit: true, stateFile: true });
    expect(traffic.calls).toEqual([`revisits true ${T + 5 * MINUTE}`, 'counters true']);
  });

  it("with revisits on: the pipeline reads the book's shown cursors, the book the pipeline's revisit part", () => {
    const { traffic, cursors } = tie({ revisit: true, stateFile: false });
    expect(traffic.shownCursor('acme')).toBe(T);
    expect(cursors.given.revisits?.part(new Map([['acme', T]]), 3)?.families).toEqual([`at ${T} #3`]);
    cursors.given.revisits?.shown(4);
    expect(traffic.shownRevisits).toEqual([4]);
  });

  it('with revisits off: the book is given no revisit part', () => {
    const { traffic, cursors } = tie({ revisit: false, stateFile: true });
    expect(cursors.given.revisits).toBeUndefined();
    expect(traffic.shownCursor('acme')).toBe(Number.NEGATIVE_INFINITY);
  });

  it('without state_file: no checkpoints, and the store copies nothing at its renders', () => {
    const { s, cursors } = tie({ revisit: true, stateFile: false });
    expect(cursors.given.checkpoints).toBeUndefined();
    expect(s.settled).toBeUndefined();
  });
});

describe('tieStateFile: checkpoints of one whole moment', () => {
  it('take() gives the moment the last whole render showed, not the state counted since', async () => {
    const { s, traffic, cursors, count } = tie({ revisit: true, stateFile: true });
    traffic.value = 10;
    count(T, 1);
    // A scraper asks for text: the render it waits for copies the checkpoint of its moment.
    await s.prepare('text');
    s.render('text');
    const served = s.countedIn('text');
    expect(served?.get('acme')).toBe(T);
    // Counted after that render, not rendered yet.
    traffic.value = 11;
    count(T + MINUTE, 2);
    const c = await cursors.given.checkpoints!.take();
    expect(c.cursors).toEqual(served);
    expect(c.cursors.get('acme')).toBe(T);
    expect(c.revisitCount).toBe(1);
    expect(value(c)).toBe(10);
    expect(c.revisit?.families).toEqual([`at ${T} #1`]);
  });

  it("take() does not wait for a window being counted: it gives the last whole render's moment", async () => {
    const { s, traffic, cursors, count } = tie({ revisit: false, stateFile: true });
    traffic.value = 10;
    count(T);
    await s.refresh();
    expect(s.enter()).toBeUndefined();
    traffic.value = 12;
    count(T + MINUTE);
    let taken: Checkpoint | undefined;
    void cursors.given.checkpoints!.take().then((c) => (taken = c));
    await settle();
    expect(taken && value(taken)).toBe(10);
    s.leave();
  });

  it('take() before any render waits for a whole moment; now() too, and what now() took is the newest for take()', async () => {
    const { s, traffic, cursors, count } = tie({ revisit: false, stateFile: true });
    expect(s.enter()).toBeUndefined();
    traffic.value = 3;
    count(T);
    let first: Checkpoint | undefined;
    let atNow: Checkpoint | undefined;
    void cursors.given.checkpoints!.take().then((c) => (first = c));
    void cursors.given.checkpoints!.now().then((c) => (atNow = c));
    await settle();
    // A window is half counted: neither may copy it.
    expect(first).toBeUndefined();
    expect(atNow).toBeUndefined();
    traffic.value = 4;
    count(T + MINUTE);
    s.leave();
    for (let i = 0; i < 20 && !(first && atNow); i++) await settle();
    expect(first && value(first)).toBe(4);
    expect(atNow && value(atNow)).toBe(4);
    expect(atNow?.cursors.get('acme')).toBe(T + MINUTE);

    // A stop's last checkpoint stays the newest: a scrape's write queued behind it holds this state or a newer one.
    traffic.value = 5;
    count(T + 2 * MINUTE);
    const now = await cursors.given.checkpoints!.now();
    expect(value(now)).toBe(5);
    expect(value(await cursors.given.checkpoints!.take())).toBe(5);
  });
});
