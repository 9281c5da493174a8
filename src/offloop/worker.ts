/**
 * The parse worker (a worker_threads entry; see ./pool.ts): takes `{id, api, module, bytes, arg}`, parses the body
 * as that API's inline parser does and answers `{id, packed}` (its codec's packed form, buffers transferred) or
 * `{id, error}`. It names no API: each request names its codec's module (AnswerCodec.module, a path under src/ as
 * built), which the worker imports on the first request that names it and keeps. It holds no other state between
 * messages. A traffic answer is read element by element (./elements.ts), so its heap holds about one record.
 */
import { parentPort } from 'node:worker_threads';
import type { ApiName } from '../http/errors.js';
import type { AnswerCodec } from './packing.js';

export interface ParseRequest {
  id: number;
  api: ApiName;
  /** AnswerCodec.module: the codec's module under src/ as built (`dvr/codec.js`). */
  module: string;
  bytes: Uint8Array;
  /** The codec's `arg`: what the answer is checked against. */
  arg: unknown;
}

export type ParseReply =
  | { id: number; packed: unknown }
  | { id: number; error: { malformed: boolean; detail: string } };

type AnyCodec = AnswerCodec<never, unknown, unknown>;

/** A codec's module: a folder and a file under src/, nothing else (the worker imports only what is built beside it). */
const MODULE = /^[a-z][a-z0-9-]*\/[a-z][a-z0-9-]*\.js$/;

/** The codecs' modules imported so far, by AnswerCodec.module. */
const modules = new Map<string, Promise<Record<string, unknown>>>();

async function codecOf(req: ParseRequest): Promise<AnyCodec> {
  if (!MODULE.test(req.module)) throw new Error(`no parser for the ${req.api} API (module ${req.module})`);
  let loading = modules.get(req.module);
  if (!loading) {
    // This file is src/offloop/worker.ts (built: dist/src/offloop/worker.js): src/ is one folder up.
    loading = import(new URL(`../${req.module}`, import.meta.url).href) as Promise<Record<string, unknown>>;
    modules.set(req.module, loading);
  }
  const exported = Object.values(await loading);
  const codec = exported.find(
    (v): v is AnyCodec => isCodec(v) && v.api === req.api && v.module === req.module,
  );
  if (!codec) throw new Error(`no parser for the ${req.api} API in ${req.module}`);
  return codec;
}

function isCodec(v: unknown): v is AnyCodec {
  return typeof v === 'object' && v !== null && 'pack' in v && 'api' in v && 'module' in v;
}

const port = parentPort;
if (!port) throw new Error('offloop/worker.js runs as a worker thread (see src/offloop/pool.ts)');

port.on('message', async (req: ParseRequest) => {
  let reply: ParseReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const codec = await codecOf(req);
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
