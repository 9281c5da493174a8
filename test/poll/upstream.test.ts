/**
 * A request in flight while its token is replaced: refused with the old token, it is sent once more with the new
 * one (the upstream sees the source's generation move), so its window is neither skipped nor counted twice. A
 * refusal with the current token is not retried there (the walker's auth backoff and refresh() handle it).
 */
import { describe, expect, it } from 'vitest';
import { MINUTE, systemClock } from '../../src/clock.js';
import type { TokenSource } from '../../src/config/index.js';
import { createAgent } from '../../src/http/request.js';
import { createUpstream } from '../../src/poll/upstream.js';
import { MetricsClient } from '../../src/traffic/client.js';
import { startTestSimulator } from '../helpers/per-test.js';

/** A token source whose token a test replaces, as a login renewal does. */
class Rotating implements TokenSource {
  readonly description = 'test';
  generation = 1;
  constructor(public token: string) {}
  get(): string {
    return this.token;
  }
  refresh(): string {
    return this.token;
  }
  replace(token: string): void {
    this.token = token;
    this.generation++;
  }
}

async function setup(token: Rotating) {
  // Every request is held a while before the API looks at it: the token changes while it is in flight, on the
  // simulator's word that it arrived (requestArrived), whatever the load.
  const sim = await startTestSimulator({ seed: 2, faults: { slow: 1 }, slowMs: 300 });
  const agent = createAgent();
  const up = createUpstream(token, {
    baseUrl: sim.url,
    requestsPerSecond: 50,
    concurrency: 4,
    clock: systemClock,
    agent,
    onRequest: () => undefined,
  });
  const start = Math.floor((Date.now() - 60 * MINUTE) / MINUTE) * MINUTE;
  const metrics = new MetricsClient(up);
  const fetch = () =>
    metrics.fetchTraffic({ account: 'demo', start, end: start + 5 * MINUTE, breakdown: 'resource' });
  return { sim, agent, fetch };
}

describe('a renewal while a request is in flight', () => {
  it('retries the refused request once with the new token', async () => {
    const token = new Rotating('demo-token');
    const { sim, agent, fetch } = await setup(token);
    const pending = fetch();
    const arrived = await sim.requestArrived((e) => e.api === 'metrics');
    expect(arrived.token).toBe('static');
    // The CDN now takes only the new token, and the source has it.
    sim.setToken('demo', 'renewed-token');
    token.replace('renewed-token');
    const res = await pending;
    expect(res.records.length).toBeGreaterThan(0);
    const log = sim.requestLog.filter((e) => e.api === 'metrics');
    expect(log.map((e) => e.status)).toEqual([403, 200]);
    expect(log[0]!.query).toEqual(log[1]!.query);
    await agent.destroy();
  });

  it('does not retry a refusal of the current token', async () => {
    const token = new Rotating('demo-token');
    const { sim, agent, fetch } = await setup(token);
    const pending = fetch();
    sim.setToken('demo', 'someone-elses');
    await expect(pending).rejects.toMatchObject({ kind: 'auth', status: 403 });
    expect(sim.requestLog.filter((e) => e.api === 'metrics')).toHaveLength(1);
    await agent.destroy();
  });
});
