/**
 * Parsing traffic answers off the event loop. A poll of 15k resources is a body of about 20 MB: JSON.parse and
 * the tolerant parser take about 230 ms in one piece on whichever thread runs them, and on the event loop that
 * is a scrape waiting as long. So bodies of at least `minBytes` go to one worker thread (./parse-worker.ts) and
 * come back packed (./packed.ts); smaller ones are parsed inline, where a round trip would cost more than they do.
 *
 * The worker starts with the first big body. If it dies, the parses it held fail (the HTTP client makes them
 * `malformed` answers, which the walker retries) and the next big body starts a new one. If its file is missing
 * (the sources run without a build), every body is parsed inline, and that is logged once.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { malformed } from '../http/parse.js';
import type { Logger } from '../log.js';
import { unpackTrafficResponseSliced } from './packed.js';
import { type ParseMetricsOptions, parseTrafficBody } from './parse.js';
import type { ParseReply, ParseRequest } from './parse-worker.js';
import type { TrafficResponse } from './response.js';

/** Reads a traffic answer's 2xx body. */
export type TrafficBodyParser = (bytes: Uint8Array, opts: ParseMetricsOptions) => Promise<TrafficResponse>;

export const parseInline: TrafficBodyParser = async (bytes, opts) => parseTrafficBody(bytes, opts);

export interface WorkerParserOptions {
  /** Bodies smaller than this are parsed inline (default 256 KiB; 0: every body goes to the worker). */
  minBytes?: number;
  /** The worker's module (default: parse-worker.js beside this module). */
  workerUrl?: URL;
  log?: Logger;
}

interface Pending {
  resolve(r: TrafficResponse): void;
  reject(err: unknown): void;
}

const DEFAULT_MIN_BYTES = 256 * 1024;

export class WorkerTrafficParser {
  private readonly minBytes: number;
  private readonly url: URL;
  private readonly available: boolean;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** recycle() was asked for while parses were in flight: drop the worker when the last one ends. */
  private recycleWhenIdle = false;
  /** Workers started so far (a restarted one counts again). */
  started = 0;

  constructor(opts: WorkerParserOptions = {}) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.url = opts.workerUrl ?? new URL('./parse-worker.js', import.meta.url);
    this.available = existsSync(fileURLToPath(this.url));
    if (!this.available) {
      opts.log?.warn(
        { worker: fileURLToPath(this.url) },
        'traffic parse worker not found (run the build): big answers are parsed on the event loop',
      );
    }
  }

  readonly parse: TrafficBodyParser = (bytes, opts) => {
    if (bytes.byteLength < this.minBytes || !this.available || this.closed) return parseInline(bytes, opts);
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    // The buffer moves to the worker instead of being copied, unless it holds more than these bytes.
    const own =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    return new Promise<TrafficResponse>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const req: ParseRequest = { id, bytes: own, opts };
      worker.postMessage(req, [own.buffer as ArrayBuffer]);
    });
  };

  /**
   * Drops the worker once it has no parse in flight (now, or when its last one ends): its heap, grown to the
   * biggest answer it parsed, goes with it (../exporter/reclaim.ts). The next big body starts a new one.
   */
  recycle(): void {
    const worker = this.worker;
    if (worker === undefined) return;
    if (this.pending.size > 0) {
      this.recycleWhenIdle = true;
      return;
    }
    this.recycleWhenIdle = false;
    this.worker = undefined;
    void worker.terminate();
  }

  /** Stops the worker; parses still in it fail, later ones run inline. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('traffic parse worker closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(this.url);
    this.started++;
    // Only polls use it: it must not keep a process alive that has nothing else to do.
    worker.unref();
    worker.on('message', (reply: ParseReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (this.recycleWhenIdle && this.pending.size === 0 && this.worker === worker) this.recycle();
      if ('packed' in reply) unpackTrafficResponseSliced(reply.packed).then(p.resolve, p.reject);
      else if (reply.error.malformed) p.reject(malformed('metrics', reply.error.detail));
      else p.reject(new Error(`traffic parse worker: ${reply.error.detail}`));
    });
    const gone = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new Error(`traffic parse worker stopped: ${why}`));
    };
    worker.on('error', (err) => gone(err.message));
    worker.on('exit', (code) => gone(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }
}
