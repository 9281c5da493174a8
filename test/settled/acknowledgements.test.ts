/**
 * The settled writer's acknowledged side (src/settled/acknowledgements.ts; docs/remote-write.md, "Across
 * restarts"): each account's acknowledged cursor and totals move over a window only once the receiver answered it
 * and every window before it, and the state is saved after each move, every save one consistent moment. A restart
 * resumes from the last save: what a crash loses is only what was not acknowledged, which is read and written again.
 * The totals are the real RunningTotals; the persistence is a fake of the narrow interface the worker takes.
 */
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import {
  type AcknowledgedAccount,
  Acknowledgements,
  type InFlight,
  type SettledPersistence,
} from '../../src/settled/acknowledgements.js';
import { RunningTotals, type SavedTotal } from '../../src/settled/running-totals.js';
import type { SavedSettled } from '../../src/settled/settled-state.js';
import type { WindowPoint } from '../../src/settled/window-series.js';
import { captureLog } from '../helpers/log-capture.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const DAY = 24 * 60 * MINUTE;

const point = (key: string, value: number): WindowPoint => ({
  key,
  family: 'cdn_edge_requests_total',
  labels: [['__name__', 'cdn_edge_requests_total']],
  kind: 'counter',
  value,
});

/** An account whose queued totals took windows [T + i min, T + (i+1) min) with `counts[i]` requests of `r`. */
function account(counts: number[], acked?: number): { a: AcknowledgedAccount; windows: InFlight[] } {
  const queued = new RunningTotals(DAY);
  const windows = counts.map((n, i) => {
    const taken = queued.take(T + i * MINUTE, T + (i + 1) * MINUTE, [point('r', n)]);
    queued.commit(taken);
    return { end: T + (i + 1) * MINUTE, taken, done: false };
  });
  return { a: { acked, acknowledged: new RunningTotals(DAY), inFlight: [...windows] }, windows };
}

/** A copy of each save, its totals read as the save reads them. */
function recorder(): SettledPersistence & {
  saves: Record<string, { cursor: number; totals: SavedTotal[] }>[];
} {
  const saves: Record<string, { cursor: number; totals: SavedTotal[] }>[] = [];
  return {
    saves,
    save: async (s: SavedSettled) => {
      const out: Record<string, { cursor: number; totals: SavedTotal[] }> = {};
      for (const [k, v] of s.accounts) out[k] = { cursor: v.cursor, totals: [...v.totals] };
      saves.push(out);
    },
  };
}

const totalOf = (save: Record<string, { cursor: number; totals: SavedTotal[] }> | undefined, acc = 'acme') =>
  save?.[acc]?.totals.find((t) => t.key === 'r')?.total;

describe('acknowledgements: the cursor moves over answered windows in order', () => {
  it('waits for every window before one answered out of order, then moves over all of them', async () => {
    const { a, windows } = account([5, 7, 11]);
    const persistence = recorder();
    const acks = new Acknowledgements(new Map([['acme', a]]), { log: captureLog().log, persistence });
    windows[1]!.done = true;
    windows[2]!.done = true;
    acks.arrived();
    await acks.flush();
    expect(a.acked).toBeUndefined();
    expect(a.acknowledged.get('r')).toBeUndefined();
    // Nothing moved, nothing saved: the file keeps the last cursor a restart can trust.
    expect(persistence.saves).toEqual([]);

    windows[0]!.done = true;
    acks.arrived();
    await acks.flush();
    expect(a.acked).toBe(T + 3 * MINUTE);
    expect(a.acknowledged.get('r')).toBe(23);
    expect(a.inFlight).toEqual([]);
    expect(persistence.saves.at(-1)).toEqual({
      acme: { cursor: T + 3 * MINUTE, totals: [{ key: 'r', total: 23, lastMs: T + 3 * MINUTE }] },
    });
  });

  it('moves over a window written with nothing (skipped, or no series) without touching the totals', async () => {
    const { a, windows } = account([5]);
    a.inFlight.push({ end: T + 2 * MINUTE, taken: undefined, done: true });
    const persistence = recorder();
    const acks = new Acknowledgements(new Map([['acme', a]]), { log: captureLog().log, persistence });
    windows[0]!.done = true;
    acks.arrived();
    await acks.flush();
    expect(a.acked).toBe(T + 2 * MINUTE);
    expect(totalOf(persistence.saves.at(-1))).toBe(5);
  });

  it('saves every account that has a cursor, and keeps loaded accounts not polled (yet) as they were', async () => {
    const acme = account([5]);
    const fresh = account([1]);
    const loaded: SavedSettled = {
      accounts: new Map([
        ['elsewhere', { cursor: T - DAY, totals: [{ key: 'x', total: 99, lastMs: T - DAY }] }],
        ['acme', { cursor: T - MINUTE, totals: [] }],
      ]),
    };
    const persistence = recorder();
    const acks = new Acknowledgements(
      new Map([
        ['acme', acme.a],
        ['fresh', fresh.a],
      ]),
      { log: captureLog().log, persistence, loaded },
    );
    acme.windows[0]!.done = true;
    acks.arrived();
    await acks.flush();
    // `fresh` has no acknowledged window yet: no cursor to save. `acme` is polled: its own state, not the loaded one.
    expect(persistence.saves.at(-1)).toEqual({
      acme: { cursor: T + MINUTE, totals: [{ key: 'r', total: 5, lastMs: T + MINUTE }] },
      elsewhere: { cursor: T - DAY, totals: [{ key: 'x', total: 99, lastMs: T - DAY }] },
    });
  });
});

