import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/clock.js';
import { RequestGate } from '../../src/poll/request-gate.js';

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
    // p-queue's own ceiling counts real time; give it room without tying the fake clock to it.
    if (i % 10 === 9) await new Promise((r) => setTimeout(r, 20));
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
});
