/**
 * An inventory of 100,000 accounts (issue 25, row 7) is read and sorted in slices that yield to the event loop:
 * /healthz and /metrics answer meanwhile. What is checked, without timing: a callback queued on the event loop
 * while the work is under way runs before the work ends (sliceMs 0: a yield after every item), and the sliced
 * work gives what the one-block work gave (the sort's order is Array.prototype.sort's).
 */
import { describe, expect, it } from 'vitest';
import { InventoryClient } from '../../src/discovery/client.js';
import { discoveryRound } from '../../src/discovery/discovery.js';
import { inSlices, sortedInSlices } from '../../src/discovery/slices.js';
import { HttpClient } from '../../src/http/request.js';
import { silentLogger } from '../../src/log.js';
import { turnsDuring } from '../helpers/loop-turns.js';
import { startTestSimulator } from '../helpers/per-test.js';

describe('work over a whole inventory, in slices', () => {
  it('sorts as Array.prototype.sort does, yielding to the loop meanwhile', async () => {
    // Deterministic names with duplicates, shared prefixes, and characters outside the BMP (sorted by code units).
    const names = Array.from({ length: 5000 }, (_, i) => {
      const k = (i * 7919) % 1777;
      return `${['acct', 'Acct', 'ä', '😀', 'z'][k % 5]}-${k}`;
    });
    const { result: sorted, turns } = await turnsDuring(() => sortedInSlices(names, { sliceMs: 0 }));
    expect(sorted).toEqual([...names].sort());
    expect(turns).toBeGreaterThan(0);
    expect(await sortedInSlices([])).toEqual([]);
  });

  it('stops at the signal: the rest is not done', async () => {
    const ctl = new AbortController();
    const seen: number[] = [];
    const done = await inSlices(
      [1, 2, 3, 4],
      (n) => {
        seen.push(n);
        if (n === 2) ctl.abort();
      },
      { signal: ctl.signal, sliceMs: 0 },
    );
    expect(done).toBe(false);
    expect(seen).toEqual([1, 2]);
    expect(await sortedInSlices(['b', 'a'], { signal: ctl.signal })).toBeUndefined();
  });

  it('a round over 100,000 listed accounts yields to the loop between reading the answer and applying it', async () => {
    const sim = await startTestSimulator({ seed: 7 });
    const names = Array.from({ length: 100_000 }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
    // One element without a name: its count is reported as soon as the answer is read, before the accounts are.
    sim.setInventoryBody(
      JSON.stringify([{ status: 'active' }, ...names.map((name) => ({ status: 'active', name }))]),
    );
    const inventory = new InventoryClient(new HttpClient({ baseUrl: sim.url, token: () => 'demo-token' }));
    let queuedRan: boolean | undefined;
    let ranBeforeApply: boolean | undefined;
    let wanted = 0;
    const round = discoveryRound({
      log: silentLogger,
      sources: [
        { label: 'token', token: { get: () => 'demo-token' } as never, list: () => inventory.listAccounts() },
      ],
      filter: { include: /^(?:.*)$/ },
      maxNameLength: 128,
      refused: () => undefined,
      count: () => undefined,
      describe: String,
      tokenRefused: () => undefined,
      slicing: { sliceMs: 0 },
      issues: (n) => {
        expect(n).toBe(1);
        queuedRan = false;
        setImmediate(() => (queuedRan = true));
      },
      apply: (w) => {
        ranBeforeApply = queuedRan;
        wanted = w.size;
      },
    });
    await round();
    expect(wanted).toBe(100_000);
    expect(ranBeforeApply).toBe(true);
  });
});
