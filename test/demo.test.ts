/**
 * src/demo.ts: the demo's simulator and the exporter configuration pointed at it. What `cdn-exporter demo` prints
 * and serves as a process is checked in test/cli/demo.test.ts (its banner on loopback and on every interface, its
 * --help, the landing page's charts); here, in-process: the configuration goes through the real loader and fits
 * the world the simulator serves, the lag and token lifetime the demo promises are the simulator's, and the banner
 * for the addresses and scheme the process test does not reach.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dvrStreamsCap } from '../src/config/cross-check.js';
import {
  DEMO_LAG_SECONDS,
  DEMO_TOKEN_LIFETIME_MS,
  demoBanner,
  demoConfig,
  demoUsage,
  EXAMPLE_PROMETHEUS_TARGET,
  startDemoSimulator,
} from '../src/demo.js';
import type { Simulator } from '../src/simulator/server.js';

const MINUTE = 60_000;

let sim: Simulator;
beforeAll(async () => {
  sim = await startDemoSimulator();
});
afterAll(() => sim?.close());

describe('startDemoSimulator', () => {
  it('serves on a free loopback port', () => {
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.port).toBeGreaterThan(0);
    expect(new URL(sim.url).port).toBe(String(sim.port));
  });

  it('holds the accounts, resources and streams the usage text describes', () => {
    const usage = demoUsage();
    const demo = sim.accounts.find((a) => a.name === 'demo')!;
    const acme = sim.accounts.find((a) => a.name === 'acme')!;
    expect(sim.accounts.map((a) => a.name).sort()).toEqual(['acme', 'demo']);
    expect(usage).toContain('(five resources');
    expect(demo.resources).toHaveLength(5);
    expect(usage).toContain('acme (three resources');
    expect(acme.resources).toHaveLength(3);
    for (const stream of [...demo.streams, ...acme.streams]) expect(usage).toContain(stream.name);
    // "four recording settings, one in each status"
    expect(new Set(demo.recordings.map((r) => r.status)).size).toBe(demo.recordings.length);
    expect(demo.recordings).toHaveLength(4);
  });

  it('reports each minute complete only DEMO_LAG_SECONDS after it ends', () => {
    const start = Date.UTC(2026, 0, 1, 12, 0);
    const end = start + MINUTE;
    const complete = sim.truth('demo', undefined, start, end);
    const early = sim.truth('demo', undefined, start, end, { asOf: end + (DEMO_LAG_SECONDS - 30) * 1000 });
    expect(early).not.toEqual(complete);
    expect(sim.truth('demo', undefined, start, end, { asOf: end + DEMO_LAG_SECONDS * 1000 })).toEqual(
      complete,
    );
  });

  it('issues login tokens that live DEMO_TOKEN_LIFETIME_MS (3 minutes), for the configured user', async () => {
    const { api } = demoConfig(sim.url);
    const res = await fetch(`${sim.url}/app/oauth/v1/token`, {
      method: 'POST',
      body: new URLSearchParams({ username: api.username!, password: api.password! }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; lifetime: number };
    expect(body.lifetime).toBe(DEMO_TOKEN_LIFETIME_MS);
    expect(DEMO_TOKEN_LIFETIME_MS).toBe(3 * MINUTE);
  });
});

describe('demoConfig', () => {
  it('is loaded by the real loader: a login (no fixed token), pointed at the URL given', () => {
    const c = demoConfig(sim.url);
    expect(c.api.baseUrl).toBe(sim.url);
    expect(c.api.token).toBeUndefined();
    expect(c.api.tokenFile).toBeUndefined();
    expect(sim.users.map((u) => u.username)).toContain(c.api.username);
  });

  it('lists only accounts and streams the simulator has, each stream polled within dvr.interval', () => {
    const c = demoConfig(sim.url);
    for (const account of c.accounts) {
      const world = sim.accounts.find((a) => a.name === account.name);
      expect(world, account.name).toBeDefined();
      expect(world!.streams.map((s) => s.name)).toEqual(expect.arrayContaining(account.dvrStreams));
      expect(account.dvrStreams.length).toBeLessThanOrEqual(
        dvrStreamsCap(c.api.requestsPerSecond, c.dvr.intervalMs),
      );
      expect(account.recordings).toBe(true);
    }
    expect(c.accounts.map((a) => a.name).sort()).toEqual(['acme', 'demo']);
  });

  it('reads the newest minutes before they are complete, and revisits them after they are', () => {
    const { metrics } = demoConfig(sim.url);
    // The usage: 1-minute windows, a 1-minute delay, 45 minutes back.
    expect([metrics.windowMs, metrics.delayMs, metrics.lookbackMs]).toEqual([MINUTE, MINUTE, 45 * MINUTE]);
    // The late share shows: a minute is first read before the lag has passed ...
    expect(metrics.delayMs).toBeLessThan(DEMO_LAG_SECONDS * 1000);
    // ... and every counter ends exact: it is read again once complete.
    expect(metrics.revisitMs).toBeGreaterThan(0);
    expect(metrics.delayMs + metrics.revisitMs).toBeGreaterThanOrEqual(DEMO_LAG_SECONDS * 1000);
    // Within the 50 minutes that let Prometheus place each counter's created zero (docs/operations.md).
    expect(metrics.lookbackMs).toBeLessThanOrEqual(50 * MINUTE);
  });

  it('gives each account a commit, so the cost dashboard has something to compare', () => {
    for (const account of demoConfig(sim.url).accounts) {
      expect(account.commit?.monthlyTransferBytes, account.name).toBeGreaterThan(0);
      expect(account.commit?.bandwidthP95BitsPerSecond, account.name).toBeGreaterThan(0);
    }
  });
});

describe('demoBanner', () => {
  it('on the example target itself: the plain Prometheus command, and the simulator URL', () => {
    const text = demoBanner(EXAMPLE_PROMETHEUS_TARGET, 'http://127.0.0.1:40000');
    expect(text).toContain(`  Landing page  http://${EXAMPLE_PROMETHEUS_TARGET}/\n`);
    expect(text).toContain(`(scrapes ${EXAMPLE_PROMETHEUS_TARGET})`);
    expect(text).not.toContain('set its');
    expect(text).toContain('  Simulator     http://127.0.0.1:40000\n');
    expect(text.trimEnd().split('\n').at(-1)).toBe('Stop with Ctrl-C.');
  });

  it('over TLS: https links; on IPv6 loopback: that address, to be set as the target', () => {
    const text = demoBanner('[::1]:9443', 'http://127.0.0.1:40000', 'https');
    expect(text).toContain('  Landing page  https://[::1]:9443/\n');
    expect(text).toContain('  Metrics       https://[::1]:9443/metrics\n');
    expect(text.replace(/\s+/g, ' ')).toContain('set its target to [::1]:9443');
    expect(text).not.toContain('http://[::1]');
  });
});
