/**
 * The basic-auth password check off the event loop (a worker_threads entry; see ./auth.ts): takes `{id, bytes}`,
 * `bytes` the UTF-8 JSON of `[password, hash]`, answers `{id, ok}`. bcryptjs is JavaScript: at cost 10 one check
 * is ~85 ms of CPU, in 100 ms chunks, so on the event loop a queue of checks delays every request between them.
 * It holds no state between messages.
 */
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

export interface CheckRequest {
  id: number;
  bytes: Uint8Array;
}

export interface CheckReply {
  id: number;
  ok: boolean;
}

const port = parentPort;
if (!port) throw new Error('web/bcrypt-worker.js runs as a worker thread (see src/web/auth.ts)');
const utf8 = new TextDecoder();

port.on('message', (req: CheckRequest) => {
  let ok = false;
  try {
    const [password, hash] = JSON.parse(utf8.decode(req.bytes)) as [string, string];
    ok = bcrypt.compareSync(password, hash);
  } catch {
    ok = false;
  }
  port.postMessage({ id: req.id, ok } satisfies CheckReply);
});
