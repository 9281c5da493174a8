import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../../src/config/flags.js';
import { parseSimulatorArgs, type Simulator } from '../../src/simulator/server.js';
import { demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startTestSimulator } from '../helpers/per-test.js';

const NOW = Date.UTC(2026, 2, 3, 0, 0, 0);
const METRICS = '/app/metrics/v1/resources?account=demo&start=2026-03-02T10:00:00&end=2026-03-02T10:05:00';
const DVR = '/app/dvr-net/v1/demo/streams/live/main';
const RECORDER = '/app/recorder-cloud/v1/demo/record';

async function call(sim: Simulator, path: string, token: string | null = 'demo-token') {
  const res = await fetch(`${sim.url}${path}`, {
    headers: token === null ? {} : { 'CDN-AUTH-TOKEN': token },
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    retryAfter: res.headers.get('retry-after'),
    text: await res.text(),
  };
}

describe('startSimulator', () => {
  it('listens on loopback and serves all three APIs of the demo world', async () => {
    const sim = await startTestSimulator({ seed: 1, clock: new FakeClock(NOW) });
    expect(sim.url).toBe(`http://127.0.0.1:${sim.port}`);
    expect(sim.port).toBeGreaterThan(0);
    expect(sim.accounts.map((a) => a.name)).toEqual(['demo', 'acme']);

    const metrics = await call(sim, METRICS);
    expect(metrics.status).toBe(200);
    expect(JSON.parse(metrics.text).data).toHaveLength(5);

    const dvr = await call(sim, DVR);
    expect(dvr.status).toBe(200);
    expect(JSON.parse(dvr.text).data).toHaveLength(2);

    const rec = await call(sim, RECORDER);
    expect(rec.status).toBe(200);
    expect(rec.text).toMatch(/^[[{]/);

    // Each API keeps its own error shape for a missing token.
    expect((await call(sim, METRICS, null)).status).toBe(403);
    const recNoToken = await call(sim, RECORDER, null);
    expect(recNoToken.status).toBe(401);
    expect(recNoToken.type).toMatch(/^text\/plain/);
    expect((await call(sim, '/nowhere')).status).toBe(404);
    expect((await call(sim, '/healthz')).text).toBe('ok');
  });

  it('logs every API request with its status and without the token', async () => {
    const clock = new FakeClock(NOW);
    const secret = 'tok-very-secret-123';
    const accounts = demoWorld().map((a) => (a.name === 'demo' ? { ...a, token: secret } : a));
    const sim = await startTestSimulator({ seed: 1, clock, accounts });
    await call(sim, `${METRICS}&metric=edge_status_200&metric=edge_status_5xx`, secret);
    await clock.advance(1500);
    await call(sim, DVR, secret);
    await call(sim, RECORDER, 'wrong');
    await call(sim, '/healthz', secret);

    expect(sim.requestLog).toEqual([
      {
        time: NOW,
        method: 'GET',
        path: '/app/metrics/v1/resources',
        query: {
          account: ['demo'],
          start: ['2026-03-02T10:00:00'],
          end: ['2026-03-02T10:05:00'],
          metric: ['edge_status_200', 'edge_status_5xx'],
        },
        api: 'metrics',
        token: 'static',
        status: 200,
      },
      { time: NOW + 1500, method: 'GET', path: DVR, query: {}, api: 'dvr-net', token: 'static', status: 200 },
      {
        time: NOW + 1500,
        method: 'GET',
        path: RECORDER,
        query: {},
        api: 'recorder-cloud',
        token: 'unknown',
        status: 401,
      },
    ]);
    expect(JSON.stringify(sim.requestLog)).not.toContain(secret);
  });

  it('reports a request on arrival, before its API looks at it, and one already logged at once', async () => {
    const sim = await startTestSimulator({ seed: 1, clock: new FakeClock(NOW) });
    const dvr = sim.requestArrived((e) => e.api === 'dvr-net');
    const answered = call(sim, METRICS);
    const arrived = await sim.requestArrived();
    expect(arrived).toMatchObject({ api: 'metrics', path: '/app/metrics/v1/resources', status: 0 });
    // What the test does now, the API sees: the token is refused although it was good when the request arrived.
    sim.setToken('demo', 'renewed');
    expect((await answered).status).toBe(403);
    expect(arrived.status).toBe(403);
    expect(await sim.requestArrived((e) => e.api === 'metrics')).toBe(arrived);
    await call(sim, DVR, 'renewed');
    expect(await dvr).toMatchObject({ api: 'dvr-net', status: 200 });
  });

  it('closes at once with a request in flight, cutting its socket', async () => {
    const sim = await startTestSimulator({
      seed: 1,
      clock: new FakeClock(NOW),
      faults: { slow: 1 },
      slowMs: 60_000,
    });
    const port = sim.port;
    const pending = fetch(`${sim.url}${DVR}`, { headers: { 'CDN-AUTH-TOKEN': 'demo-token' } });
    const failed = expect(pending).rejects.toThrow();
    await sim.requestArrived();
    expect(sim.requestLog).toHaveLength(1);
    // Its answer is due in 60 s, past the test's timeout: that close returns at all shows it did not wait for it.
    await sim.close();
    await failed;
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });
});

describe('request-rate limit', () => {
  it('answers 429 with Retry-After above N requests per second per token, in each API shape', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock, rateLimit: 3 });
    const first = [];
    for (let i = 0; i < 3; i++) first.push(await call(sim, DVR));
    expect(first.map((r) => r.status)).toEqual([200, 200, 200]);

    const metrics = await call(sim, METRICS);
    expect(metrics.status).toBe(429);
    expect(Number(metrics.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Object.keys(JSON.parse(metrics.text))).toEqual(['description']);
    const dvr = await call(sim, DVR);
    expect(dvr.status).toBe(429);
    expect(Object.keys(JSON.parse(dvr.text)).sort()).toEqual(['description', 'status']);
    const rec = await call(sim, RECORDER);
    expect(rec.status).toBe(429);
    expect(rec.type).toMatch(/^text\/plain/);
    expect(rec.retryAfter).not.toBeNull();

    // Another token has its own budget.
    expect(
      (
        await call(
          sim,
          '/app/metrics/v1/?account=acme&start=2026-03-02T10:00:00&end=2026-03-02T10:01:00',
          'acme-token',
        )
      ).status,
    ).toBe(200);

    const limited = sim.requestLog.filter((e) => e.fault === 'rate-limit');
    expect(limited).toHaveLength(3);
    expect(limited.every((e) => e.status === 429)).toBe(true);

    // The window slides: one second after the first three, the token may go on.
    await clock.advance(1000);
    expect((await call(sim, DVR)).status).toBe(200);
    sim.setRateLimit(undefined);
    for (let i = 0; i < 5; i++) expect((await call(sim, DVR)).status).toBe(200);
  });

  it('counts only admitted requests and says how long to wait', async () => {
    const clock = new FakeClock(NOW);
    const sim = await startTestSimulator({ seed: 1, clock, rateLimit: 2 });
    await call(sim, DVR);
    await clock.advance(400);
    await call(sim, DVR);
    await clock.advance(300);
    expect((await call(sim, DVR)).status).toBe(429);
    await clock.advance(299); // 999 ms after the first
    expect((await call(sim, DVR)).status).toBe(429);
    await clock.advance(1); // the first leaves the window
    expect((await call(sim, DVR)).status).toBe(200);
    expect((await call(sim, DVR)).status).toBe(429);
  });
});

describe('parseSimulatorArgs', () => {
  it('parses every flag, in both --flag value and --flag=value forms', () => {
    const { options, listen } = parseSimulatorArgs([
      '--port',
      '9100',
      '--host=0.0.0.0',
      '--seed',
      '7',
      '--lag=90',
      '--rate-limit',
      '20',
      '--slow-ms',
      '250',
      '--trickle-ms=40',
      '--gzip',
      'on',
      '--request-time-shape',
      'flat',
      '--fault-429',
      '0.05',
      '--fault-500=0.01',
      '--fault-502',
      '0.01',
      '--fault-503',
      '0.01',
      '--fault-504',
      '0.02',
      '--fault-reset',
      '0.01',
      '--fault-slow',
      '0.01',
      '--fault-malformed',
      '0.03',
      '--fault-trickle',
      '0.02',
    ]);
    expect(listen).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(options).toEqual({
      seed: 7,
      lagSeconds: 90,
      rateLimit: 20,
      slowMs: 250,
      trickleMs: 40,
      gzip: true,
      requestTimeShape: 'flat',
      faults: {
        '429': 0.05,
        '500': 0.01,
        '502': 0.01,
        '503': 0.01,
        '504': 0.02,
        reset: 0.01,
        slow: 0.01,
        malformed: 0.03,
        trickle: 0.02,
      },
    });
  });

  it('has defaults and names the flag of every error', () => {
    const { options, listen } = parseSimulatorArgs([]);
    expect(options.seed).toBeTypeOf('number');
    expect(options.faults).toBeUndefined();
    expect(listen.host).toBe('127.0.0.1');
    expect(() => parseSimulatorArgs(['--fault-418', '0.1'])).toThrow(/--fault-418/);
    expect(() => parseSimulatorArgs(['--verbose'])).toThrow(/--verbose/);
    expect(() => parseSimulatorArgs(['--port', 'http'])).toThrow(/--port/);
    expect(() => parseSimulatorArgs(['--seed'])).toThrow(/--seed/);
    expect(() => parseSimulatorArgs(['--fault-500', '1.2'])).toThrow(/--fault-500/);
    expect(() => parseSimulatorArgs(['--request-time-shape', 'list'])).toThrow(/--request-time-shape/);
    expect(() => parseSimulatorArgs(['--fault-500', '0.6', '--fault-reset', '0.6'])).toThrow(/more than 1/);
  });

  it("speaks the exporter parser's language: same errors for the same mistakes, -h and --help", () => {
    const both = (args: string[]) => {
      const messages: string[] = [];
      for (const parse of [
        () => parseSimulatorArgs(args),
        () => parseCommandLine(['check-config', ...args]),
      ]) {
        try {
          parse();
          messages.push('no error');
        } catch (e) {
          expect(e).toBeInstanceOf(UsageError);
          messages.push((e as Error).message);
        }
      }
      return messages;
    };
    expect(both(['--nope'])).toEqual(['unknown flag --nope', 'unknown flag --nope']);
    expect(both(['--help=yes'])).toEqual(['flag --help takes no value', 'flag --help takes no value']);
    expect(both(['extra'])[0]).toBe('unexpected argument "extra"');
    expect(() => parseSimulatorArgs(['--host'])).toThrow('flag --host needs a value');
    // A negative value is only taken in the --flag=value form, and then checked.
    expect(() => parseSimulatorArgs(['--lag', '-1'])).toThrow(/--lag=VALUE/);
    expect(() => parseSimulatorArgs(['--lag=-1'])).toThrow('--lag: expected seconds >= 0, got "-1"');
    expect(parseSimulatorArgs(['-h']).help).toBe(true);
    expect(parseSimulatorArgs(['--port', '0', '--help']).help).toBe(true);
    expect(parseSimulatorArgs(['--port', '0']).help).toBe(false);
  });
});
