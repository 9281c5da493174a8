/**
 * The counted book (src/traffic/counted-book.ts), as the revisit reads use it (src/traffic/revisit-reads.ts): the
 * counter families TrafficMapping writes are wrapped, and through them a first read that will be revisited records
 * what it added per series, and a revisit of those windows adds only what the answer has beyond that record, never
 * less (a revision down is counted, not taken back). Series numbers are dense per account, reused once their
 * series is deleted, and saved and restored (the state file's revisit part) so that records read back from disk
 * still line up with their series in the next process.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family } from '../../src/store/types.js';
import { CountedBook } from '../../src/traffic/counted-book.js';

const REQUESTS = {
  name: 'cdn_edge_requests_total',
  help: 'h',
  type: 'counter',
  labelNames: ['account', 'resource'],
} as const;
const BYTES = {
  name: 'cdn_edge_bytes_total',
  help: 'h',
  type: 'counter',
  labelNames: ['account', 'resource'],
} as const;

/** A store with two counter families, wrapped by a book: requests as cdn_edge_requests_total. */
function setup() {
  const store = new SeriesStore();
  const book = new CountedBook();
  const requests = book.wrap(store.family(REQUESTS), true);
  const bytes = book.wrap(store.family(BYTES));
  return { store, book, requests, bytes };
}

/** What one window adds: family, account, resource, amount. */
type Add = [Family, string, string, number];
const apply = (adds: Add[]) => {
  for (const [family, account, resource, n] of adds) family.add(family.slot([account, resource]), n);
};
const value = (family: Family, account: string, resource: string) => {
  const slot = family.find([account, resource]);
  return slot === undefined ? undefined : family.get(slot);
};

