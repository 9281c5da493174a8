/**
 * A minimal remote-write receiver for the remote_write process benchmark (./process-remote-write.ts), in a worker
 * thread: every `POST` is read to its end, its body bytes and the request counted, and answered `204` (what
 * Prometheus answers a write it took). Nothing is decompressed or decoded: the benchmark measures the exporter,
 * and bytes on the wire are the snappy bodies as sent. A request without `Content-Encoding: snappy` (remote write
 * 1.0 requires it) is counted apart and answered `400`, so a wrong client shows in the figures instead of passing.
 *
 * workerData: none. Posts `{ url }` once listening, `{ requests, bytes, refused }` (totals) after each answer;
 * a `'close'` message closes it and posts `'closed'`.
 */
import { createServer } from 'node:http';
import { parentPort } from 'node:worker_threads';

const port = parentPort!;
let requests = 0;
let bytes = 0;
let refused = 0;

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  let size = 0;
  req.on('data', (c: Buffer) => {
    size += c.length;
  });
  req.on('end', () => {
    if (req.headers['content-encoding'] !== 'snappy') {
      refused++;
      res.writeHead(400, { 'content-type': 'text/plain' }).end('expected Content-Encoding: snappy');
    } else {
      requests++;
      bytes += size;
      res.writeHead(204).end();
    }
    port.postMessage({ requests, bytes, refused });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  port.postMessage({ url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}` });
});
port.on('message', (msg: unknown) => {
  if (msg === 'close') {
    server.closeAllConnections();
    server.close(() => port.postMessage('closed'));
  }
});
