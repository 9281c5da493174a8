/**
 * For the web config tests: the real exporter app (a fake store behind it) served through startWebServer, and a
 * client that reports what a user would check: status, headers, body, the negotiated protocol and the
 * certificate the server presented, or the error when the connection is refused.
 */
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import type { Logger } from '../../src/log.js';
import type { ServerLimits } from '../../src/server/limits.js';
import { AuthCache } from '../../src/web/auth.js';
import { startWebServer, type WebServer } from '../../src/web/server.js';
import { WebConfigSource } from '../../src/web/source.js';
import { exporterApp } from '../helpers/fake-exposition.js';

export interface Served {
  web: WebServer;
  source: WebConfigSource;
  cache: AuthCache;
  port: number;
  url: string;
}

export async function serve(
  file: string,
  log: Logger,
  openPaths: string[] = [],
  limits?: ServerLimits,
): Promise<Served> {
  const source = new WebConfigSource(file, log);
  const cache = new AuthCache();
  const web = await startWebServer({
    app: exporterApp(log),
    listen: { host: '127.0.0.1', port: 0 },
    source,
    openPaths: new Set(openPaths),
    log,
    authCache: cache,
    ...(limits ? { limits } : {}),
  });
  const { port } = web.server.address() as AddressInfo;
  return { web, source, cache, port, url: `${web.scheme}://127.0.0.1:${port}` };
}

export function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/**
 * `$2y$` bcrypt hashes at cost 10, made once with Debian's `htpasswd -nbBC 10 USER PASSWORD` (apache2-utils 2.4)
 * and kept here, so the web tests prove the format htpasswd writes without needing htpasswd on the machine.
 */
const HTPASSWD_LINES: Record<string, string> = {
  'alice:correct horse': '$2y$10$.4zR0ffUe0.qLvlVBYHoWup9esWzewPWprQWKvmKpwfNxv96rtuEm',
  'bob:hunter2': '$2y$10$upow/KomU2SfWhWIw2MNBOH17v/8tJj7LZacQOX6s3FDMetlOhL9S',
  'alice:x': '$2y$10$phJ3aMhIKDdjMfFzq77.NuY.OCBZnO38XztAR3zVRNsCwttvy20um',
  'prometheus:s3cret pass': '$2y$10$2KFWNP6SHDpqO1wSl4s6c.a/wOyJnq1jrIdVo96uAfrAILAen5V8q',
  'alice:pa55word': '$2y$10$HWja3d2y2dR2mLuthFiPWuIrKXQzVhs3ljFIuse89qjaRqP7agpvu',
};

/** htpasswd's hash of `password` for `user` (from the lines above; a pair not there is a mistake in the test). */
export function htpasswd(user: string, password: string): string {
  const hash = HTPASSWD_LINES[`${user}:${password}`];
  if (!hash) throw new Error(`no htpasswd line kept for ${user}; make one with htpasswd -nbBC 10 and add it`);
  return hash;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  alpn: string | false;
  protocol: string | null;
  cipher: string;
  fingerprint: string;
}

export interface ClientOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  user?: string;
  password?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** The protocol the server picks when a client offers h2 and http/1.1, as Go's client does. */
export function alpnChoice(url: string, ca: Buffer): Promise<string | false> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: hostname, port: Number(port), ca, servername: 'localhost', ALPNProtocols: ['h2', 'http/1.1'] },
      () => {
        const alpn = socket.alpnProtocol ?? false;
        socket.destroy();
        resolve(alpn);
      },
    );
    socket.on('error', reject);
  });
}

/** One GET over a new TLS connection (HTTP/1.1); rejects with the connection error when refused. */
export function get(url: string, path: string, o: ClientOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (o.user !== undefined) {
      headers.authorization = `Basic ${Buffer.from(`${o.user}:${o.password ?? ''}`).toString('base64')}`;
    }
    // ALPN offers only http/1.1: this client speaks HTTP/1 (get2 speaks HTTP/2).
    const options: https.RequestOptions & { ALPNProtocols: string[] } = {
      agent: false,
      headers,
      ca: o.ca,
      cert: o.cert,
      key: o.key,
      ALPNProtocols: ['http/1.1'],
      minVersion: o.minVersion,
      maxVersion: o.maxVersion,
      servername: 'localhost',
      timeout: 5000,
    };
    const req = https.request(`${url}${path}`, options, (res) => {
      const socket = res.socket as TLSSocket;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          alpn: socket.alpnProtocol ?? false,
          protocol: socket.getProtocol(),
          cipher: socket.getCipher().name,
          fingerprint: socket.getPeerX509Certificate()?.fingerprint256 ?? '',
        }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** One GET over HTTP/2 (a new session). */
export function get2(
  url: string,
  path: string,
  o: ClientOptions = {},
): Promise<{ status: number; body: string; alpn: string | false; headers: http2.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: o.ca, servername: 'localhost' });
    session.on('error', reject);
    const headers: http2.OutgoingHttpHeaders = { ':path': path };
    if (o.user !== undefined) {
      headers.authorization = `Basic ${Buffer.from(`${o.user}:${o.password ?? ''}`).toString('base64')}`;
    }
    const stream = session.request(headers);
    let status = 0;
    let got: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      got = h;
      status = Number(h[':status']);
    });
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const alpn = session.alpnProtocol ?? false;
      session.close();
      resolve({ status, body: Buffer.concat(chunks).toString('utf8'), alpn, headers: got });
    });
    stream.on('error', (err) => {
      session.close();
      reject(err);
    });
    stream.end();
  });
}