describe('the counted book', () => {
  it('lets adds through unchanged outside a window it counts', () => {
    const { requests } = setup();
    apply([
      [requests, 'acme', 'r1', 5],
      [requests, 'acme', 'r1', 2],
    ]);
    expect(value(requests, 'acme', 'r1')).toBe(7);
  });

  it('records what a first read adds, per series, while adding it', () => {
    const { book, requests, bytes } = setup();
    book.beginRecord('acme');
    apply([
      [requests, 'acme', 'r1', 10],
      [requests, 'acme', 'r2', 4],
      [bytes, 'acme', 'r1', 1000],
      [requests, 'acme', 'r1', 1],
    ]);
    const record = book.endRecord();
    expect(value(requests, 'acme', 'r1')).toBe(11);
    expect(value(bytes, 'acme', 'r1')).toBe(1000);
    // One number per series of the account, the record indexed by it.
    const cid = (f: Family, r: string) => book.cidOf(f, f.find(['acme', r])!);
    expect(book.size('acme')).toBe(3);
    expect(record[cid(requests, 'r1')]).toBe(11);
    expect(record[cid(requests, 'r2')]).toBe(4);
    expect(record[cid(bytes, 'r1')]).toBe(1000);
  });

  it('adds on a revisit only what the answer has beyond the windows counted, and takes nothing back', () => {
    const { book, requests, bytes } = setup();
    book.beginRecord('acme');
    apply([
      [requests, 'acme', 'r1', 10],
      [requests, 'acme', 'r2', 4],
      [bytes, 'acme', 'r1', 1000],
    ]);
    const first = book.endRecord();
    book.beginRecord('acme');
    apply([[requests, 'acme', 'r1', 5]]);
    const second = book.endRecord();

    // Both windows revisited in one answer: r1 has 18 of the 15 counted, r2 3 of 4, bytes r1 is missing, r3 is new.
    book.beginRevisit('acme', [first, second]);
    expect(book.counted(requests, requests.find(['acme', 'r1'])!)).toBe(15);
    apply([
      [requests, 'acme', 'r1', 18],
      [requests, 'acme', 'r2', 3],
      [requests, 'acme', 'r3', 7],
    ]);
    const outcome = book.endRevisit();

    expect(value(requests, 'acme', 'r1')).toBe(18);
    expect(value(requests, 'acme', 'r2')).toBe(4);
    expect(value(requests, 'acme', 'r3')).toBe(7);
    expect(value(bytes, 'acme', 'r1')).toBe(1000);
    // Up: r1 and r3. Down: r2 (less) and bytes r1 (missing from the revisit).
    expect(outcome).toEqual({ up: 2, down: 2, edgeRequests: 3 + 7 });
    // Outside a revisit, nothing is counted for a series.
    expect(book.counted(requests, requests.find(['acme', 'r1'])!)).toBe(0);
  });

  it('keeps accounts apart: a revisit of one account is measured against its own record only', () => {
    const { book, requests } = setup();
    book.beginRecord('acme');
    apply([[requests, 'acme', 'r1', 10]]);
    const acme = book.endRecord();
    book.beginRecord('other');
    apply([[requests, 'other', 'r1', 50]]);
    book.endRecord();

    book.beginRevisit('acme', [acme]);
    apply([[requests, 'acme', 'r1', 12]]);
    expect(book.endRevisit()).toEqual({ up: 1, down: 0, edgeRequests: 2 });
    expect(value(requests, 'acme', 'r1')).toBe(12);
    expect(value(requests, 'other', 'r1')).toBe(50);
    expect([book.size('acme'), book.size('other')]).toEqual([1, 1]);
  });

  it('counts again a window whose counting was aborted: the next adds pass through', () => {
    const { book, requests } = setup();
    book.beginRecord('acme');
    apply([[requests, 'acme', 'r1', 10]]);
    book.abort();
    apply([[requests, 'acme', 'r1', 1]]);
    expect(value(requests, 'acme', 'r1')).toBe(11);
  });

  it('gives a deleted series number to the next new series, so the numbers stay dense', () => {
    const { book, requests } = setup();
    apply([
      [requests, 'acme', 'r1', 1],
      [requests, 'acme', 'r2', 1],
    ]);
    const freed = book.cidOf(requests, requests.find(['acme', 'r1'])!);
    expect(requests.delete(['acme', 'r1'])).toBe(true);
    apply([[requests, 'acme', 'r3', 1]]);
    expect(book.cidOf(requests, requests.find(['acme', 'r3'])!)).toBe(freed);
    expect(book.size('acme')).toBe(2);

    requests.deleteWhere((labels) => labels[1] === 'r2');
    apply([[requests, 'acme', 'r4', 1]]);
    expect(book.size('acme')).toBe(2);
  });

  it('saves its numbering, and a book restored from it measures a revisit against the records saved with it', () => {
    const a = setup();
    apply([[a.requests, 'acme', 'r0', 1]]);
    a.book.beginRecord('acme');
    apply([
      [a.bytes, 'acme', 'r1', 1000],
      [a.requests, 'acme', 'r1', 10],
      [a.requests, 'acme', 'r2', 4],
    ]);
    const record = a.book.endRecord();
    // r0 goes before the save: the saved numbering has a hole, which the restored book hands out again.
    a.requests.delete(['acme', 'r0']);
    const saved = a.book.save(['acme']).get('acme')!;
    const families = a.book.familyNames();
    expect(families).toEqual([REQUESTS.name, BYTES.name]);
    expect(saved.filter((s) => s !== null)).toHaveLength(3);
    // Asked again with nothing changed: the same table.
    expect(a.book.save(['acme']).get('acme')).toBe(saved);

    // The next process: its series start where the state file's counters left them, created in another order.
    const b = setup();
    b.book.restore('acme', families, saved);
    apply([
      [b.requests, 'acme', 'r2', 4],
      [b.requests, 'acme', 'r1', 10],
      [b.bytes, 'acme', 'r1', 1000],
    ]);
    b.book.beginRevisit('acme', [record]);
    apply([
      [b.requests, 'acme', 'r1', 13],
      [b.requests, 'acme', 'r2', 4],
      [b.bytes, 'acme', 'r1', 1000],
    ]);
    expect(b.book.endRevisit()).toEqual({ up: 1, down: 0, edgeRequests: 3 });
    expect(value(b.requests, 'acme', 'r1')).toBe(13);
    expect(value(b.requests, 'acme', 'r2')).toBe(4);
    expect(value(b.bytes, 'acme', 'r1')).toBe(1000);
    // The hole is handed out before a new number.
    apply([[b.requests, 'acme', 'r9', 1]]);
    expect(b.book.size('acme')).toBe(saved.length);
  });

  it('saves one stopping account from its own series (saveOne) as save does, and forgets an account removed', () => {
    const { book, requests, bytes } = setup();
    apply([
      [requests, 'acme', 'r1', 1],
      [bytes, 'acme', 'r1', 1],
      [requests, 'other', 'r1', 1],
    ]);
    const one = book.saveOne('acme', (fn) => {
      for (const family of [requests, bytes]) {
        family.forEach((labels) => {
          if (labels[0] === 'acme') fn(family, labels);
        });
      }
    });
    expect(one).toEqual(book.save(['acme']).get('acme'));
    expect(one).toEqual([
      [0, 'r1'],
      [1, 'r1'],
    ]);
    book.forget('acme');
    expect(book.size('acme')).toBe(0);
    expect(book.size('other')).toBe(1);
  });
});
