import { describe, expect, it } from 'vitest';
import { REVISIT_PRIORITY, RequestGate } from '../../src/poll/request-gate.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';

/**
 * Real-time wait (bounded) until the gate has nothing under way in real time (RequestGate.underWay: requests let go
 * and not settled), so the fake clock moves on only once they have gone, whatever the load.
 */
async function parked(gate: RequestGate): Promise<void> {
  const until = Date.now() + 20_000;
  while (gate.underWay > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  await settle();
}

/** Runs `n` requests through the gate while driving the fake clock; returns their send times (fake ms). */
async function drive(gate: RequestGate, clock: FakeClock, n: number, stepMs = 50): Promise<number[]> {
  const sent: number[] = [];
  const all = Promise.all(
    Array.from({ length: n }, () =>
      gate.run(async () => {
        sent.push(clock.now());
      }),
    ),
  );
  let done = false;
  void all.then(() => {
    done = true;
  });
  for (let i = 0; i < 2000 && !done; i++) {
    await clock.advance(stepMs);
    await parked(gate);
  }
  await all;
  return sent;
}

function maxInOneSecond(times: number[], windowMs = 1000): number {
  const t = [...times].sort((a, b) => a - b);
  let worst = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i]! - t[j]! >= windowMs) j++;
    worst = Math.max(worst, i - j + 1);
  }
  return worst;
}

describe('request gate', () => {
  it('after a process that was killed, counts its last second as spent: the two together stay under the rate', async () => {
    const clock = new FakeClock(0);
    const killed = new RequestGate({ requestsPerSecond: 5, concurrency: 4, clock, marginMs: 0 });
    const before = await drive(killed, clock, 12);
    // Killed right after its last send; the next process starts at once and takes over its budget.
    const next = new RequestGate({ requestsPerSecond: 5, concurrency: 4, clock, marginMs: 0 });
    next.spentAt(clock.now());
    const after = await drive(next, clock, 12);
    expect(maxInOneSecond([...before, ...after])).toBeLessThanOrEqual(5);
    // The same start without it: the API would see a burst above the rate.
    const unaware = new RequestGate({ requestsPerSecond: 5, concurrency: 4, clock, marginMs: 0 });
    const at = clock.now();
    const burst = await drive(unaware, clock, 5);
    expect(maxInOneSecond([...after, ...burst].filter((t) => t > at - 1000))).toBeGreaterThan(5);
  });

  it('never sends more than requests_per_second in any second, even with more concurrency', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 20, concurrency: 8, clock, marginMs: 0 });
    const sent = await drive(gate, clock, 50);
    expect(sent).toHaveLength(50);
    expect(maxInOneSecond(sent)).toBeLessThanOrEqual(20);
    // Throughput at the rate is measured by `npm run bench` (catch-up), where one clock drives everything.
  });

  it('pauses every request of the token for Retry-After after a 429, then slows down and climbs back', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({
      requestsPerSecond: 20,
      concurrency: 4,
      clock,
      marginMs: 0,
      recoverAfter: 5,
    });
    gate.rateLimited(3000);
    expect(gate.currentRate).toBe(10);
    const sent = await drive(gate, clock, 10);
    expect(Math.min(...sent)).toBeGreaterThanOrEqual(3000);
    expect(maxInOneSecond(sent)).toBeLessThanOrEqual(10);
    for (let i = 0; i < 5; i++) gate.succeeded();
    expect(gate.currentRate).toBe(15);
    for (let i = 0; i < 10; i++) gate.succeeded();
    expect(gate.currentRate).toBe(20);
  });

  it('spaces requests evenly when the rate is below one per second', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 0.5, concurrency: 2, clock, marginMs: 0 });
    const sent = await drive(gate, clock, 3, 500);
    expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(2000);
    expect(sent[2]! - sent[1]!).toBeGreaterThanOrEqual(2000);
  });
});

