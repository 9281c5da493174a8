/**
 * The exporter's HTTP server under misuse (issue 15): clients that connect and send nothing, keep connections
 * idle, or ask for /metrics and never read it. Nothing they do may grow memory or file descriptors without
 * bound, or keep /healthz from answering.
 *
 * - Connections: at most `maxConnections` open. A connection beyond it closes the longest-idle one (no request
 *   in flight), or, when every one is busy, itself. So idle sockets can never reach the open-file limit, and a
 *   probe still gets in while they are held (Node's own `maxConnections` would refuse the probe instead).
 * - Idle: a keep-alive connection is closed after `idleTimeoutMs` without a request; request headers must arrive
 *   within it too (`headersTimeout`), and the whole request as well (`requestTimeout`).
 * - Writes: a response not fully written within `writeTimeoutMs` is cut, and a socket with no traffic either
 *   way for that long is closed. A client that never reads holds only references to the cached /metrics
 *   buffers (they are never copied per client, see ./app.ts), and only until then.
 * - Scrapes: at most `maxScrapesInFlight` /metrics responses are being written; more get 503 with
 *   `Retry-After: 1` (scrapeGate). The HTML pages (`/`, `/accounts/<name>`) have a gate of their own with the same
 *   limit, so browsers reloading them never take a scraper's place (nor the reverse).
 *
 * Applied by `serve` (src/web/server.ts) to whichever server it creates: node:http, node:https or node:http2's
 * secure server (HTTP/2 with HTTP/1.1 fallback). All three are net.Server-based: 'connection' gives the raw TCP
 * socket, while a request's `socket` is that socket (http), the TLS socket over it (https) or a proxy of the
 * session's TLS socket (HTTP/2). A request is matched to its connection by the peer's address and port, which
 * all three report alike.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Http2SecureServer, Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { ServerConfig } from '../config/index.js';

/** `server.*` of the configuration (src/config/typed-config.ts, where each is described). */
export type ServerLimits = ServerConfig;

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 512,
  maxScrapesInFlight: 100,
  idleTimeoutMs: 30_000,
  writeTimeoutMs: 60_000,
  authFailureBurst: 10,
  authFailureIntervalMs: 60_000,
};

export interface ConnectionStats {
  /** Connections open now. */
  open: number;
  /** Connections closed to make room (idle ones) or refused (all busy), since start. */
  shed: number;
}

interface Tracked {
  /** Requests in flight on it (HTTP/2: streams). */
  busy: number;
}

/** Which connection a socket (raw, TLS, or an HTTP/2 session's proxy of it) belongs to. */
function peerKey(
  socket: { remoteAddress?: string; remotePort?: number } | null | undefined,
): string | undefined {
  if (!socket || socket.remoteAddress === undefined || socket.remotePort === undefined) return undefined;
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

/**
 * Applies the limits to `server` (before or after listen). Returns live connection figures, for tests and
 * the landing page.
 */
export function applyServerLimits(
  server: Server | HttpsServer | Http2SecureServer,
  limits: ServerLimits = DEFAULT_SERVER_LIMITS,
): ConnectionStats {
  const stats: ConnectionStats = { open: 0, shed: 0 };
  // Insertion order is connection order: the first idle one found is the oldest idle connection.
  const sockets = new Map<Socket, Tracked>();
  const byPeer = new Map<string, Tracked>();

  if ('keepAliveTimeout' in server) {
    server.keepAliveTimeout = limits.idleTimeoutMs;
    server.headersTimeout = limits.idleTimeoutMs;
    server.requestTimeout = limits.idleTimeoutMs;
  }
  // Node checks headersTimeout/requestTimeout every connectionsCheckingInterval (30 s by default, fixed at
  // construction); the socket inactivity timeout also closes a connection that sends and reads nothing. On the
  // HTTP/2 server it is the session's inactivity timeout.
  server.setTimeout(limits.writeTimeoutMs);

  server.on('connection', (socket: Socket) => {
    if (sockets.size >= limits.maxConnections) {
      let victim: Socket | undefined;
      for (const [s, t] of sockets) {
        if (t.busy === 0) {
          victim = s;
          break;
        }
      }
      stats.shed++;
      if (victim === undefined) {
        socket.destroy();
        return;
      }
      victim.destroy();
      sockets.delete(victim);
    }
    const tracked: Tracked = { busy: 0 };
    const peer = peerKey(socket);
    sockets.set(socket, tracked);
    if (peer !== undefined) byPeer.set(peer, tracked);
    stats.open = sockets.size;
    socket.once('close', () => {
      sockets.delete(socket);
      if (peer !== undefined && byPeer.get(peer) === tracked) byPeer.delete(peer);
      stats.open = sockets.size;
    });
  });

  server.on(
    'request',
    (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
      const key = peerKey(req.socket);
      const t = key === undefined ? undefined : byPeer.get(key);
      if (t) t.busy++;
      const timer = setTimeout(() => {
        // A client that stopped reading: its response can never finish.
        res.destroy();
      }, limits.writeTimeoutMs);
      timer.unref();
      res.once('close', () => {
        clearTimeout(timer);
        if (t) t.busy--;
      });
    },
  );
  return stats;
}

/**
 * An Express middleware admitting at most `max` responses in flight through it; the others get 503 at once
 * (with Retry-After: 1), costing a few hundred bytes each. `what` names them in the 503's text.
 */
export function scrapeGate(max: number, what = 'scrapes') {
  let inFlight = 0;
  return (_req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (inFlight >= max) {
      res.statusCode = 503;
      res.setHeader('Retry-After', '1');
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.end(`too many ${what} in flight (server.max_scrapes_in_flight is ${max})\n`);
      return;
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
    });
    next();
  };
}
