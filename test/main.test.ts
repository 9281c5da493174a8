/**
 * src/main.ts: the process around an Exporter. `listen` serves an app on the address given (and refuses one in
 * use), `boundAddress` is the address as the log and the demo banner print it, `closeServer` lets requests in
 * flight finish within the grace and cuts them after it, and `handleSignals` stops once on SIGTERM or SIGINT,
 * exits 0 when stopped, 1 when the stop fails or a second signal comes. The built command's shutdown (SIGTERM with a
 * request hanging, the cursor saved) is checked in test/cli/run.test.ts; here the functions in-process, with
 * process.exit observed (not run) and the signals emitted to the process's own listeners.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { boundAddress, closeServer, handleSignals, listen } from '../src/main.js';
import { captureLog } from './helpers/log-capture.js';

/** Every server a test starts, closed after it (its connections cut). */
const opened: NetServer[] = [];
afterEach(async () => {
  await Promise.all(
    opened.splice(0).map(
      (s) =>
        new Promise<void>((r) => {
          if (!s.listening) return r();
          s.close(() => r());
          (s as Server).closeAllConnections?.();
        }),
    ),
  );
});

function appWith(handler: express.RequestHandler) {
  const app = express();
  app.get('/', handler);
  return app;
}

async function served(app: express.Express, host = '127.0.0.1'): Promise<Server> {
  const server = await listen(app, { host, port: 0 });
  opened.push(server);
  return server;
}