describe('acknowledgements: saves', () => {
  it('holds the acknowledged totals still while a save reads them: each save is one moment', async () => {
    const { a, windows } = account([5, 7]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const saves: { cursor: number; total: number | undefined }[] = [];
    const persistence: SettledPersistence = {
      save: async (s) => {
        const part = s.accounts.get('acme')!;
        if (saves.length === 0) await gate;
        // The totals are read as the file is written, after the cursor.
        saves.push({ cursor: part.cursor, total: [...part.totals].find((t) => t.key === 'r')?.total });
      },
    };
    const acks = new Acknowledgements(new Map([['acme', a]]), { log: captureLog().log, persistence });
    windows[0]!.done = true;
    acks.arrived();
    await new Promise<void>((resolve) => setImmediate(resolve));
    // The second window is answered while the first save is being written.
    windows[1]!.done = true;
    acks.arrived();
    release();
    await acks.flush();
    expect(saves).toEqual([
      { cursor: T + MINUTE, total: 5 },
      { cursor: T + 2 * MINUTE, total: 12 },
    ]);
  });

  it('logs a failed save in our words and saves again at the next acknowledgement', async () => {
    const { a, windows } = account([5, 7]);
    let fail = true;
    const saved: number[] = [];
    const persistence: SettledPersistence = {
      save: async (s) => {
        if (fail) throw new Error('ENOSPC: no space left on device');
        saved.push(s.accounts.get('acme')!.cursor);
      },
    };
    const { log, lines } = captureLog();
    const acks = new Acknowledgements(new Map([['acme', a]]), { log, persistence });
    windows[0]!.done = true;
    acks.arrived();
    await acks.flush();
    const errors = lines
      .map((l) => JSON.parse(l))
      .filter((r) => r.msg === 'saving the settled writer state failed');
    expect(errors).toHaveLength(1);
    expect(JSON.stringify(errors[0])).toContain('no space left on device');
    // The cursor in memory moved: the receiver has the window.
    expect(a.acked).toBe(T + MINUTE);

    fail = false;
    windows[1]!.done = true;
    acks.arrived();
    await acks.flush();
    expect(saved).toEqual([T + 2 * MINUTE]);
  });

  it('save() writes the state even when nothing moved (an account forgotten), and without persistence does nothing', async () => {
    const { a } = account([]);
    a.acked = T;
    const persistence = recorder();
    const acks = new Acknowledgements(new Map([['acme', a]]), { log: captureLog().log, persistence });
    acks.save();
    await acks.flush();
    expect(persistence.saves).toEqual([{ acme: { cursor: T, totals: [] } }]);

    const alone = new Acknowledgements(new Map([['acme', a]]), { log: captureLog().log });
    alone.save();
    await alone.flush();
    expect(alone.savedState().accounts.get('acme')?.cursor).toBe(T);
  });

  it('applies a window of many totals in slices, whole before the cursor moves', async () => {
    const queued = new RunningTotals(DAY);
    const points = Array.from({ length: 5000 }, (_, i) => point(`r${i}`, i + 1));
    const taken = queued.take(T, T + MINUTE, points);
    const a: AcknowledgedAccount = {
      acked: undefined,
      acknowledged: new RunningTotals(DAY),
      inFlight: [{ end: T + MINUTE, taken, done: true }],
    };
    const persistence = recorder();
    // sliceMs 0: a yield between every part.
    const acks = new Acknowledgements(new Map([['acme', a]]), {
      log: captureLog().log,
      persistence,
      sliceMs: 0,
    });
    acks.arrived();
    await acks.flush();
    expect(a.acked).toBe(T + MINUTE);
    expect(persistence.saves).toHaveLength(1);
    const totals = persistence.saves[0]!.acme!.totals;
    expect(totals).toHaveLength(5000);
    expect(totals.every((t) => t.total === Number(t.key.slice(1)) + 1)).toBe(true);
  });
});
