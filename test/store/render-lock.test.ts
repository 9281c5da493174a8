/**
 * The render lock (src/store/render-lock.ts): its promise is that no exposition shows a half-counted window. A
 * window counted in slices across turns of the event loop (as src/traffic/applier.ts does) is in every exposition
 * whole or not at all, and each exposition carries the counted cursors of the state it shows; a checkpoint
 * (`whole`) reads only between windows, and holds the next one back while it reads. Also here: the store's
 * announcement of a change, once per turn, or once the window being counted is whole.
 *
 * The store is the real series store (the lock's one subclass); for the announcement's failure path a bare subclass
 * whose refresh fails stands in for it.
 */
import { describe, expect, it } from 'vitest';
import { RenderLock } from '../../src/store/render-lock.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { CountedCursors, ExpositionFormat, Family } from '../../src/store/types.js';
import { settle } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const MINUTE = 60_000;
const SERIES = 600;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A store refreshing itself (small render slices, so refreshes span turns), with the ledger's cursor of acme. */
function countingStore() {
  const { log, lines } = captureLog();
  const store = new SeriesStore({ clock: { now: () => T }, refreshLog: log, chunkSize: 50 });
  const counted = new Map<string, number>();
  store.counted = () => Object.assign(new Map(counted), { revisitCount: 0 });
  const family = store.family({ name: 'w_total', help: 'W.', type: 'counter', labelNames: ['r'] });
  const slots = Array.from({ length: SERIES }, (_, i) => family.slot([`r${i}`], T));
  /**
   * Window `k` (ending at T + k minutes): adds 1 to every series, a slice per turn, inside the lock, then sets the
   * cursor, as the applier and traffic's ledger do. A half-counted window shows as series of unequal values.
   */
  const state = { halfCounted: false };
  const countWindow = async (k: number, slice: number) => {
    const waiting = store.enter();
    if (waiting) await waiting;
    state.halfCounted = true;
    for (let i = 0; i < SERIES; i += slice) {
      for (let j = i; j < Math.min(SERIES, i + slice); j++) family.add(slots[j]!, 1);
      await nextTurn();
    }
    counted.set('acme', T + k * MINUTE);
    state.halfCounted = false;
    store.leave();
  };
  return { store, family, counted, countWindow, state, lines };
}

/** Values of a text exposition's series. */
function values(text: string): number[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('w_total{'))
    .map((l) => Number(l.split(' ')[1]));
}

/** Windows counted in an exposition, from its cursor (none: 0). */
const windowsIn = (c: CountedCursors | undefined) => {
  const cursor = c?.get('acme');
  return cursor === undefined ? 0 : (cursor - T) / MINUTE;
};

describe('render lock: no exposition shows a half-counted window', () => {
  it('shows every window whole or not at all, with the cursors of the state it shows, at every turn', async () => {
    const { store, countWindow, state, lines } = countingStore();
    await store.prepare('text');
    await store.prepare('openmetrics');
    const windows = 6;
    let done = false;
    const counting = (async () => {
      for (let k = 1; k <= windows; k++) await countWindow(k, 1 + ((k * 37) % 250));
      done = true;
    })();
    let midWindow = 0;
    for (let turn = 0; turn < 100_000 && !done; turn++) {
      for (const format of ['text', 'openmetrics'] as ExpositionFormat[]) {
        const body = (turn % 3 === 0 ? store.renderGzip(format) : store.render(format)).length;
        expect(body).toBeGreaterThan(0);
      }
      const text = store.render('text').toString();
      const v = values(text);
      const n = windowsIn(store.countedIn('text'));
      expect(v).toHaveLength(SERIES);
      // Whole windows only: every series counted every window the exposition says it holds.
      expect(new Set(v), `turn ${turn}`).toEqual(new Set([n]));
      if (state.halfCounted) midWindow++;
      await nextTurn();
    }
    await counting;
    // A refresh after the last window: while one runs, the last complete buffers are served.
    await store.refresh();
    expect(values(store.render('text').toString())).toEqual(new Array(SERIES).fill(windows));
    expect(windowsIn(store.countedIn('text'))).toBe(windows);
    // Not vacuous: scrapes came while windows were half counted (each takes at least three turns).
    expect(midWindow).toBeGreaterThanOrEqual(windows);
    expect(lines.filter((l) => l.includes('failed'))).toEqual([]);
  });

  it("serves the last whole exposition while a window is counted, and the next format's first build waits for it", async () => {
    const { store, family } = countingStore();
    await store.prepare('text');
    const before = store.render('text');
    expect(store.enter()).toBeUndefined();
    family.add(0, 5);
    // Mid-window: the text already built is what is served, unchanged.
    expect(store.render('text')).toBe(before);
    // A format never built cannot be built from half a window.
    expect(() => store.render('protobuf')).toThrow(
      'the protobuf exposition is not built while a window is counted: await prepare() first',
    );
    const building = store.prepare('protobuf');
    let built = false;
    void building?.then(() => (built = true));
    await settle();
    expect(built).toBe(false);
    store.leave();
    await building;
    expect(built).toBe(true);
    expect(store.render('text')).not.toBe(before);
  });
});

