/**
 * Listening: plain HTTP without a web config (or one without TLS), HTTPS with TLS, and with `http2: true` (the
 * toolkit's default) an HTTP/2 server that also speaks HTTP/1.1 (ALPN picks), as Go's server does.
 *
 * With a web config every request passes the guard (rate limit, headers, basic auth), except the paths in
 * `openPaths`. Each new connection first asks the source for the config in force: a changed certificate, key,
 * client CA or TLS option is put into the server (`setSecureContext`) before that connection's handshake, so new
 * handshakes present the new certificate while connections already open carry on.
 */

import { createServer as createHttpServer, type Server as HttpServer, type RequestListener } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Express } from 'express';
import { type Clock, systemClock } from '../clock.js';
import type { ListenAddress } from '../config/index.js';
import type { Logger } from '../log.js';
import { applyServerLimits, type ServerLimits } from '../server/limits.js';
import { type AuthCache, guard, type Handler } from './auth.js';
import { http2Bridge } from './bridge.js';
import type { WebConfigSource, WebState } from './source.js';

export type AnyServer = HttpServer | HttpsServer | Http2SecureServer;

export interface WebServer {
  server: AnyServer;
  scheme: 'http' | 'https';
  /** Stops accepting; open requests get `graceMs`, then every connection is cut. */
  close(graceMs: number): Promise<void>;
}

export interface WebServerOptions {
  app: Express;
  listen: ListenAddress;
  /** Undefined: no --web.config.file, plain HTTP, nothing in front of the app. */
  source?: WebConfigSource;
  /** Served without basic auth (only /healthz, when --web.healthz-open says so). */
  openPaths?: ReadonlySet<string>;
  log: Logger;
  clock?: Clock;
  /** The server's own limits (server.* keys, src/server/limits.ts); the defaults when absent. */
  limits?: ServerLimits;
  /** The basic-auth verdict cache (a test or the benchmark reads its bcrypt count); a new one by default. */
  authCache?: AuthCache;
}

function applyTls(server: HttpsServer | Http2SecureServer, state: WebState): void {
  const tls = state.tls!;
  server.setSecureContext(tls.context);
  // tls.Server reads these two for each new connection; there is no setter for them.
  const s = server as unknown as { requestCert: boolean; rejectUnauthorized: boolean };
  s.requestCert = tls.requestCert;
  s.rejectUnauthorized = tls.rejectUnauthorized;
}

export function startWebServer(options: WebServerOptions): Promise<WebServer> {
  const { app, source, log } = options;
  const clock = options.clock ?? systemClock;
  const initial = source?.current();
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  let server: AnyServer;
  let handler: Handler = app as unknown as Handler;
  if (source) {
    const inner = initial?.tls && initial.config.http2 ? http2Bridge(app) : handler;
    handler = guard(inner, {
      config: () => source.current().config,
      openPaths: options.openPaths ?? new Set(),
      clock,
      ...(options.authCache ? { cache: options.authCache } : {}),
      ...(options.limits
        ? {
            failureLimit: {
              burst: options.limits.authFailureBurst,
              intervalMs: options.limits.authFailureIntervalMs,
            },
          }
        : {}),
    });
  }
  if (initial?.tls) {
    const tls = initial.tls;
    const base = { ...tls.context, requestCert: tls.requestCert, rejectUnauthorized: tls.rejectUnauthorized };
    const secure: HttpsServer | Http2SecureServer = initial.config.http2
      ? createSecureServer({ ...base, allowHTTP1: true }, handler)
      : createHttpsServer(base, handler as RequestListener);
    let applied = initial.version;
    // Before tls.Server's own 'connection' listener builds the TLS socket from the server's context.
    secure.prependListener('connection', () => {
      const state = source!.current();
      if (state.version !== applied && state.tls) {
        applyTls(secure, state);
        applied = state.version;
      }
    });
    // Before the HTTP server sees the connection: what OpenSSL's handshake does not check (tls.ts).
    secure.prependListener('secureConnection', (socket: TLSSocket) => {
      const why = source!.current().tls?.checkPeer(socket);
      if (why) {
        log.debug({ remote: socket.remoteAddress, reason: why }, 'TLS client refused');
        socket.destroy();
      }
    });
    secure.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      log.debug({ remote: socket.remoteAddress, err: err.message }, 'TLS handshake failed');
    });
    if (!('closeIdleConnections' in secure)) {
      secure.on('sessionError', (err: Error) => log.debug({ err: err.message }, 'HTTP/2 session error'));
      secure.on('session', (session: Http2Session) => {
        sessions.add(session);
        session.once('close', () => sessions.delete(session));
      });
    }
    server = secure;
  } else {
    server = createHttpServer(handler as RequestListener);
  }
  // Scrapes are short; a slow or hostile client must not hold a connection, memory or shutdown for long:
  // connection ceiling, idle, header and write timeouts (HTTP/2: the session's inactivity timeout), whichever
  // kind of server this is.
  applyServerLimits(server, options.limits);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const close = (graceMs: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        for (const s of sockets) s.destroy();
        resolve();
      }, graceMs);
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      if ('closeIdleConnections' in server) server.closeIdleConnections();
      for (const session of sessions) session.close();
    });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listen.port, options.listen.host ?? '::', () => {
      server.off('error', reject);
      resolve({ server, scheme: initial?.tls ? 'https' : 'http', close });
    });
  });
}
