/**
 * The scrape-time baseline of the process benchmark: a bare node:http server, in a worker thread, sending the
 * bytes it is given (the exporter's own /metrics body) with a Content-Length and nothing else.
 *
 * workerData: `{ body: Uint8Array }`. Posts `{ url }` once listening; `'close'` closes it and posts `'closed'`.
 */
import { createServer } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const body = Buffer.from((workerData as { body: Uint8Array }).body);
const port = parentPort!;
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'content-length': body.length });
  res.end(body);
});
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