describe('render lock: whole()', () => {
  it('reads at once with no window being counted, with the counted cursors of that moment', async () => {
    const { store } = countingStore();
    const counted = await store.whole((c) => c);
    expect(windowsIn(counted)).toBe(0);
  });

  it('waits for the window being counted, then holds the next one back until it returns', async () => {
    const { store, family, counted, countWindow } = countingStore();
    expect(store.enter()).toBeUndefined();
    family.add(0, 1);
    const order: string[] = [];
    const reading = store.whole((c) => {
      order.push(`read ${windowsIn(c)} ${family.get(0)}`);
      return 'checkpoint';
    });
    await settle();
    expect(order).toEqual([]);
    // A window asking to begin while a reader waits goes after it.
    const next = countWindow(2, SERIES).then(() => order.push('window 2 counted'));
    counted.set('acme', T + MINUTE);
    store.leave();
    expect(await reading).toBe('checkpoint');
    await next;
    expect(order).toEqual(['read 1 1', 'window 2 counted']);
  });
});

describe('render lock: the announcement of a change', () => {
  it('tells onChange once per turn of changes, on the next turn', async () => {
    const store = new SeriesStore({ clock: { now: () => T } });
    let told = 0;
    store.onChange = () => told++;
    const f: Family = store.family({ name: 'g', help: 'G.', type: 'gauge', labelNames: ['r'] });
    f.set(f.slot(['a']), 1);
    f.set(f.slot(['b']), 2);
    expect(told).toBe(0);
    await settle();
    expect(told).toBe(1);
    // No change, no word.
    await settle();
    expect(told).toBe(1);
    f.set(f.slot(['a']), 3);
    await settle();
    expect(told).toBe(2);
  });

  it('tells it once a window being counted is whole, not in the middle of it', async () => {
    const store = new SeriesStore({ clock: { now: () => T } });
    let told = 0;
    store.onChange = () => told++;
    const f = store.family({ name: 'c_total', help: 'C.', type: 'counter', labelNames: ['r'] });
    expect(store.enter()).toBeUndefined();
    f.add(f.slot(['a']), 1);
    await settle();
    f.add(f.slot(['b']), 1);
    await settle();
    expect(told).toBe(0);
    store.leave();
    await settle();
    expect(told).toBe(1);
  });

  it('logs a refresh that failed in our words, and goes on announcing later changes', async () => {
    class FailingRefresh extends RenderLock {
      refreshes = 0;
      async refresh(): Promise<void> {
        this.refreshes++;
        throw new Error('out of memory');
      }
      change(): void {
        this.touched();
      }
    }
    const { log, lines } = captureLog();
    const lock = new FailingRefresh(log);
    lock.change();
    lock.change();
    await settle();
    expect(lock.refreshes).toBe(1);
    const logged = lines.map((l) => JSON.parse(l));
    expect(logged).toHaveLength(1);
    expect(logged[0].msg).toBe('rebuilding /metrics text failed');
    lock.change();
    await settle();
    expect(lock.refreshes).toBe(2);
  });
});
