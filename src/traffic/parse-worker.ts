/**
 * The traffic parse worker (a worker_threads entry; see ./parse-pool.ts): takes `{id, bytes, opts}`, answers
 * `{id, packed}` (./packed.ts, its buffers transferred) or `{id, error}`. It holds no state between messages. An
 * answer is read element by element (./parse-elements.ts), so its heap holds about one record at a time.
 */
import { parentPort } from 'node:worker_threads';
import { type PackedTrafficResponse, transferables } from './packed.js';
import type { ParseMetricsOptions } from './parse.js';
import { parseTrafficBodyPacked } from './parse-elements.js';

export interface ParseRequest {
  id: number;
  bytes: Uint8Array;
  opts: ParseMetricsOptions;
}

export type ParseReply =
  | { id: number; packed: PackedTrafficResponse }
  | { id: number; error: { malformed: boolean; detail: string } };

const port = parentPort;
if (!port) throw new Error('parse-worker.js runs as a worker thread (see src/traffic/parse-pool.ts)');

port.on('message', (req: ParseRequest) => {
  let reply: ParseReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const packed = parseTrafficBodyPacked(req.bytes, req.opts);
    reply = { id: req.id, packed };
    transfer = transferables(packed);
  } catch (err) {
    // ApiError does not survive structured cloning as itself; its kind and words do.
    const malformed = err instanceof Error && (err as { kind?: unknown }).kind === 'malformed';
    const detail = malformed ? ((err as { detail?: string }).detail ?? err.message) : String(err);
    reply = { id: req.id, error: { malformed, detail } };
  }
  port.postMessage(reply, transfer);
});