describe('request gate: send times', () => {
  /** Starts one request; `write()` marks it written to a socket, `finish()` settles it. */
  function start(gate: RequestGate, clock: FakeClock) {
    let released: number | undefined;
    let write = () => {};
    let finish = () => {};
    const done = gate.run(
      (ticket) =>
        new Promise<void>((resolve) => {
          released = clock.now();
          write = () => ticket.sent();
          finish = resolve;
        }),
    );
    return { released: () => released, write: () => write(), finish: () => finish(), done };
  }

  it('keeps its distance from when a request was written to a socket, not from when it was released', async () => {
    const clock = new FakeClock(0);
    // 2/s: one request per half second (a tenth of a second's worth is less than one).
    const gate = new RequestGate({ requestsPerSecond: 2, concurrency: 4, clock, marginMs: 0 });
    const a = start(gate, clock);
    const b = start(gate, clock);
    await clock.advance(0);
    expect(a.released()).toBe(0);
    // A is still connecting: B cannot know when A reaches the API, so it waits, however long that takes.
    await clock.advance(5000);
    expect(b.released()).toBeUndefined();
    a.write();
    await clock.advance(499);
    expect(b.released()).toBeUndefined();
    await clock.advance(1);
    expect(b.released()).toBe(5500);
    a.finish();
    b.write();
    b.finish();
    await Promise.all([a.done, b.done]);
  });

  it('counts a request that settles without ever being written from when it settled', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 2, concurrency: 4, clock, marginMs: 0 });
    const a = start(gate, clock);
    const b = start(gate, clock);
    await clock.advance(300);
    a.finish(); // refused before it was written (connection refused, say)
    await clock.advance(499);
    expect(b.released()).toBeUndefined();
    await clock.advance(1);
    expect(b.released()).toBe(800);
    b.finish();
    await Promise.all([a.done, b.done]);
  });

  it('paces requests: at most a tenth of a second of the rate leaves together', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 40, concurrency: 40, clock, marginMs: 0 });
    const sent = await drive(gate, clock, 40, 5);
    // 40/s: 4 at a time, every 100 ms; never more than 40 in a second.
    expect(maxInOneSecond(sent, 100)).toBe(4);
    expect(maxInOneSecond(sent)).toBeLessThanOrEqual(40);
    expect(Math.max(...sent)).toBeLessThan(1000);
  });

  it('cuts the rate once for a burst of 429s, and again for a 429 of a request sent after the cut', () => {
    const clock = new FakeClock(10_000);
    const gate = new RequestGate({ requestsPerSecond: 16, concurrency: 4, clock });
    gate.rateLimited(1000, 9_900);
    expect(gate.currentRate).toBe(8);
    // Three more of the same burst: released before the cut.
    clock.set(10_050);
    for (const released of [9_910, 9_950, 9_990]) gate.rateLimited(1000, released);
    expect(gate.currentRate).toBe(8);
    clock.set(12_000);
    gate.rateLimited(1000, 11_500);
    expect(gate.currentRate).toBe(4);
  });
});

describe('request gate: concurrency', () => {
  it('never has more than `concurrency` requests running, however many wait and however high the rate', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 1000, concurrency: 3, clock, marginMs: 0 });
    let running = 0;
    let most = 0;
    const release: Array<() => void> = [];
    const all = Promise.all(
      Array.from({ length: 12 }, () =>
        gate.run(async () => {
          running++;
          most = Math.max(most, running);
          await new Promise<void>((r) => release.push(r));
          running--;
        }),
      ),
    );
    for (let i = 0; i < 200 && (release.length > 0 || running > 0 || gate.length > 0); i++) {
      await clock.advance(10);
      expect(running).toBeLessThanOrEqual(3);
      release.shift()?.();
    }
    await all;
    expect(most).toBe(3);
    expect(gate.length).toBe(0);
  });
});

describe('request gate on stop', () => {
  it('drops waiting requests at once but lets a request already sent finish', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 100, concurrency: 1, clock, marginMs: 0 });
    const stop = new AbortController();
    let release: (v: string) => void = () => {};
    const inFlight = gate.run(() => new Promise<string>((r) => (release = r)), stop.signal);
    const waiting = gate.run(async () => 'never sent', stop.signal);
    await clock.advance(0);
    stop.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow();
    release('answered');
    await expect(inFlight).resolves.toBe('answered');
  });

  it('lets the waiting requests go in the order they came, the dropped ones taking no turn', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 10, concurrency: 1, clock, marginMs: 0 });
    const order: number[] = [];
    // One stop signal per account, as each account's requests have.
    const accounts = Array.from({ length: 6 }, () => new AbortController());
    const runs = accounts.map((a, i) =>
      gate.run(async () => {
        order.push(i);
      }, a.signal),
    );
    // Accounts 1 and 4 stop while their requests wait behind the first.
    accounts[1]!.abort(new Error('stopped'));
    accounts[4]!.abort(new Error('stopped'));
    // Gone from the gate at once: the first request and the three others waiting are left.
    expect(gate.length).toBe(4);
    await expect(runs[1]).rejects.toThrow('stopped');
    await expect(runs[4]).rejects.toThrow('stopped');
    const rest = Promise.all([runs[0], runs[2], runs[3], runs[5]]);
    let done = false;
    void rest.then(() => {
      done = true;
    });
    for (let i = 0; i < 200 && !done; i++) {
      await clock.advance(100);
      await parked(gate);
    }
    await rest;
    expect(order).toEqual([0, 2, 3, 5]);
    expect(gate.length).toBe(0);
  });

  it('lets every waiting first read go before a waiting revisit of late data, whatever their order', async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ requestsPerSecond: 10, concurrency: 1, clock, marginMs: 0 });
    const order: string[] = [];
    const run = (name: string, priority?: number) =>
      gate.run(
        async () => {
          order.push(name);
        },
        undefined,
        priority,
      );
    // The first request takes the only turn; the rest queue behind it, revisits asked for before first reads.
    const all = Promise.all([
      run('first-1'),
      run('revisit-1', REVISIT_PRIORITY),
      run('revisit-2', REVISIT_PRIORITY),
      run('first-2'),
      run('first-3'),
    ]);
    let done = false;
    void all.then(() => {
      done = true;
    });
    for (let i = 0; i < 200 && !done; i++) {
      await clock.advance(100);
      await parked(gate);
    }
    await all;
    expect(order).toEqual(['first-1', 'first-2', 'first-3', 'revisit-1', 'revisit-2']);
  });
});
