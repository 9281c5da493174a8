/**
 * Parsing traffic answers off the event loop. A poll of 15k resources is a body of about 20 MB: JSON.parse and
 * the tolerant parser take about 230 ms in one piece on whichever thread runs them, and on the event loop that
 * is a scrape waiting as long. So bodies of at least `minBytes` go to one worker thread (./parse-worker.ts) and
 * come back packed (./packed.ts); smaller ones are parsed inline, where a round trip would cost more than they do.
 *
 * The worker starts with the first big body. If it dies, the parses it held fail (the HTTP client makes them
 * `malformed` answers, which the walker retries) and the next big body starts a new one. If its file is missing
 * (the sources run without a build), every body is parsed inline, and that is logged once.
 *
 * Between polls the worker has nothing to do, and its heap would stay resident all the same (a V8 isolate keeps
 * the pages it grew to): once it has been idle for `idleMs` (default 5 s) it is stopped, and the next big body
 * starts a new one (the event loop spends a few ms on that; the worker loads and compiles its code on its own
 * thread, so its first parse is slower than a warm one). Polls of a catch-up follow each other closely enough to
 * share one worker; steady polls, a minute apart, each start their own. Note that V8 hands a stopped isolate's
 * pages back to the system only about 8 s after it stopped.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type Clock, systemClock } from '../clock.js';
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
  /** A worker idle for this long is stopped (default 5000 ms; 0: as soon as it has nothing to parse). */
  idleMs?: number;
  /** Times the idle wait (default: the system clock). */
  clock?: Clock;
}

interface Pending {
  resolve(r: TrafficResponse): void;
  reject(err: unknown): void;
}

const DEFAULT_MIN_BYTES = 256 * 1024;
const DEFAULT_IDLE_MS = 5000;
/**
 * The worker's young generation, capped: it reads one element at a time (./parse-elements.ts), so what it
 * allocates dies young, and V8's default young generation (up to 48 MB) only made its heap 2.5x bigger (47 MB
 * against 20 MB at 8 MB, for a 22 MB answer, in the same time: `npm run bench`, suite `parse worker`).
 */
export const PARSE_WORKER_LIMITS = { maxYoungGenerationSizeMb: 8 } as const;

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
  private readonly idleMs: number;
  private readonly clock: Clock;
  private readonly log: Logger | undefined;
  /** Ends the idle wait of the current worker, if one is running. */
  private idle: AbortController | undefined;
  /** Workers started so far (a restarted one counts again). */
  started = 0;
  /** Workers stopped for being idle. */
  retired = 0;

  constructor(opts: WorkerParserOptions = {}) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.url = opts.workerUrl ?? new URL('./parse-worker.js', import.meta.url);
    this.idleMs = opts.idleMs ?? DEFAULT_IDLE_MS;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
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
    this.idle?.abort();
    this.idle = undefined;
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
    this.idle?.abort();
    this.idle = undefined;
    this.worker = undefined;
    void worker.terminate();
  }

  /** Stops the worker; parses still in it fail, later ones run inline. */
  async close(): Promise<void> {
    this.closed = true;
    this.idle?.abort();
    this.idle = undefined;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('traffic parse worker closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(this.url, { resourceLimits: PARSE_WORKER_LIMITS });
    this.started++;
    // Only polls use it: it must not keep a process alive that has nothing else to do.
    worker.unref();
    worker.on('message', (reply: ParseReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0 && this.worker === worker) {
        if (this.recycleWhenIdle) this.recycle();
        else this.idleFrom(worker);
      }
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

  /** Stops `worker` after idleMs unless a parse comes first. */
  private idleFrom(worker: Worker): void {
    const idle = new AbortController();
    this.idle = idle;
    this.clock.sleep(this.idleMs, idle.signal).then(
      () => {
        if (this.idle !== idle || this.worker !== worker || this.pending.size > 0) return;
        this.idle = undefined;
        this.worker = undefined;
        this.retired++;
        this.log?.debug({ idleMs: this.idleMs }, 'traffic parse worker idle: stopped');
        void worker.terminate();
      },
      () => {
        // a parse came, or the parser closed
      },
    );
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }
}
