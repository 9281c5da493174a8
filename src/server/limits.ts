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
 *   `Retry-After: 1` (scrapeGate).
 *
 * Applied by main to whatever node:http or node:https server it creates (both are net.Server-based and emit
 * 'connection' and 'request' the same way).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ServerLimits {
  maxConnections: number;
  maxScrapesInFlight: number;
  idleTimeoutMs: number;
  writeTimeoutMs: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  maxConnections: 512,
  maxScrapesInFlight: 100,
  idleTimeoutMs: 30_000,
  writeTimeoutMs: 60_000,
};

export interface ConnectionStats {
  /** Connections open now. */
  open: number;
  /** Connections closed to make room (idle ones) or refused (all busy), since start. */
  shed: number;
}

interface Tracked {
  /** Requests in flight on it. */
  busy: number;
}

/**
 * Applies the limits to `server` (before or after listen). Returns live connection figures, for tests and
 * the landing page.
 */
export function applyServerLimits(
  server: Server,
  limits: ServerLimits = DEFAULT_SERVER_LIMITS,
): ConnectionStats {
  const stats: ConnectionStats = { open: 0, shed: 0 };
  // Insertion order is connection order: the first idle one found is the oldest idle connection.
  const sockets = new Map<Socket, Tracked>();

  server.keepAliveTimeout = limits.idleTimeoutMs;
  server.headersTimeout = limits.idleTimeoutMs;
  server.requestTimeout = limits.idleTimeoutMs;
  // Node checks headersTimeout/requestTimeout every connectionsCheckingInterval (30 s by default, fixed at
  // construction); the socket inactivity timeout also closes a connection that sends and reads nothing.
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
    sockets.set(socket, { busy: 0 });
    stats.open = sockets.size;
    socket.once('close', () => {
      sockets.delete(socket);
      stats.open = sockets.size;
    });
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const t = sockets.get(req.socket);
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
  });
  return stats;
}

/**
 * An Express middleware admitting at most `max` responses in flight through it; the others get 503 at once
 * (with Retry-After: 1), costing a few hundred bytes each.
 */
export function scrapeGate(max: number) {
  let inFlight = 0;
  return (_req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (inFlight >= max) {
      res.statusCode = 503;
      res.setHeader('Retry-After', '1');
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      res.end(`too many scrapes in flight (server.max_scrapes_in_flight is ${max})\n`);
      return;
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
    });
    next();
  };
}
