/**
 * The traffic pipeline (src/traffic/pipeline.ts) as the exporter uses it, without the exporter: one account's
 * poller walking the simulator on loopback on a fake clock, writing a real series store through traffic's ledger.
 * What it promises: the exposition shows whole windows with the cursor they reach and counters exact to the
 * simulator's truth up to it; every counted window is reported once, in order (to the page's history and, revisit
 * off, as settled); a removed account's series leave the exposition while its counters are kept, and continue when
 * the account comes back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../src/api/vocabulary.js';
import { MINUTE } from '../../src/clock.js';
import { HttpClient } from '../../src/http/request.js';
import { silentLogger } from '../../src/log.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { TrafficPipeline, type TrafficPollerDeps } from '../../src/traffic/pipeline.js';
import { AUTH_BACKOFF, TRAFFIC_BACKOFF } from '../../src/traffic/retry-decision.js';
import { parseExposition } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { expectExact, type Range, type Reader } from '../helpers/ground-truth.js';
import { waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0);
const WINDOW = 5 * MINUTE;
let sim: Simulator | undefined;
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await sim?.close();
  sim = undefined;
});

async function setUp() {
  const clock = new FakeClock(T0);
  // No late data: a window read once is final, so the counters must equal the complete truth.
  sim = await startSimulator({ seed: 5, clock, lagSeconds: 0 });
  const store = new SeriesStore({ clock, refreshLog: silentLogger });
  const pipeline = new TrafficPipeline(
    store,
    {
      breakdown: 'resource',
      windowGauges: true,
      metrics: [],
      allMetrics: METRIC_NAMES,
      resources: [],
      windowMs: WINDOW,
      delayMs: 0,
      lookbackMs: 2 * WINDOW,
      maxInFlight: 2,
      backoff: TRAFFIC_BACKOFF,
      authBackoff: AUTH_BACKOFF,
    },
    new CountingLedger(store),
  );
  const http = new HttpClient({ baseUrl: sim.url, token: () => 'demo-token', clock });
  return { clock, sim, store, pipeline, http };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** Starts `account`'s poller; returns the windows it reported counted and settled, and its stop. */
function startPoller(s: Setup, account: string, startCursor?: number) {
  const counted: Range[] = [];
  const settled: Range[] = [];
  const deps: TrafficPollerDeps = {
    clock: s.clock,
    log: silentLogger,
    startCursor,
    onStatus: () => {},
    audit: () => {},
    refused: () => {},
    windowCounted: (start, end) => counted.push([start, end]),
    windowSettled: (start, end) => settled.push([start, end]),
  };
  const poller = s.pipeline.poller(account, s.http, deps);
  const ctl = new AbortController();
  const running = poller.run(ctl.signal);
  const stop = async () => {
    ctl.abort();
    await running;
  };
  stops.push(stop);
  return { poller, counted, settled, stop };
}

/**
 * Moves the fake clock 15 s at a time (real time bounded) until the exposition's cursor of `account` is `to`. The
 * simulator has no late data, so a request that lands after a move is answered as it would have been before it.
 */
async function walkTo(s: Setup, account: string, to: number): Promise<void> {
  await waitFor(
    async () => {
      await s.pipeline.idle();
      await s.store.refresh();
      // Read as a scrape reads it: the store keeps the formats scrapes ask for.
      s.store.render('text');
      if ((s.store.countedIn('text')?.get(account) ?? 0) >= to) return true;
      await s.clock.advance(15_000);
      return false;
    },
    30_000,
    `${account}'s windows counted up to ${new Date(to).toISOString()}`,
  );
}

function exposition(store: SeriesStore): { read: Reader; text: string } {
  const text = store.render('text').toString();
  const samples = parseExposition(text);
  const read: Reader = (name, labels) =>
    samples.find(
      (x) =>
        x.name === name &&
        Object.entries(labels).every(([k, v]) => x.labels[k] === v) &&
        Object.keys(x.labels).length === Object.keys(labels).length,
    )?.value;
  return { read, text };
}

describe('TrafficPipeline: one account walked against the simulator', () => {
  it('shows whole windows up to its cursor, exact to the truth, each reported once and in order', async () => {
    const s = await setUp();
    const p = startPoller(s, 'demo');
    const from = T0 - 2 * WINDOW;
    // The lookback's two windows at once, then two more as the clock reaches their ends.
    const to = T0 + 2 * WINDOW;
    await walkTo(s, 'demo', to);
    await p.stop();
    await s.pipeline.idle();
    await s.store.refresh();

    const cursor = s.store.countedIn('text')!.get('demo')!;
    const { read } = exposition(s.store);
    expect(read('cdn_metrics_window_end_timestamp_seconds', { account: 'demo' })).toBe(cursor / 1000);
    // Every window it counted, in order, tiling [from, cursor): none skipped, none twice.
    expect(p.counted[0]![0]).toBe(from);
    for (let i = 1; i < p.counted.length; i++) expect(p.counted[i]![0]).toBe(p.counted[i - 1]![1]);
    expect(p.counted.at(-1)![1]).toBe(cursor);
    // Revisit off: each first read is the window's final answer.
    expect(p.settled).toEqual(p.counted);
    expect(expectExact(s.sim, read, 'demo', [[from, cursor]])).toBeGreaterThan(100);
    expect(read('cdn_metrics_windows_total', { account: 'demo' })).toBe(p.counted.length);
  });

  it("removes a stopped account's series, keeps its counters, and continues them when it comes back", async () => {
    const s = await setUp();
    const first = startPoller(s, 'demo');
    await walkTo(s, 'demo', T0);
    await first.stop();
    let left: number | undefined;
    await s.pipeline.removeAccount('demo', (cursor) => {
      left = cursor;
    });
    await s.store.refresh();
    expect(left).toBe(T0);
    expect(exposition(s.store).text).not.toMatch(/account="demo"/);
    // Kept for the state file: the counters it had, with nothing of it on /metrics.
    expect(JSON.stringify(s.pipeline.savedCounters())).toContain('demo');

    // Back, resuming at the cursor its counters go with: they continue, exact over the whole walk.
    const second = startPoller(s, 'demo', left);
    await walkTo(s, 'demo', T0 + WINDOW);
    await second.stop();
    await s.pipeline.idle();
    await s.store.refresh();
    const cursor = s.store.countedIn('text')!.get('demo')!;
    expect(second.counted[0]![0]).toBe(T0);
    expectExact(s.sim, exposition(s.store).read, 'demo', [[T0 - 2 * WINDOW, cursor]]);
  });
});
