/**
 * server.* limits (src/server/limits.ts) on each kind of server `serve` makes: plain HTTP, HTTPS, and HTTP/2 over
 * TLS. Idle connections beyond server.max_connections are shed, oldest first, so a probe still gets in, and a
 * connection with a request in flight is never the one shed. Certificates are made by openssl at test time.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { ServerLimits } from '../../src/server/limits.js';
import { makePki, type Pki } from '../helpers/certs.js';
import { get, get2, type Served, serve, writeFile } from './harness.js';

const LIMITS: ServerLimits = {
  maxConnections: 8,
  maxScrapesInFlight: 100,
  idleTimeoutMs: 30_000,
  writeTimeoutMs: 60_000,
  authFailureBurst: 10,
  authFailureIntervalMs: 60_000,
};
const IDLE = 24;

let dir: string;
let pki: Pki;
let ca: Buffer;
const running: Served[] = [];
const sockets: Socket[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-limits-'));
  pki = makePki(dir);
  pki.issue('server');
  ca = readFileSync(pki.ca.cert);
});

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of running.splice(0)) await s.web.close(100);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Opens `n` connections that send nothing (TLS: the handshake done, then silence); resolves once all are up. */
async function idleConnections(port: number, n: number, tls: boolean): Promise<Socket[]> {
  const out: Socket[] = [];
  for (let i = 0; i < n; i++) {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = tls
        ? tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => resolve(s))
        : netConnect({ host: '127.0.0.1', port }, () => resolve(s));
      s.once('error', reject);
    });
    socket.on('error', () => undefined);
    out.push(socket);
    sockets.push(socket);
  }
  return out;
}

const closedCount = (list: Socket[]) => list.filter((s) => s.destroyed || s.readyState === 'closed').length;

async function settle(list: Socket[], atLeast: number): Promise<void> {
  const until = Date.now() + 5000;
  while (closedCount(list) < atLeast && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

const kinds = [
  { name: 'plain HTTP', yaml: '', tls: false, http2: false },
  {
    name: 'HTTPS',
    yaml: 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nhttp_server_config:\n  http2: false\n',
    tls: true,
    http2: false,
  },
  {
    name: 'HTTP/2 over TLS',
    yaml: 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n',
    tls: true,
    http2: true,
  },
] as const;

describe('server.max_connections on every kind of server', () => {
  for (const kind of kinds) {
    it(`${kind.name}: idle connections beyond the ceiling are closed, oldest first, and /healthz still answers`, async () => {
      const s = await serve(
        writeFile(dir, `limits-${kinds.indexOf(kind)}.yml`, kind.yaml),
        silentLogger,
        [],
        LIMITS,
      );
      running.push(s);
      const idle = await idleConnections(s.port, IDLE, kind.tls);
      // Each connection beyond the 8th closed the oldest idle one.
      await settle(idle, IDLE - LIMITS.maxConnections);
      expect(closedCount(idle)).toBeGreaterThanOrEqual(IDLE - LIMITS.maxConnections);
      expect(closedCount(idle.slice(IDLE - LIMITS.maxConnections + 1))).toBe(0);
      const probe = kind.http2
        ? await get2(s.url, '/healthz', { ca })
        : kind.tls
          ? await get(s.url, '/healthz', { ca })
          : await fetch(`${s.url}/healthz`, { signal: AbortSignal.timeout(5000) });
      expect(probe.status).toBe(200);
    });
  }
});
