/**
 * The exporter's upstreams (src/exporter/upstreams.ts), through the Upstreams class: one upstream (gate and HTTP
 * client) per token source, made on first use and shared by every account of that source; a takeover spends the
 * budget of every gate, made before it or after; requests and parse errors reach the self-metrics by API; the
 * logins the configuration names start only when used, and startLogins resolves once each has tried. Real HTTP to
 * the simulator on loopback.
 */
import { Counter, Registry } from 'prom-client';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuthMetrics } from '../../src/auth/metrics.js';
import { MINUTE, systemClock } from '../../src/clock.js';
import { type Config, InlineToken } from '../../src/config/index.js';
import { Upstreams, type UpstreamsDeps } from '../../src/exporter/upstreams.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import { MetricsClient } from '../../src/traffic/client.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { startTestSimulator } from '../helpers/per-test.js';

const agents: Agent[] = [];
const stops: AbortController[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) s.abort();
  for (const a of agents.splice(0)) await a.destroy();
});

const api = (baseUrl: string, requestsPerSecond = 50): Config['api'] => ({
  baseUrl,
  timeoutMs: 10_000,
  requestsPerSecond,
  concurrency: 2,
  maxBodyBytes: 10_000_000,
});

function upstreams(baseUrl: string, over: Partial<UpstreamsDeps> = {}) {
  const agent = new Agent();
  agents.push(agent);
  const stop = new AbortController();
  stops.push(stop);
  const requests: Array<[string, number | 'error']> = [];
  const parseErrors = new Counter({
    name: 'parse_errors',
    help: 'h',
    labelNames: ['api'] as const,
    registers: [],
  });
  const registry = new Registry();
  const auth = createAuthMetrics(registry);
  const u = new Upstreams({
    api: api(baseUrl),
    clock: systemClock,
    log: captureLog().log,
    agent,
    signal: stop.signal,
    self: { observeRequest: (name, code) => requests.push([name, code]), parseErrors },
    auth: () => auth,
    ...over,
  });
  return { u, requests, parseErrors, registry, stop };
}

/** A first request through the upstream of `token` runs at once (true) or waits on the clock (false). */
async function runsAtOnce(u: Upstreams, token: InlineToken): Promise<boolean> {
  let ran = false;
  const done = u.for(token).gate.run(async () => {
    ran = true;
  });
  // The gate decides in a microtask or two; a request that waits sleeps on the fake clock instead.
  for (let i = 0; i < 20 && !ran; i++) await Promise.resolve();
  void done.catch(() => undefined);
  return ran;
}

describe('Upstreams', () => {
  it('makes one upstream per token source on first use, shared by its accounts, another for another source', () => {
    const { u } = upstreams('http://127.0.0.1:9');
    const a = new InlineToken('token-a');
    const b = new InlineToken('token-b');
    expect(u.queueLength()).toBe(0);
    const ua = u.for(a);
    expect(u.for(a)).toBe(ua);
    expect(ua.token).toBe(a);
    const ub = u.for(b);
    expect(ub).not.toBe(ua);
    expect(ub.gate).not.toBe(ua.gate);
    // The same token text from another source is another upstream: sources, not strings, are shared.
    expect(u.for(new InlineToken('token-a'))).not.toBe(ua);
  });

  it('after a takeover, every gate starts with its budget spent: those made before it and those made after', async () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 1));
    const deps = { clock, api: api('http://127.0.0.1:9', 2) };
    // Without a takeover, a first request goes at once.
    const fresh = upstreams('http://127.0.0.1:9', deps).u;
    expect(await runsAtOnce(fresh, new InlineToken('t'))).toBe(true);

    const { u } = upstreams('http://127.0.0.1:9', deps);
    const before = new InlineToken('before');
    u.for(before);
    u.tookOver(clock.now());
    expect(await runsAtOnce(u, before)).toBe(false);
    expect(await runsAtOnce(u, new InlineToken('after'))).toBe(false);
    expect(u.queueLength()).toBe(2);
    // The requests wait on the clock, not in real time.
    expect(u.underWay()).toBe(0);
    // Not within the second the budget was spent in...
    await clock.advance(999);
    expect(u.queueLength()).toBe(2);
    // ...and once that window (a second and the gate's small margin, src/poll/request-gate.ts) is past, both go.
    await clock.advance(1_000);
    expect(u.queueLength()).toBe(0);
  });

  it('reports each request to the self-metrics by API and status, and a malformed answer as a parse error of its API', async () => {
    const start = Math.floor((Date.now() - 60 * MINUTE) / (5 * MINUTE)) * 5 * MINUTE;
    const window = { account: 'demo', start, end: start + 5 * MINUTE, breakdown: 'resource' as const };

    const sim = await startTestSimulator({ seed: 3 });
    const ok = upstreams(sim.url);
    await new MetricsClient(ok.u.for(new InlineToken('demo-token'))).fetchTraffic(window);
    expect(ok.requests).toEqual([['metrics', 200]]);
    await expect(
      new MetricsClient(ok.u.for(new InlineToken('wrong-token'))).fetchTraffic(window),
    ).rejects.toMatchObject({ kind: 'auth' });
    expect(ok.requests.at(-1)).toEqual(['metrics', 403]);
    expect((await ok.parseErrors.get()).values.filter((v) => v.value > 0)).toEqual([]);

    const broken = await startTestSimulator({ seed: 3, faults: { malformed: 1 } });
    const bad = upstreams(broken.url);
    await expect(
      new MetricsClient(bad.u.for(new InlineToken('demo-token'))).fetchTraffic(window),
    ).rejects.toMatchObject({ kind: 'malformed' });
    expect((await bad.parseErrors.get()).values).toEqual([
      expect.objectContaining({ labels: { api: 'metrics' }, value: 1 }),
    ]);
  });

  it('starts only the logins in use, counts them from 0, and resolves once each has made its first attempt', async () => {
    const sim = await startTestSimulator({ seed: 4 });
    const { u, registry, stop } = upstreams(sim.url);
    const used = u.createLogin({ username: DEMO_USER, password: DEMO_PASSWORD });
    const unused = u.createLogin({ username: 'someone-else@demo.example', password: 'x' });
    expect(u.logins.map((l) => l.username)).toEqual([DEMO_USER, 'someone-else@demo.example']);
    const loops: Promise<void>[] = [];
    await u.startLogins(new Set([used]), stop.signal, (loop) => loops.push(loop));
    expect(loops).toHaveLength(1);
    // Its first attempt is done: a token is there for the pollers' first requests.
    expect(() => used.get()).not.toThrow();
    expect(sim.logins.map((l) => [l.username, l.result])).toEqual([[DEMO_USER, 'ok']]);
    const text = await registry.metrics();
    expect(text).toContain(`cdn_auth_logins_total{login="${DEMO_USER}",result="ok"} 1`);
    // Counted from 0: the first refusal is an increase() a rule sees.
    expect(text).toContain(`cdn_auth_logins_total{login="${DEMO_USER}",result="refused"} 0`);
    expect(text).not.toContain('someone-else');
    expect(() => unused.get()).toThrow();
    stop.abort();
    await Promise.all(loops);
  });
});
