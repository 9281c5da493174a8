/**
 * Starting and stopping many discovered accounts (issue 25, row 7) is done in slices with a yield to the event
 * loop between: /healthz answers while they start, and the exporter's stop drops their waiting requests a few
 * accounts at a time instead of in one block (10,000 accounts once held the loop, and SIGTERM, 15 s), and each
 * account waits in the gate with one window, not api.concurrency of them (their memory stalled the loop). Checked
 * without timing: with `sliceMs: 0` (a yield after every account), what the loop serves in between is seen
 * before the work ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AccountPollers } from '../../src/exporter/account-pollers.js';
import type { Upstreams } from '../../src/exporter/upstreams.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { type Stack, startStack, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
const N = 2000;
/** api.concurrency: requests the gate runs at once (waiting for their turn on the clock, settling on a stop). */
const CONCURRENCY = 4;

let stack: Stack | undefined;
let sim: Simulator | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
  await sim?.close();
  sim = undefined;
});

describe(`${N} discovered accounts`, () => {
  it('start while /healthz answers, and stop a few at a time, every waiting request dropped', async () => {
    const clock = new FakeClock(T0);
    sim = await startSimulator({ seed: 7, clock });
    const names = Array.from({ length: N }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
    sim.setInventoryBody(JSON.stringify(names.map((name) => ({ status: 'active', name }))));
    stack = await startStack({
      clock,
      simulator: sim,
      config: {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD, concurrency: CONCURRENCY },
        // An hour behind: each account has more windows to catch up than api.concurrency.
        metrics: { lookback: '1h', delay: '0m', window: '5m' },
        accounts_discovery: { enabled: true, interval: '10m' },
        accounts: [],
      },
      exporter: { sliceMs: 0 },
    });
    const s = stack;
    const pollers = () => (s.exporter as unknown as { pollers?: AccountPollers }).pollers?.size ?? 0;
    const queued = () => (s.exporter as unknown as { upstreams: Upstreams }).upstreams.queueLength();

    await waitFor(() => pollers() > 0, 60_000, 'the first account started');
    const health = await fetch(`${s.url}/healthz`);
    const startedWhenAnswered = pollers();
    expect(health.status).toBe(200);
    expect(startedWhenAnswered).toBeLessThan(N);

    await waitFor(() => pollers() === N, 60_000, `${N} accounts started`);
    // Every account's first window waits in the gate (the fake clock does not move), but the few let go.
    await waitFor(() => queued() > N / 2, 60_000, 'the accounts first windows waiting');
    // One window waiting per account, not api.concurrency of them: while a full round waits in the gate, an
    // account sends its next window only when the one in flight is answered (a few accounts started first, while
    // the gate was not crowded yet, sent more).
    expect(queued()).toBeLessThanOrEqual(N + 2 * CONCURRENCY);
    const before = queued();
    // The waiting requests seen between turns of the event loop while the exporter stops. Dropped in one block,
    // only the few the gate runs at once would be left to settle; some queued ones are seen only if the stop
    // yields to the loop between accounts.
    const seen = new Set<number>();
    let sampling = true;
    const sample = () => {
      seen.add(queued());
      if (sampling) setImmediate(sample);
    };
    const stopping = s.stopExporter();
    sample();
    await stopping;
    sampling = false;
    expect([...seen].some((n) => n > CONCURRENCY && n < before)).toBe(true);
    // The stop returns within its grace; the accounts left are dropped after it, all of them.
    await waitFor(() => queued() === 0, 60_000, 'every waiting request dropped');
  }, 120_000);
});
