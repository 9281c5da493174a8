/**
 * The HTTP server's limits (src/server/limits.ts) on a plain node:http server on loopback: the timeouts it sets
 * (idle for keep-alive, headers and the whole request; the write timeout on sockets), a connection beyond
 * server.max_connections refused when every open one has a request in flight (it never takes a busy one's place),
 * a response a client never lets finish cut after the write timeout, and scrapeGate's 503 past its limit, freed
 * when a response closes. Shedding idle connections, oldest first, on each kind of server: test/web/limits.test.ts.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/config/duration.js';
import { DEFAULTS } from '../../src/config/schema.js';
import {
  applyServerLimits,
  type ConnectionStats,
  DEFAULT_SERVER_LIMITS,
  type ServerLimits,
  scrapeGate,
} from '../../src/server/limits.js';
import { waitFor } from '../helpers/stack.js';
import { request } from './http.js';

const LIMITS: ServerLimits = { ...DEFAULT_SERVER_LIMITS, maxConnections: 2 };

interface Started {
  server: http.Server;
  url: string;
  port: number;
  stats: ConnectionStats;
}

const servers: http.Server[] = [];
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((done) => {
          s.closeAllConnections();
          s.close(() => done());
        }),
    ),
  );
});

async function start(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ServerLimits = LIMITS,
): Promise<Started> {
  const server = http.createServer(handler);
  const stats = applyServerLimits(server, limits);
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, port, stats };
}

/** A raw connection that sends one request and keeps what comes back; `closed` once the server ends it. */
function rawRequest(port: number, path = '/') {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let received = '';
  socket.on('data', (d) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return { socket, closed, received: () => received };
}

describe('applyServerLimits', () => {
  it('sets the idle timeout on keep-alive, headers and the whole request, and the write timeout on sockets', async () => {
    const limits = { ...LIMITS, idleTimeoutMs: 12_000, writeTimeoutMs: 34_000 };
    const { server } = await start((_req, res) => res.end(), limits);
    expect(server.keepAliveTimeout).toBe(12_000);
    expect(server.headersTimeout).toBe(12_000);
    expect(server.requestTimeout).toBe(12_000);
    expect(server.timeout).toBe(34_000);
  });

  it('has the configuration defaults of server.* as its own defaults', () => {
    expect(DEFAULT_SERVER_LIMITS.maxConnections).toBe(DEFAULTS.server.max_connections);
    expect(DEFAULT_SERVER_LIMITS.maxScrapesInFlight).toBe(DEFAULTS.server.max_scrapes_in_flight);
    expect(DEFAULT_SERVER_LIMITS.idleTimeoutMs).toBe(parseDuration(DEFAULTS.server.idle_timeout));
    expect(DEFAULT_SERVER_LIMITS.writeTimeoutMs).toBe(parseDuration(DEFAULTS.server.write_timeout));
  });

  it('refuses a connection beyond max_connections when every open one has a request in flight', async () => {
    const held: ServerResponse[] = [];
    const { port, stats } = await start((_req, res) => {
      held.push(res);
    });
    const a = rawRequest(port);
    const b = rawRequest(port);
    await waitFor(() => held.length === 2, 10_000, 'two requests in flight');
    expect(stats.open).toBe(2);

    const c = rawRequest(port);
    await c.closed;
    expect(c.received()).toBe('');
    expect(stats.shed).toBe(1);
    // The busy ones were kept and answer.
    for (const res of held) res.end('done');
    await waitFor(
      () => a.received().endsWith('done') && b.received().endsWith('done'),
      10_000,
      'the answers',
    );
    expect(a.socket.destroyed).toBe(false);
    a.socket.destroy();
    b.socket.destroy();
    await waitFor(() => stats.open === 0, 10_000, 'the connections counted closed');
  });

  it('cuts a response that is not written whole within the write timeout', async () => {
    const { port } = await start(
      (_req, res) => {
        res.writeHead(200, { 'Content-Length': '100' });
        res.write('part of it');
      },
      { ...LIMITS, writeTimeoutMs: 200 },
    );
    const r = rawRequest(port);
    await r.closed;
    expect(r.received()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\npart of it$/);
  });
});

describe('scrapeGate', () => {
  it('answers 503 with Retry-After: 1 past its limit, naming the setting, and lets the next in once one closes', async () => {
    const held: ServerResponse[] = [];
    const gate = scrapeGate(1, 'page views');
    const { url } = await start((req, res) => gate(req, res, () => held.push(res)));
    const first = request(url);
    await waitFor(() => held.length === 1, 10_000, 'the first response in flight');

    const refused = await request(url);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(refused.body.toString()).toBe(
      'too many page views in flight (server.max_scrapes_in_flight is 1)\n',
    );

    held[0]!.end('one');
    expect((await first).body.toString()).toBe('one');
    const second = request(url);
    await waitFor(() => held.length === 2, 10_000, 'the next response let in');
    held[1]!.end('two');
    expect((await second).status).toBe(200);
  });

  it('frees its place when a client goes away before its response is written', async () => {
    const held: ServerResponse[] = [];
    const gate = scrapeGate(1);
    const { port, url } = await start((req, res) => gate(req, res, () => held.push(res)));
    const gone = rawRequest(port, '/metrics');
    await waitFor(() => held.length === 1, 10_000, 'the response in flight');
    expect((await request(url)).body.toString()).toMatch(/^too many scrapes in flight/);
    gone.socket.destroy();
    await waitFor(() => held[0]!.closed, 10_000, 'the response closed');
    const next = request(url);
    await waitFor(() => held.length === 2, 10_000, 'the next response let in');
    held[1]!.end('ok');
    expect((await next).status).toBe(200);
  });
});
