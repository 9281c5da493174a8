/**
 * The parse worker (a worker_threads entry; see ./pool.ts): takes `{id, api, bytes, arg}`, parses the body as
 * that API's inline parser does and answers `{id, packed}` (its codec's packed form, buffers transferred) or
 * `{id, error}`. It holds no state between messages. A traffic answer is read element by element (./elements.ts),
 * so its heap holds about one record at a time.
 */
import { parentPort } from 'node:worker_threads';
import type { ApiName } from '../http/errors.js';
import { dvrCodec } from './dvr.js';
import type { AnswerCodec } from './packing.js';
import { recordingsCodec } from './recordings.js';
import { trafficCodec } from './traffic.js';

export interface ParseRequest {
  id: number;
  api: ApiName;
  bytes: Uint8Array;
  /** The codec's `arg`: what the answer is checked against. */
  arg: unknown;
}

export type ParseReply =
  | { id: number; packed: unknown }
  | { id: number; error: { malformed: boolean; detail: string } };

const CODECS = new Map<ApiName, AnswerCodec<never, unknown, unknown>>(
  [trafficCodec, dvrCodec, recordingsCodec].map((c) => [c.api, c]),
);

const port = parentPort;
if (!port) throw new Error('offloop/worker.js runs as a worker thread (see src/offloop/pool.ts)');

port.on('message', (req: ParseRequest) => {
  let reply: ParseReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const codec = CODECS.get(req.api);
    if (!codec) throw new Error(`no parser for the ${req.api} API`);
    const packed = codec.pack(req.bytes, req.arg as never);
    reply = { id: req.id, packed };
    transfer = codec.transferables(packed);
  } catch (err) {
    // ApiError does not survive structured cloning as itself; its kind and words do.
    const malformed = err instanceof Error && (err as { kind?: unknown }).kind === 'malformed';
    const detail = malformed ? ((err as { detail?: string }).detail ?? err.message) : String(err);
    reply = { id: req.id, error: { malformed, detail } };
  }
  port.postMessage(reply, transfer);
});
