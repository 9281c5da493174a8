/**
 * A path with a bad percent-escape (issue 33, row 3): express decodes route parameters with decodeURIComponent,
 * which throws a URIError on `%`, `%ZZ`, a cut-off sequence or overlong UTF-8. That is the client's mistake:
 * 400, and nothing above a debug line in the log (an unauthenticated client could otherwise fill it with errors).
 */
import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createApp } from '../../src/server/app.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { FakeExposition, sampleFamilies } from '../helpers/fake-exposition.js';
import { listen, type Running, request } from './http.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** The app with a logger at debug that keeps each line's level and text. */
async function start(): Promise<{ url: string; lines: { level: number; text: string }[] }> {
  const lines: { level: number; text: string }[] = [];
  const dest = new PassThrough();
  dest.on('data', (c: Buffer) => {
    for (const text of c.toString().split('\n').filter(Boolean))
      lines.push({ level: (JSON.parse(text) as { level: number }).level, text });
  });
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'x', defaultMetrics: false });
  const clock = new FakeClock();
  const app = createApp({
    registry,
    store: new FakeExposition(sampleFamilies()),
    status: () => ({
      ready: true,
      version: 'x',
      startedAt: new Date(clock.now()),
      accounts: [],
      problems: { dvr: [], recordings: [] },
    }),
    log: createLogger({ destination: dest, level: 'debug', format: 'json' }),
    clock,
  });
  const r = await listen(app);
  running.push(r);
  return { url: r.url, lines };
}

/** pino's level numbers: debug is 20, info 30. */
const INFO = 30;

describe('a bad percent-escape in the path', () => {
  const bad = [
    '/accounts/100%',
    '/accounts/%ZZ',
    '/accounts/%',
    '/accounts/%E0%A4%A',
    '/accounts/%C0%AE%C0%AE',
  ];

  it.each(bad)('%s is 400 as text, with at most a debug line', async (path) => {
    const { url, lines } = await start();
    const res = await request(`${url}${path}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body.toString()).toBe('bad request: malformed percent-escape in the path\n');
    expect(lines.filter((l) => l.level >= INFO)).toEqual([]);
  });

  it('200 such requests write no line above debug, and the app keeps serving', async () => {
    const { url, lines } = await start();
    for (let i = 0; i < 200; i++) expect((await request(`${url}${bad[i % bad.length]}`)).status).toBe(400);
    expect(lines.filter((l) => l.level >= INFO)).toEqual([]);
    expect((await request(`${url}/metrics`)).status).toBe(200);
  });

  it('other paths with a bad escape are 404 or their usual answer, never 500', async () => {
    const { url, lines } = await start();
    for (const [path, status] of [
      ['/%ZZ', 404],
      ['/metrics%', 404],
      ['/metrics/%E0%A4%A', 404],
      ['/?refresh=%ZZ', 200],
      ['/healthz?x=%', 200],
      ['/accounts/%ZZ/more', 404],
    ] as const)
      expect((await request(`${url}${path}`)).status, path).toBe(status);
    expect(lines.filter((l) => l.level >= INFO)).toEqual([]);
  });

  it('a well-formed escape still reaches the route: an unknown account is 404', async () => {
    const { url } = await start();
    expect((await request(`${url}/accounts/no%20such`)).status).toBe(404);
  });
});