/** One GET over its own connection; resolves with the status and body, or the error that cut it. */
function get(address: string): Promise<{ status: number; body: string } | Error> {
  return new Promise((resolve) => {
    const req = httpRequest(`http://${address}/`, { agent: false, timeout: 20_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', resolve);
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 20 s')));
    req.on('error', resolve);
    req.end();
  });
}

describe('listen and boundAddress', () => {
  it('serves the app on the port bound, printed as host:port', async () => {
    const server = await served(appWith((_req, res) => void res.send('hello')));
    const address = boundAddress(server);
    expect(address).toMatch(/^127\.0\.0\.1:[1-9]\d*$/);
    expect(await get(address)).toEqual({ status: 200, body: 'hello' });
  });

  it('prints an IPv6 address in brackets, as a URL needs it', async () => {
    const server = await listen(
      appWith((_req, res) => void res.send('six')),
      { host: '::1', port: 0 },
    ).catch((e: NodeJS.ErrnoException) => e);
    if (server instanceof Error) {
      // A machine without IPv6 loopback cannot bind ::1 at all.
      expect(server.code).toMatch(/EADDRNOTAVAIL|EAFNOSUPPORT/);
      return;
    }
    opened.push(server);
    const address = boundAddress(server);
    expect(address).toMatch(/^\[::1\]:\d+$/);
    expect(await get(address)).toEqual({ status: 200, body: 'six' });
  });

  it('prints a socket path as it is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'main-sock-'));
    try {
      const path = join(dir, 'x.sock');
      const server = createNetServer();
      opened.push(server);
      await new Promise<void>((r) => server.listen(path, r));
      expect(boundAddress(server)).toBe(path);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an address in use with its error, serving nothing', async () => {
    const first = await served(appWith((_req, res) => void res.send('first')));
    const port = Number(boundAddress(first).split(':').pop());
    const refused = await listen(
      appWith((_req, res) => void res.send('second')),
      {
        host: '127.0.0.1',
        port,
      },
    ).then(
      () => undefined,
      (e: NodeJS.ErrnoException) => e,
    );
    expect(refused?.code).toBe('EADDRINUSE');
    expect(await get(`127.0.0.1:${port}`)).toEqual({ status: 200, body: 'first' });
  });
});

describe('closeServer', () => {
  it('lets a request in flight finish within the grace, then stops listening', async () => {
    let onArrive!: () => void;
    const arrived = new Promise<void>((r) => {
      onArrive = r;
    });
    let release!: () => void;
    const server = await served(
      appWith((_req, res) => {
        release = () => void res.send('finished');
        onArrive();
      }),
    );
    const address = boundAddress(server);
    const answer = get(address);
    await arrived;
    // The grace is far longer than the test: closing ends when the request does, not when the grace does.
    const closed = closeServer(server, 600_000);
    release();
    expect(await answer).toEqual({ status: 200, body: 'finished' });
    await closed;
    expect(server.listening).toBe(false);
    expect(await get(address)).toBeInstanceOf(Error);
  });

  it('cuts a request still in flight once the grace is over, and resolves', async () => {
    let onArrive!: () => void;
    const arrived = new Promise<void>((r) => {
      onArrive = r;
    });
    // A handler that never answers.
    const server = await served(appWith(() => onArrive()));
    const answer = get(boundAddress(server));
    await arrived;
    await closeServer(server, 50);
    expect(await answer).toBeInstanceOf(Error);
    expect(server.listening).toBe(false);
  });
});

class ExitCalled extends Error {}

/** Emits `signal` to the process's listeners; an exit that ended a listener is not an error. */
function signal(name: NodeJS.Signals): void {
  try {
    process.emit(name, name);
  } catch (e) {
    if (!(e instanceof ExitCalled)) throw e;
  }
}

describe('handleSignals', () => {
  const added: Array<[NodeJS.Signals, (...args: unknown[]) => void]> = [];
  afterEach(() => {
    for (const [signal, fn] of added.splice(0)) process.off(signal, fn);
    vi.restoreAllMocks();
  });

  /** handleSignals with `stop`, process.exit recorded instead of run, and the listeners it added. */
  /**
   * `returns`: whether the recorded process.exit returns (for an exit from a promise callback) or, as the real one
   * does not, ends the listener there (thrown, caught where the signal is emitted).
   */
  function install(stop: () => Promise<void>, returns = true) {
    const exits: number[] = [];
    vi.spyOn(process, 'exit').mockImplementation(((code?: number) => {
      exits.push(code ?? 0);
      if (!returns) throw new ExitCalled();
    }) as typeof process.exit);
    const before = new Map((['SIGTERM', 'SIGINT'] as const).map((s) => [s, process.listeners(s)]));
    const { log, lines } = captureLog();
    handleSignals({ stop }, log);
    for (const s of ['SIGTERM', 'SIGINT'] as const)
      for (const fn of process.listeners(s)) if (!before.get(s)!.includes(fn)) added.push([s, fn as never]);
    return { exits, lines };
  }

  it('listens for SIGTERM and SIGINT, stops once, and exits 0 when stopped', async () => {
    let stops = 0;
    let finish!: () => void;
    const { exits, lines } = install(() => {
      stops += 1;
      return new Promise<void>((r) => {
        finish = r;
      });
    });
    expect(added.map(([s]) => s).sort()).toEqual(['SIGINT', 'SIGTERM']);
    signal('SIGTERM');
    expect(stops).toBe(1);
    expect(exits).toEqual([]);
    finish();
    await vi.waitFor(() => expect(exits).toEqual([0]), { timeout: 10_000 });
    expect(lines.some((l) => l.includes('"shutting down"') && l.includes('"SIGTERM"'))).toBe(true);
    expect(lines.some((l) => l.includes('"stopped"'))).toBe(true);
  });

  it('exits 1 at once on a second signal while stopping, without stopping again', () => {
    let stops = 0;
    const { exits, lines } = install(() => {
      stops += 1;
      return new Promise<void>(() => undefined);
    }, false);
    signal('SIGINT');
    signal('SIGTERM');
    expect(stops).toBe(1);
    expect(exits).toEqual([1]);
    expect(lines.some((l) => l.includes('second signal'))).toBe(true);
  });

  it('exits 1 when the stop fails, logging why', async () => {
    const { exits, lines } = install(() => Promise.reject(new Error('state file not writable')));
    signal('SIGINT');
    await vi.waitFor(() => expect(exits).toEqual([1]), { timeout: 10_000 });
    expect(lines.some((l) => l.includes('shutdown failed') && l.includes('state file not writable'))).toBe(
      true,
    );
  });
});
