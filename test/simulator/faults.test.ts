import { describe, expect, it } from 'vitest';
import {
  checkFaultRates,
  FAULT_KINDS,
  type FaultKind,
  FaultPlan,
  type FaultRates,
  type SimApi,
} from '../../src/simulator/faults.js';
import type { Simulator } from '../../src/simulator/server.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 2, 3, 0, 0, 0);
const TOKEN = 'demo-token';

/** One valid request per API, so that without a fault each answers 200 with JSON. */
const REQUESTS: Record<SimApi, string> = {
  metrics: '/app/metrics/v1/?account=demo&start=2026-03-02T10:00:00&end=2026-03-02T10:01:00&resource=1001',
  'dvr-net': '/app/dvr-net/v1/demo/streams/live/main',
  'recorder-cloud': '/app/recorder-cloud/v1/demo/record',
};
const APIS = Object.keys(REQUESTS) as SimApi[];

interface Seen {
  api: SimApi;
  /** 'reset' when the client saw a socket error. */
  status: number | 'reset';
  type: string | null;
  retryAfter: string | null;
  text: string;
}

async function call(sim: Simulator, api: SimApi): Promise<Seen> {
  try {
    const res = await fetch(`${sim.url}${REQUESTS[api]}`, { headers: { 'CDN-AUTH-TOKEN': TOKEN } });
    return {
      api,
      status: res.status,
      type: res.headers.get('content-type'),
      retryAfter: res.headers.get('retry-after'),
      text: await res.text(),
    };
  } catch (err) {
    expect(err).toBeInstanceOf(TypeError); // fetch failed: the socket was cut
    return { api, status: 'reset', type: null, retryAfter: null, text: '' };
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function within(count: number, n: number, rate: number): boolean {
  return count === Math.floor(n * rate) || count === Math.ceil(n * rate);
}

describe('FaultPlan', () => {
  const sets: FaultRates[] = [
    { '500': 0.1 },
    {
      '429': 0.05,
      '500': 0.05,
      '502': 0.04,
      '503': 0.03,
      '504': 0.03,
      reset: 0.02,
      slow: 0.02,
      malformed: 0.06,
    },
    { '429': 1 / 3, '500': 1 / 3, reset: 1 / 3 },
    { '503': 0.25, '504': 0.25, malformed: 0.5 },
    { '429': 0.001, slow: 0.999 },
    { '500': 0.137, '502': 0.071, reset: 0.009, malformed: 0.3 },
  ];

  it('keeps every kind within floor/ceil of N*rate for every N', () => {
    for (const [i, rates] of sets.entries()) {
      for (const seed of [1, 2, 3]) {
        const plan = new FaultPlan(rates, seed);
        const counts = new Map<FaultKind, number>();
        for (let n = 1; n <= 3000; n++) {
          const kind = plan.next();
          if (kind) counts.set(kind, (counts.get(kind) ?? 0) + 1);
          for (const k of FAULT_KINDS) {
            const ok = within(counts.get(k) ?? 0, n, rates[k] ?? 0);
            if (!ok) expect.fail(`set ${i}, seed ${seed}, n ${n}: ${k} occurred ${counts.get(k)} times`);
          }
        }
      }
    }
  });

  it('is a function of the seed', () => {
    const run = (seed: number) => {
      const plan = new FaultPlan({ '500': 0.2, '502': 0.2, '503': 0.2 }, seed);
      return Array.from({ length: 50 }, () => plan.next() ?? '-').join(',');
    };
    expect(run(7)).toBe(run(7));
    expect(new Set([1, 2, 3, 4, 5, 6, 7, 8].map(run)).size).toBeGreaterThan(1);
  });

  it('refuses rates out of [0, 1], adding up to more than 1, or of unknown kinds', () => {
    expect(() => checkFaultRates({ '500': 1.5 })).toThrow(/"500"/);
    expect(() => checkFaultRates({ reset: -0.1 })).toThrow(/"reset"/);
    expect(() => checkFaultRates({ '500': 0.6, '502': 0.5 })).toThrow(/more than 1/);
    expect(() => checkFaultRates({ '418': 0.1 } as FaultRates)).toThrow(/418/);
    expect(() => checkFaultRates({ '500': 0.5, '502': 0.5 })).not.toThrow();
  });
});

describe('faults over HTTP', () => {
  it('injects each kind exactly floor or ceil of N*rate times, in each API shape', async () => {
    const rates: FaultRates = {
      '429': 0.05,
      '500': 0.05,
      '502': 0.04,
      '503': 0.03,
      '504': 0.03,
      reset: 0.02,
      slow: 0.02,
      malformed: 0.06,
    };
    const sim = await startTestSimulator({ seed: 11, clock: new FakeClock(NOW), faults: rates, slowMs: 1 });
    const N = 1000;
    const seen: Seen[] = [];
    for (let i = 0; i < N; i++) seen.push(await call(sim, APIS[i % APIS.length]!));

    expect(sim.requestLog).toHaveLength(N);
    const count = (pred: (s: Seen) => boolean) => seen.filter(pred).length;
    for (const code of [429, 500, 502, 503, 504]) {
      const n = count((s) => s.status === code);
      expect(within(n, N, rates[String(code) as FaultKind]!), `${code}: ${n}`).toBe(true);
    }
    const resets = count((s) => s.status === 'reset');
    expect(within(resets, N, rates.reset!), `reset: ${resets}`).toBe(true);
    const malformed = count((s) => s.status === 200 && !parses(s.text));
    expect(within(malformed, N, rates.malformed!), `malformed: ${malformed}`).toBe(true);
    // Slow answers are normal answers; only the log tells them apart.
    const slow = sim.requestLog.filter((e) => e.fault === 'slow');
    expect(within(slow.length, N, rates.slow!)).toBe(true);
    expect(slow.every((e) => e.status === 200)).toBe(true);
    // The log agrees with what the client saw, request by request.
    sim.requestLog.forEach((e, i) => {
      expect(e.api).toBe(seen[i]!.api);
      expect(e.status).toBe(seen[i]!.status);
    });
    // Nothing but the injected kinds and good answers.
    expect(new Set(seen.map((s) => s.status))).toEqual(new Set([200, 429, 500, 502, 503, 504, 'reset']));

    for (const s of seen) {
      if (s.status === 'reset' || s.status === 200) continue;
      if (s.status === 429) expect(Number(s.retryAfter)).toBeGreaterThanOrEqual(1);
      if (s.api === 'metrics') {
        expect(s.type).toMatch(/^application\/json/);
        expect(Object.keys(JSON.parse(s.text))).toEqual(['description']);
      } else if (s.api === 'dvr-net') {
        expect(s.type).toMatch(/^application\/json/);
        const body = JSON.parse(s.text) as Record<string, unknown>;
        expect(Object.keys(body).sort()).toEqual(['description', 'status']);
      } else if (s.status === 429) {
        expect(s.type).toMatch(/^text\/plain/);
        expect(s.text.length).toBeGreaterThan(0);
      } else {
        expect(s.type).toMatch(/^text\/html/);
        expect(s.text).toBe('');
      }
    }
    for (const api of APIS) {
      const bad = seen.filter((s) => s.api === api && s.status === 200 && !parses(s.text));
      expect(bad.length, `malformed answers of ${api}`).toBeGreaterThan(0);
      for (const s of bad) expect(s.type).toMatch(/^application\/json/);
    }
  });

  it('cuts the socket on reset and answers the slow kind late but whole', async () => {
    let sim = await startTestSimulator({ seed: 3, clock: new FakeClock(NOW), faults: { reset: 1 } });
    for (const api of APIS) expect((await call(sim, api)).status).toBe('reset');
    expect(sim.requestLog.map((e) => e.status)).toEqual(['reset', 'reset', 'reset']);

    await sim.close();
    sim = await startTestSimulator({
      seed: 3,
      clock: new FakeClock(NOW),
      faults: { slow: 1 },
      slowMs: 60,
    });
    const t0 = performance.now();
    const s = await call(sim, 'metrics');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
    expect(s.status).toBe(200);
    expect(JSON.parse(s.text)).toHaveProperty('data');
  });

  it('changes rates at run time and restarts the ordinal', async () => {
    const sim = await startTestSimulator({ seed: 3, clock: new FakeClock(NOW) });
    expect((await call(sim, 'metrics')).status).toBe(200);
    sim.setFaults({ '504': 1 });
    expect((await call(sim, 'metrics')).status).toBe(504);
    sim.setFaults({});
    expect((await call(sim, 'dvr-net')).status).toBe(200);
    expect(() => sim.setFaults({ '500': 0.7, '503': 0.7 })).toThrow();
  });
});
