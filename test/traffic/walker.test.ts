import { afterEach, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import type { FailureKind, RequestFailure } from '../../src/traffic/retry-decision.js';
import {
  AccountWalker,
  type WalkerDeps,
  type WalkerOptions,
  type WalkerStatus,
} from '../../src/traffic/walker.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);

function response(): TrafficResponse {
  return { account: 'a', metrics: [], records: [], issues: [], unknownKeys: [] };
}

function failure(kind: FailureKind, status?: number, retryAfterMs?: number): RequestFailure {
  return { kind, status, retryAfterMs, message: `${kind} ${status ?? ''}` };
}

type Answer =
  | TrafficResponse
  | RequestFailure
  | ((start: number, end: number) => TrafficResponse | RequestFailure);

/**
 * A running walker of account `a` (5-minute windows, no delay unless `o` says) on `clock`; the deps `deps` leaves
 * out are a quiet log and no skip, status or auth listener. `stop` aborts it and waits for its end.
 */
function walking(
  clock: FakeClock,
  o: Partial<WalkerOptions> & Pick<WalkerOptions, 'lookbackMs' | 'maxInFlight' | 'backoff' | 'authBackoff'>,
  deps: Partial<WalkerDeps> & Pick<WalkerDeps, 'fetchWindow' | 'handOver'>,
) {
  const walker: AccountWalker = new AccountWalker(
    { account: 'a', windowMs: 5 * MINUTE, delayMs: 0, ...o },
    { clock, log: silentLogger, skip: () => {}, onStatus: () => {}, authFailed: () => {}, ...deps },
  );
  const ctl = new AbortController();
  const done = walker.run(ctl.signal);
  return {
    walker,
    stop: async () => {
      ctl.abort();
      await done;
    },
  };
}

/** A walker on a fake clock with a scripted API: `answers` are consumed per request, then every request succeeds. */
function harness(
  opts: { lookbackMin: number; windowMin?: number; delayMin?: number; maxInFlight?: number },
  answers: Answer[] | ((now: number) => Answer | undefined) = [],
) {
  const clock = new FakeClock(T0);
  const requests: Array<[number, number]> = [];
  const applied: Array<[number, number]> = [];
  const skipped: Array<[number, number, string]> = [];
  const statuses: WalkerStatus[] = [];
  let authFailed = 0;
  const { walker, stop } = walking(
    clock,
    {
      windowMs: (opts.windowMin ?? 5) * MINUTE,
      delayMs: (opts.delayMin ?? 0) * MINUTE,
      lookbackMs: opts.lookbackMin * MINUTE,
      maxInFlight: opts.maxInFlight ?? 4,
      backoff: { baseMs: 1000, capMs: 8000 },
      authBackoff: { baseMs: 60_000, capMs: 300_000 },
    },
    {
      random: () => 0.5,
      fetchWindow: async (start, end) => {
        requests.push([start, end]);
        const next = typeof answers === 'function' ? answers(clock.now()) : answers.shift();
        const a = typeof next === 'function' ? next(start, end) : next;
        if (a && 'kind' in a) throw a;
        return a ?? response();
      },
      handOver: (start, end) => applied.push([start, end]),
      skip: (start, end, reason) => skipped.push([start, end, reason]),
      onStatus: (s) => statuses.push(s),
      authFailed: () => authFailed++,
    },
  );
  return {
    clock,
    walker,
    requests,
    applied,
    skipped,
    statuses,
    counts: () => ({ authFailed }),
    stop,
  };
}

const minutes = (pairs: Array<[number, number]>) =>
  pairs.map(([s, e]) => [(s - T0) / MINUTE, (e - T0) / MINUTE]);

function expectTiling(pairs: Array<[number, number]>, from: number, to: number) {
  let at = from;
  for (const [s, e] of pairs) {
    expect(s).toBe(at);
    expect(e).toBeGreaterThan(s);
    at = e;
  }
  expect(at).toBe(to);
}

let current: ReturnType<typeof harness> | undefined;
function track(h: ReturnType<typeof harness>) {
  current = h;
  return h;
}
afterEach(async () => {
  await current?.stop();
  current = undefined;
});

describe('window walker', () => {
  it('catches up in 10-minute windows, then walks steady windows as the horizon moves', async () => {
    const h = track(harness({ lookbackMin: 60, windowMin: 5 }));
    await h.clock.advance(0);
    expect(minutes(h.applied)).toEqual([
      [-60, -50],
      [-50, -40],
      [-40, -30],
      [-30, -20],
      [-20, -10],
      [-10, 0],
    ]);
    // Nothing new until a full steady window has passed the horizon.
    await h.clock.advance(4 * MINUTE);
    expect(h.applied).toHaveLength(6);
    await h.clock.advance(MINUTE);
    expect(minutes(h.applied).at(-1)).toEqual([0, 5]);
    await h.clock.advance(10 * MINUTE);
    expect(minutes(h.applied).slice(-2)).toEqual([
      [5, 10],
      [10, 15],
    ]);
    expectTiling(h.applied, T0 - 60 * MINUTE, T0 + 15 * MINUTE);
    expect(h.statuses.at(-1)?.cursor).toBe(T0 + 15 * MINUTE);
  });

  it('never asks for minutes newer than now - delay', async () => {
    const h = track(harness({ lookbackMin: 30, windowMin: 5, delayMin: 5 }));
    await h.clock.advance(30 * MINUTE);
    for (const [, end] of h.requests) expect(end).toBeLessThanOrEqual(T0 + 25 * MINUTE);
    expectTiling(h.applied, T0 - 30 * MINUTE, T0 + 25 * MINUTE);
  });

  it('advances the cursor only over a contiguous run when windows finish out of order', async () => {
    const gates: Array<() => void> = [];
    const clock = new FakeClock(T0);
    const applied: number[] = [];
    const cursors: number[] = [];
    const { stop } = walking(
      clock,
      {
        lookbackMs: 30 * MINUTE,
        maxInFlight: 3,
        backoff: { baseMs: 1000, capMs: 1000 },
        authBackoff: { baseMs: 1000, capMs: 1000 },
      },
      {
        fetchWindow: (start) =>
          new Promise((resolve) =>
            gates.push(() => {
              resolve({ ...response(), start });
            }),
          ),
        handOver: (start) => applied.push((start - T0) / MINUTE),
        onStatus: (s) => cursors.push((s.cursor - T0) / MINUTE),
      },
    );
    await clock.advance(0);
    expect(gates).toHaveLength(3); // three windows in flight: -30, -20, -10
    gates[2]!();
    gates[1]!();
    await clock.advance(0);
    expect(applied).toEqual([]); // the oldest is still out
    expect(cursors.at(-1)).toBe(-30);
    gates[0]!();
    await clock.advance(0);
    expect(applied).toEqual([-30, -20, -10]);
    expect(cursors.at(-1)).toBe(0);
    await stop();
  });

  it('halves the window on 504 and grows it back after successes', async () => {
    const h = track(
      harness({ lookbackMin: 60, maxInFlight: 1 }, [failure('timeout', 504), failure('timeout', 504)]),
    );
    await h.clock.advance(0);
    // 10 -> 5 -> 2 minutes, then doubling after every 3 successes: 2,2,2 -> 4,4,4 -> 8 ...
    expect(minutes(h.requests.slice(0, 3))).toEqual([
      [-60, -50],
      [-60, -55],
      [-60, -58],
    ]);
    // When the size drops, every waiting window longer than it is split too (the rest of the old 5-minute piece
    // would time out the same way). Every third success in a row of a window planned at the current size doubles
    // it again (2 -> 4 -> 8 -> 10).
    const lengths = h.applied.map(([s, e]) => (e - s) / MINUTE);
    expect(lengths).toEqual([2, 2, 1, 2, 2, 1, 4, 4, 4, 8, 8, 8, 10]);
    // The last 4 minutes wait for a full steady-state window.
    expectTiling(h.applied, T0 - 60 * MINUTE, T0 - 4 * MINUTE);
    await h.clock.advance(MINUTE);
    expectTiling(h.applied, T0 - 60 * MINUTE, T0 + MINUTE);
    expect(h.statuses.some((s) => s.maxWindowMinutes === 2)).toBe(true);
    expect(h.statuses.at(-1)!.maxWindowMinutes).toBe(10);
  });

  it('grows the window one step at a time while older, smaller windows are still in flight', async () => {
    // The API times out above 2 minutes at once and holds 2-minute answers until released, so several of them are
    // in flight together and then succeed together. Only successes of windows planned at the current size may grow
    // it: 2 -> 4 (answered 504, back to 2), never on to 8 before a 4-minute window has been answered.
    const held: Array<() => void> = [];
    const clock = new FakeClock(T0);
    const sizes: number[] = [];
    const requests: Array<[number, number]> = [];
    const applied: Array<[number, number]> = [];
    const { walker, stop } = walking(
      clock,
      {
        lookbackMs: 120 * MINUTE,
        maxInFlight: 6,
        backoff: { baseMs: 1000, capMs: 1000 },
        authBackoff: { baseMs: 1000, capMs: 1000 },
      },
      {
        random: () => 0.5,
        fetchWindow: (start, end) => {
          requests.push([start, end]);
          if (end - start > 2 * MINUTE) return Promise.reject(failure('timeout', 504));
          return new Promise((resolve) => held.push(() => resolve(response())));
        },
        handOver: (start, end) => applied.push([start, end]),
        onStatus: (s) => sizes.push(s.maxWindowMinutes),
      },
    );
    await clock.advance(0);
    expect(held).toHaveLength(6);
    expect(walker.current.maxWindowMinutes).toBe(2);
    const mark = requests.length;
    for (let round = 0; round < 100 && walker.current.cursor < T0; round++) {
      for (const release of held.splice(0)) release();
      await clock.advance(1000); // past the backoff of a re-asked 504 piece
    }
    expectTiling(applied, T0 - 120 * MINUTE, T0);
    expect(Math.max(...sizes.slice(sizes.indexOf(2)))).toBe(4);
    // Once the size is 2, the only longer windows ever asked for are 4 minutes (answered 504, then re-asked in 2s).
    const longer = requests.slice(mark).filter(([s, e]) => e - s > 2 * MINUTE);
    expect(longer.length).toBeGreaterThan(0);
    for (const [s, e] of longer) expect((e - s) / MINUTE).toBe(4);
    await stop();
  });

  it('skips and counts a window the API rejects with 422, and goes on', async () => {
    const h = track(harness({ lookbackMin: 30, maxInFlight: 1 }, [response(), failure('invalid', 422)]));
    await h.clock.advance(0);
    expect(minutes(h.skipped.map(([s, e]) => [s, e]))).toEqual([[-20, -10]]);
    expect(h.skipped[0]![2]).toBe('rejected');
    expect(minutes(h.applied)).toEqual([
      [-30, -20],
      [-10, 0],
    ]);
    expect(h.statuses.at(-1)!.cursor).toBe(T0);
  });

  it('splitting windows after a 504 keeps the backoff of a window waiting after a server error', async () => {
    // Both windows go out at once: the older gets 500 (backoff: 1 s with random 0.5), the newer 504. The 504
    // halves the size and splits every waiting window, the one in backoff too; its pieces must still wait.
    const h = track(
      harness({ lookbackMin: 20, maxInFlight: 2 }, [failure('server', 500), failure('timeout', 504)]),
    );
    await h.clock.advance(0);
    const older = () => minutes(h.requests).filter(([s]) => s! < -10);
    expect(older()).toEqual([[-20, -10]]);
    await h.clock.advance(999);
    expect(older()).toEqual([[-20, -10]]);
    await h.clock.advance(1);
    expect(older()).toEqual([
      [-20, -10],
      [-20, -15],
      [-15, -10],
    ]);
    expectTiling(h.applied, T0 - 20 * MINUTE, T0);
  });

  it('retries server errors, resets and garbage with growing backoff, never losing the window', async () => {
    const h = track(
      harness({ lookbackMin: 10, maxInFlight: 1 }, [
        failure('server', 500),
        failure('network'),
        failure('malformed', 200),
        failure('server', 503),
      ]),
    );
    await h.clock.advance(0);
    expect(h.applied).toHaveLength(0);
    expect(h.statuses.at(-1)!.up).toBe(false);
    // backoff with random 0.5: 1s*2^1/2, 2^2/2, 2^3/2 capped at 8s/2 ...
    await h.clock.advance(60_000);
    expect(minutes(h.requests)).toEqual(Array(5).fill([-10, 0]));
    expect(minutes(h.applied)).toEqual([[-10, 0]]);
    expect(h.statuses.at(-1)!.up).toBe(true);
  });

  it('waits for Retry-After on 429 without marking the account down', async () => {
    const h = track(harness({ lookbackMin: 10, maxInFlight: 1 }, [failure('rate-limited', 429, 30_000)]));
    await h.clock.advance(0);
    await h.clock.advance(29_000);
    expect(h.requests).toHaveLength(1);
    expect(h.statuses.at(-1)!.up).not.toBe(false);
    await h.clock.advance(1_000);
    expect(h.requests).toHaveLength(2);
    expect(h.applied).toHaveLength(1);
  });

  it('marks the account down on 401/403, probes slowly with one request, and recovers', async () => {
    const denied = failure('auth', 403);
    // The token is refused for the first five minutes.
    const h = track(
      harness({ lookbackMin: 60, maxInFlight: 4 }, (now) => (now < T0 + 5 * MINUTE ? denied : undefined)),
    );
    await h.clock.advance(0);
    expect(h.statuses.at(-1)!.up).toBe(false);
    expect(h.counts().authFailed).toBeGreaterThanOrEqual(1);
    const before = h.requests.length;
    await h.clock.advance(59_000);
    expect(h.requests.length).toBe(before); // no hammering while refused
    await h.clock.advance(60_000);
    expect(h.requests.length).toBe(before + 1); // one probe a minute, then 2, 4 ...
    await h.clock.advance(10 * 60_000);
    expect(h.statuses.at(-1)!.up).toBe(true);
    const cursor = h.statuses.at(-1)!.cursor;
    expectTiling(h.applied, T0 - 60 * MINUTE, cursor);
    expect(h.clock.now() - cursor).toBeLessThan(5 * MINUTE); // caught up to within one steady window
  });

  it('reports the window in use (10m catching up, 5m steady, 2m after 504s), not only the largest allowed', async () => {
    const h = track(harness({ lookbackMin: 30, windowMin: 5, maxInFlight: 1 }));
    await h.clock.advance(0);
    // Catching up: 10-minute windows.
    expect(h.statuses.some((st) => st.windowMinutes === 10)).toBe(true);
    await h.clock.advance(5 * MINUTE);
    const steady = h.statuses.at(-1)!;
    expect(steady.windowMinutes).toBe(5);
    expect(steady.maxWindowMinutes).toBe(10);

    const shrunk = track(
      harness({ lookbackMin: 60, maxInFlight: 1 }, [failure('timeout', 504), failure('timeout', 504)]),
    );
    await h.stop();
    await shrunk.clock.advance(0);
    // While the API times out above 2 minutes, 2-minute windows are what is asked for, and what is reported.
    expect(shrunk.statuses.some((st) => st.maxWindowMinutes === 2 && st.windowMinutes === 2)).toBe(true);
  });

  it('carries the last error with its time and the failures since the last success', async () => {
    const h = track(
      harness({ lookbackMin: 10, maxInFlight: 1 }, [
        failure('server', 500),
        failure('server', 502),
        failure('network'),
      ]),
    );
    await h.clock.advance(0);
    const first = h.statuses.at(-1)!;
    expect(first.errorsSinceSuccess).toBe(1);
    expect(first.lastErrorAt).toBe(T0);
    // Backoff with random 0.5: 1 s, then 2 s.
    await h.clock.advance(1000);
    await h.clock.advance(2000);
    const third = h.statuses.at(-1)!;
    expect(third.errorsSinceSuccess).toBe(3);
    expect(third.lastErrorAt).toBe(T0 + 3000);
    expect(third.lastError).toMatch(/^network: /);
    await h.clock.advance(60_000);
    const back = h.statuses.at(-1)!;
    expect(back.up).toBe(true);
    expect(back.errorsSinceSuccess).toBe(0);
    // The last error stays visible, older than the last success.
    expect(back.lastErrorAt).toBe(T0 + 3000);
    expect(back.lastSuccess).toBeGreaterThan(back.lastErrorAt!);
  });

  it('a token file that cannot be read is a configuration problem, not a network one', async () => {
    const missing: RequestFailure = {
      kind: 'configuration',
      message: 'token file /run/secrets/cdn-token: does not exist',
    };
    const h = track(harness({ lookbackMin: 10, maxInFlight: 1 }, [missing, missing]));
    await h.clock.advance(0);
    const st = h.statuses.at(-1)!;
    expect(st.up).toBe(false);
    expect(st.lastError).toBe('configuration: token file /run/secrets/cdn-token: does not exist');
    // Read again at each retry: once the file is there, the window is counted.
    await h.clock.advance(10_000);
    expect(h.applied).toHaveLength(1);
    expect(h.statuses.at(-1)!.up).toBe(true);
  });

  it('resumes at a saved cursor', async () => {
    const clock = new FakeClock(T0);
    const applied: number[] = [];
    const { stop } = walking(
      clock,
      {
        lookbackMs: 600 * MINUTE,
        maxInFlight: 2,
        startCursor: T0 - 15 * MINUTE,
        backoff: { baseMs: 1, capMs: 1 },
        authBackoff: { baseMs: 1, capMs: 1 },
      },
      {
        fetchWindow: async () => response(),
        handOver: (s) => applied.push((s - T0) / MINUTE),
      },
    );
    await clock.advance(0);
    expect(applied).toEqual([-15, -5]);
    await stop();
  });
});

describe('window walker: back-pressure from counting', () => {
  it('fetches no further ahead than maxInFlight windows while handed-over windows wait to be counted', async () => {
    const clock = new FakeClock(T0);
    const requests: Array<[number, number]> = [];
    const waiting: Array<[number, number]> = [];
    let counted = 0;
    const { walker, stop } = walking(
      clock,
      {
        lookbackMs: 60 * MINUTE,
        maxInFlight: 2,
        backoff: { baseMs: 1000, capMs: 8000 },
        authBackoff: { baseMs: 60_000, capMs: 300_000 },
      },
      {
        random: () => 0.5,
        fetchWindow: async (start, end) => {
          requests.push([start, end]);
          return response();
        },
        // A slow applier: nothing is counted until the test says so.
        handOver: (start, end) => waiting.push([start, end]),
        backlog: () => waiting.length,
      },
    );
    try {
      await clock.advance(0);
      // Two answers wait for counting: the walker asks for nothing more, however long it waits.
      expect(waiting).toHaveLength(2);
      await clock.advance(10 * MINUTE);
      expect(requests).toHaveLength(2);
      // Each window counted lets exactly one more be read.
      for (let i = 0; i < 4; i++) {
        waiting.shift();
        counted++;
        walker.windowCounted();
        await clock.advance(0);
        expect(requests).toHaveLength(2 + counted);
        expect(waiting).toHaveLength(2);
      }
      // Drained: the catch-up goes on to the end, in order, without gaps.
      for (let i = 0; i < 20 && waiting.length > 0; i++) {
        waiting.splice(0);
        walker.windowCounted();
        await clock.advance(0);
      }
      expectTiling(requests, T0 - 60 * MINUTE, T0 + 10 * MINUTE);
    } finally {
      await stop();
    }
  });
});

describe('window walker: a crowded gate (many accounts share the token)', () => {
  it('keeps one window in flight while the gate is crowded, sending the next when it settles, and catches up maxInFlight at a time once it is not', async () => {
    const clock = new FakeClock(T0);
    let crowded = true;
    const answers: Array<() => void> = [];
    const applied: Array<[number, number]> = [];
    let inFlight = 0;
    let steps = 0;
    const { stop } = walking(
      clock,
      {
        lookbackMs: 120 * MINUTE,
        maxInFlight: 4,
        backoff: { baseMs: 1000, capMs: 8000 },
        authBackoff: { baseMs: 60_000, capMs: 300_000 },
      },
      {
        random: () => 0.5,
        // Answered when the test says so: the windows wait in the (crowded) gate meanwhile.
        fetchWindow: (_start, _end) => {
          inFlight++;
          return new Promise<TrafficResponse>((resolve) =>
            answers.push(() => {
              inFlight--;
              resolve(response());
            }),
          );
        },
        handOver: (start, end) => applied.push([start, end]),
        // Every step of the walker's loop publishes its status.
        onStatus: () => steps++,
        crowded: () => crowded,
      },
    );
    await clock.advance(0);
    expect(inFlight).toBe(1);
    // Held back, the walker waits for its window to settle: no step of its loop without a cause.
    const before = steps;
    await settle();
    expect(steps).toBe(before);
    for (let i = 0; i < 3; i++) {
      answers.shift()!();
      await clock.advance(0);
      expect(inFlight).toBe(1);
    }
    expect(minutes(applied)).toEqual([
      [-120, -110],
      [-110, -100],
      [-100, -90],
    ]);
    // The gate drains: the account alone catches up as before.
    crowded = false;
    answers.shift()!();
    await clock.advance(0);
    expect(inFlight).toBe(4);
    for (let i = 0; i < 20 && answers.length > 0; i++) {
      answers.shift()!();
      await clock.advance(0);
    }
    expectTiling(applied, T0 - 120 * MINUTE, T0);
    await stop();
  });
});
