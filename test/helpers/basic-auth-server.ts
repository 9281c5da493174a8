/**
 * A web server with basic auth in front of the exporter app (a fake store behind it), `alice:right` its one user,
 * and a client that scrapes it as one user from one loopback address: for the auth-flood test and issue 25's
 * figures script, which try the password check as guessing clients would.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/log.js';
import type { AuthCache } from '../../src/web/auth.js';
import { startWebServer } from '../../src/web/server.js';
import { WebConfigSource } from '../../src/web/source.js';
import { exporterApp } from './fake-exposition.js';

export interface AliceServer {
  url: string;
  /** Stops the server and removes its web config. */
  close(): Promise<void>;
}

/** `hash` is alice's bcrypt hash of `right`; `burst` the failed attempts a client may make before 429. */
export async function startAliceServer(cache: AuthCache, hash: string, burst = 10): Promise<AliceServer> {
  const dir = mkdtempSync(join(tmpdir(), 'basic-auth-'));
  try {
    const file = join(dir, 'web.yml');
    writeFileSync(file, `basic_auth_users:\n  alice: ${hash}\n`);
    const web = await startWebServer({
      app: exporterApp(silentLogger),
      listen: { host: '127.0.0.1', port: 0 },
      source: new WebConfigSource(file, silentLogger),
      log: silentLogger,
      authCache: cache,
      limits: {
        maxConnections: 4096,
        maxScrapesInFlight: 100,
        idleTimeoutMs: 30_000,
        writeTimeoutMs: 60_000,
        authFailureBurst: burst,
        authFailureIntervalMs: 60_000,
      },
    });
    return {
      url: `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`,
      close: async () => {
        await web.close(100);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** GET /metrics as `user:password`; each `from` a loopback address of its own (distinct clients). The status. */
export function scrapeAs(url: string, user: string, password: string, from = 1): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/metrics`,
      {
        agent: false,
        localAddress: `127.0.${Math.floor(from / 250)}.${(from % 250) + 1}`,
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
