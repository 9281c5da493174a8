/**
 * Traffic's ledger of what is counted (src/traffic/counting-ledger.ts), on the real series store it is made for
 * (its render lock, src/store/render-lock.ts): every exposition carries the ledger of the windows it shows
 * (docs/architecture.md, "What a scrape has seen"): a window counted between enter() and leave() shows, with its
 * cursor, only once it is whole; an exposition rendered while it is half counted shows the last whole state with
 * the cursors of that state. An account forgotten has no cursor from then on; revisits are numbered 1, 2, ... in
 * the order they are counted, and the number rides along.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { Scrape } from '../helpers/exposition.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const WINDOW = 5 * 60_000;

/** A store with one counter, its ledger, and one window of `account` counted with it (entered and left). */
function setup() {
  const store = new SeriesStore();
  const ledger = new CountingLedger(store);
  const windows = store.family({
    name: 'cdn_metrics_windows_total',
    help: 'Windows.',
    type: 'counter',
    labelNames: ['account'],
  });
  /** Counts a window of `account` ending at `end`; `inside` runs while it is half counted. */
  const countWindow = async (account: string, end: number, inside: () => void = () => {}) => {
    const waiting = ledger.enter();
    if (waiting) await waiting;
    windows.add(windows.slot([account]), 1);
    inside();
    ledger.setCounted(account, end);
    ledger.leave();
  };
  const shown = () => {
    const text = store.render('text').toString();
    return {
      windows: Scrape.of(text).value('cdn_metrics_windows_total', { account: 'acme' }),
      counted: store.countedIn('text'),
    };
  };
  return { store, ledger, countWindow, shown };
}

describe('CountingLedger', () => {
  it('an exposition carries the cursor of the windows it shows, whole windows only', async () => {
    const { ledger, countWindow, shown } = setup();
    await countWindow('acme', T0);
    expect(shown()).toEqual({ windows: 1, counted: new Map([['acme', T0]]) });
    let during: ReturnType<typeof shown> | undefined;
    await countWindow('acme', T0 + WINDOW, () => {
      during = shown();
    });
    // Rendered while the second window was half counted: the first window's values, with its cursor.
    expect(during).toEqual({ windows: 1, counted: new Map([['acme', T0]]) });
    expect(shown()).toEqual({ windows: 2, counted: new Map([['acme', T0 + WINDOW]]) });
    expect(ledger.countedOf('acme')).toBe(T0 + WINDOW);
    expect(ledger.countedOf('beta')).toBeUndefined();
  });

  it("an account forgotten has no cursor in the next exposition; the others' stay", async () => {
    const { ledger, countWindow, shown } = setup();
    await countWindow('acme', T0);
    await countWindow('beta', T0 + WINDOW);
    expect(shown().counted).toEqual(
      new Map([
        ['acme', T0],
        ['beta', T0 + WINDOW],
      ]),
    );
    await countWindow('acme', T0 + WINDOW, () => ledger.forgetCounted('beta'));
    expect(shown().counted).toEqual(new Map([['acme', T0 + WINDOW]]));
    expect(ledger.countedOf('beta')).toBeUndefined();
  });

  it('numbers revisits 1, 2, ... in the order counted; the number rides with the exposition', async () => {
    const { ledger, countWindow, shown } = setup();
    await countWindow('acme', T0);
    expect(shown().counted?.revisitCount).toBe(0);
    let numbers: number[] = [];
    await countWindow('acme', T0 + WINDOW, () => {
      numbers = [ledger.countRevisit(), ledger.countRevisit()];
    });
    expect(numbers).toEqual([1, 2]);
    expect(shown().counted?.revisitCount).toBe(2);
    expect(ledger.now().revisitCount).toBe(2);
  });

  it("what an exposition carries is a copy: later windows do not change an earlier exposition's ledger", async () => {
    const { countWindow, shown } = setup();
    await countWindow('acme', T0);
    const first = shown().counted!;
    await countWindow('acme', T0 + WINDOW);
    expect(first.get('acme')).toBe(T0);
  });

  it('a checkpoint read while no window is half counted gets the ledger of that moment', async () => {
    const { store, countWindow } = setup();
    await countWindow('acme', T0);
    const read = await store.whole((counted) => new Map(counted));
    expect(read).toEqual(new Map([['acme', T0]]));
  });
});
