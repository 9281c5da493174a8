/**
 * The process around an Exporter: listen, signals and graceful shutdown. Everything else is in src/exporter.
 * `listen` is plain HTTP; the exporter's command uses `serve`, which adds the web config (src/web): TLS, HTTP/2
 * and basic auth.
 */
import type { Server } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Express } from 'express';
import type { ListenAddress } from './config/index.js';
import type { Logger } from './log.js';
import { applyServerLimits, type ServerLimits } from './server/limits.js';

export function listen(app: Express, address: ListenAddress, limits?: ServerLimits): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(address.port, address.host ?? '::', (err?: Error) => {
      if (err) reject(err);
      else resolve(server);
    });
    server.once('error', reject);
    // Scrapes are short; a slow or hostile client must not hold a connection, memory or shutdown for long.
    applyServerLimits(server, limits);
  });
}

export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}

export { startWebServer as serve, type WebServer } from './web/server.js';

export function boundAddress(server: NetServer): string {
  const a = server.address();
  if (a === null || typeof a === 'string') return String(a);
  return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

/**
 * On SIGTERM or SIGINT: stop polling (in-flight requests get `graceMs` to finish), save state, close the server,
 * exit 0. A second signal exits at once with 1.
 */
export function handleSignals(parts: { stop: () => Promise<void> }, log: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    parts.stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
