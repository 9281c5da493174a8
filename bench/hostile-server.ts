/**
 * The exporter's HTTP app (./hostile-app.ts) in a worker thread, for bench/hostile.ts: the thread's own CPU time is
 * what a request costs the exporter, apart from the clients'.
 *
 * Posts `{ url }` once listening; answers `'cpu'` with `{ cpuMs }` (this thread's user + system time so far),
 * `'log'` with `{ lines, bytes }` (what the app logged at info so far) and `'close'` by closing and posting
 * `'closed'`.
 */
import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import { parentPort } from 'node:worker_threads';
import { createLogger } from '../src/log.js';
import { appFor } from './hostile-app.js';

/** What the app has logged so far. */
const logged = { lines: 0, bytes: 0 };
// At info, as the exporter runs by default: what a client can make it write.
const log = createLogger({
  level: 'info',
  format: 'json',
  destination: new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.lines += chunk.toString().split('\n').filter(Boolean).length;
      logged.bytes += chunk.length;
      done();
    },
  }),
});
const server = createServer(appFor(log));
const port = parentPort!;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  port.postMessage({ url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}` });
});
port.on('message', (msg: unknown) => {
  if (msg === 'cpu') {
    const u = process.threadCpuUsage();
    port.postMessage({ cpuMs: (u.user + u.system) / 1000 });
  } else if (msg === 'log') {
    port.postMessage({ ...logged });
  } else if (msg === 'close') {
    server.closeAllConnections();
    server.close(() => port.postMessage('closed'));
  }
});
