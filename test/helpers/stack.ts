/**
 * A simulator and an exporter pointed at it, both on loopback, configured through the real config loader.
 * Every test that starts a stack stops it (stop() is idempotent).
 */
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { stringify } from 'yaml';
import { type Clock, systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/index.js';
import { Exporter, type ExporterOptions } from '../../src/exporter/exporter.js';
import type { Upstreams } from '../../src/exporter/upstreams.js';
import { silentLogger } from '../../src/log.js';
import { closeServer, listen } from '../../src/main.js';
import type { SimulatorOptions } from '../../src/simulator/options.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { demoWorld } from '../../src/simulator/world.js';
import type { TrafficPipeline } from '../../src/traffic/pipeline.js';
import { Scrape } from './exposition.js';
import { type FakeClock, settle } from './fake-clock.js';

export interface StackOptions {
  clock?: Clock;
  sim?: Partial<SimulatorOptions>;
  /** Parts of the YAML config; `api.base_url` is filled in. */
  config?: Record<string, unknown>;
  exporter?: Partial<ExporterOptions>;
  /** Reuse a running simulator (for restarts). */
  simulator?: Simulator;
  /** The exporter's loopback port (default: any free one); a restart on the same port keeps a scraper's target. */
  port?: number;
}

export interface Stack {
  sim: Simulator;
  exporter: Exporter;
  url: string;
  scrape(): Promise<Scrape>;
  text(): Promise<string>;
  /** Stops the exporter; also the simulator unless it was handed in. */
  stop(): Promise<void>;
  /**
   * Stops only the exporter's polling (state file written); its HTTP server goes on serving what it counted.
   * `graceMs`: how long windows in flight may take to be answered and counted (default 2 s).
   */
  stopExporter(graceMs?: number): Promise<void>;
}

export function configFrom(file: Record<string, unknown>) {
  const text = stringify(file);
  return loadConfig({ file: 'test.yml', env: {}, readFile: () => text });
}

/** `exporter`'s pages served on loopback, on `port` (default: any free one): the server and its base URL. */
export async function serveExporter(exporter: Exporter, port = 0): Promise<{ server: Server; url: string }> {
  const server = await listen(exporter.app, { host: '127.0.0.1', port });
  const addr = server.address();
  return { server, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}` };
}

export async function startStack(o: StackOptions = {}): Promise<Stack> {
  const clock = o.clock ?? systemClock;
  const sim = o.simulator ?? (await startSimulator({ seed: 7, clock, slowMs: 300, ...o.sim }));
  const given = o.config ?? {};
  const file = {
    ...given,
    api: {
      base_url: sim.url,
      token: 'demo-token',
      requests_per_second: 50,
      concurrency: 4,
      timeout: '5s',
      ...(given.api as object | undefined),
    },
    accounts: given.accounts ?? [{ name: 'demo' }],
  };
  const exporter = new Exporter({
    config: configFrom(file),
    log: silentLogger,
    version: '0.0.0-test',
    clock,
    backoff: { baseMs: 20, capMs: 300 },
    authBackoff: { baseMs: 200, capMs: 1000 },
    defaultMetrics: false,
    random: () => 0.5,
    ...o.exporter,
  });
  const { server, url } = await serveExporter(exporter, o.port);
  await exporter.start();
  let stopped = false;
  let exporterStopped: Promise<void> | undefined;
  const stopExporter = (graceMs = 2000) => {
    exporterStopped ??= exporter.stop(graceMs);
    return exporterStopped;
  };
  const text = async () => {
    const res = await fetch(`${url}/metrics`);
    return res.text();
  };
  return {
    sim,
    exporter,
    url,
    text,
    scrape: async () => Scrape.of(await text()),
    stopExporter,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stopExporter();
      await closeServer(server, 500);
      if (!o.simulator) await sim.close();
    },
  };
}

/** Polls `check` (real time) until it returns true; fails after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (let i = 0; i < 100_000; i++) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The exporter's parts the FakeClock helpers below watch (private fields: what is under way, not public API). */
function inside(stack: Stack): { upstreams: Upstreams; traffic?: TrafficPipeline } {
  return stack.exporter as unknown as { upstreams: Upstreams; traffic?: TrafficPipeline };
}

/**
 * For a stack driven by a FakeClock: waits (real time, bounded) until no request is under way in any of its gates
 * (RequestGate.underWay). Give it to FakeClock.advance so the clock never jumps while a request is on its way: a
 * request sent before a jump would reach the simulator after it, stamped later than it was sent.
 */
export async function requestsLanded(stack: Stack, timeoutMs = 30_000): Promise<void> {
  const { upstreams } = inside(stack);
  if (upstreams.underWay() === 0) return;
  await waitFor(() => upstreams.underWay() === 0, timeoutMs, 'the requests under way to land');
}

/**
 * For a stack driven by a FakeClock: waits (real time, bounded) until nothing real is under way in the exporter,
 * twice in a row: no request under way in a gate (sent, answered or read: RequestGate.underWay), no login under way,
 * no answer waiting to be counted, the /metrics text rebuilt. All that is left is parked on the clock, so moving it
 * on overtakes nothing. Call it after every move of the clock instead of a sleep of a few ms, which stands in for a
 * loopback round trip only on an idle machine.
 */
export async function quiet(stack: Stack, timeoutMs = 30_000): Promise<void> {
  const { upstreams, traffic } = inside(stack);
  const calm = async () => {
    await settle();
    await traffic?.idle();
    // What was counted is in the /metrics text (rebuilt a turn after a change, and compressed off the loop).
    await stack.exporter.store.refresh();
    await settle();
    return upstreams.underWay() === 0 && upstreams.logins.every((l) => !l.busy);
  };
  await waitFor(
    async () => (await calm()) && (await calm()),
    timeoutMs,
    'the exporter to have nothing under way',
  );
}

/** Moves `clock` on by `ms` in steps (a second: the request gate paces on it), every stack quiet after each step. */
export async function runClock(
  clock: FakeClock,
  ms: number,
  stacks: readonly Stack[],
  stepMs = 1000,
): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    await clock.advance(stepMs);
    for (const s of stacks) await quiet(s);
  }
}

/** What /metrics serves now: the store's text rebuilt first (it is rebuilt a turn after a change). */
export async function scrapeNow(s: Stack): Promise<Scrape> {
  await s.exporter.store.refresh();
  return s.scrape();
}

/** A traffic-only account shaped like the demo world's second, named `name`, its token `${name}-token`. */
export function trafficAccount(name: string): SimAccount {
  const base = demoWorld()[1]!;
  return { ...base, name, token: `${name}-token`, streams: [], recordings: [] };
}

/**
 * Date.now(), read at least 5 s before a minute turns (waiting up to 5 s for the next minute otherwise). A test that
 * computes where the exporter's walk begins (`floorMinute(now - lookback)`) and then starts it can otherwise read
 * one minute and the exporter, started a moment later, the next.
 */
export async function minuteSafeNow(): Promise<number> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 50));
  return Date.now();
}

/** Ends what a test started, in this order: its stacks, the simulator they shared, its temporary folder. */
export async function stopAll(o: { stacks?: readonly (Stack | undefined)[]; sim?: Simulator; dir?: string }) {
  for (const s of o.stacks ?? []) await s?.stop();
  await o.sim?.close();
  if (o.dir) rmSync(o.dir, { recursive: true, force: true });
}
