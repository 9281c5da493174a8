/**
 * One worker thread that parses answer bodies off the event loop: the life of a parse pool's worker (./pool.ts).
 * The worker starts with the first body sent, a body's buffer moves to it (transferred, not copied), each reply settles the request
 * of its id, and the worker is let go when it is not needed:
 *
 * - it dies: the requests it held fail (the clients make them `malformed` answers, retried at the next poll) and
 *   the next body starts a new one;
 * - it has been idle for `idleMs`: it is stopped, since an isolate keeps the heap it grew to (a new one starts with
 *   the next body; V8 gives a stopped isolate's pages back about 8 s later);
 * - recycle() (after the series shrank): it is stopped as soon as it holds no request;
 * - close() (the exporter's stop): requests in it fail, and the channel takes no more.
 *
 * If the worker's file is missing (the sources run without a build), `available` is false and the caller parses
 * inline; that is logged once. Only polls use the worker, so it does not keep an otherwise idle process alive.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ResourceLimits, Worker } from 'node:worker_threads';
import { type Clock, systemClock } from '../clock.js';
import type { Logger } from '../log.js';

export interface WorkerChannelOptions {
  /** For messages: `traffic parse worker`. */
  name: string;
  url: URL;
  resourceLimits?: ResourceLimits;
  /** A worker idle for this long is stopped (0: as soon as it holds no request). */
  idleMs: number;
  /** Times the idle wait. */
  clock?: Clock;
  log?: Logger;
  /** Logged once when the worker's file is missing. */
  missingMessage: string;
}

interface Pending<Reply> {
  resolve(r: Reply): void;
  reject(err: unknown): void;
}

export class WorkerChannel<Reply extends { id: number }> {
  readonly available: boolean;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending<Reply>>();
  private nextId = 1;
  private closedFlag = false;
  /** recycle() was asked for while requests were in flight: stop the worker when the last one ends. */
  private recycleWhenIdle = false;
  /** Ends the idle wait of the current worker, if one is running. */
  private idle: AbortController | undefined;
  private readonly clock: Clock;
  /** Workers started so far (a restarted one counts again). */
  started = 0;
  /** Workers stopped for being idle. */
  retired = 0;

  constructor(private readonly opts: WorkerChannelOptions) {
    this.clock = opts.clock ?? systemClock;
    this.available = existsSync(fileURLToPath(opts.url));
    if (!this.available) opts.log?.warn({ worker: fileURLToPath(opts.url) }, opts.missingMessage);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /**
   * Sends `build(id)` with `bytes` moved to the worker (copied first when they are a view of a larger buffer) and
   * resolves with the worker's reply of that id. Once closed it refuses, and starts no worker.
   */
  send(bytes: Uint8Array, build: (id: number, bytes: Uint8Array) => unknown): Promise<Reply> {
    if (this.closedFlag) return Promise.reject(new Error(`${this.opts.name} closed`));
    const worker = this.worker ?? this.start();
    this.idle?.abort();
    this.idle = undefined;
    const id = this.nextId++;
    const own =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(build(id, own), [own.buffer as ArrayBuffer]);
    });
  }

  /** Stops the worker once it holds no request (now, or when its last one ends). The next body starts a new one. */
  recycle(): void {
    const worker = this.worker;
    if (worker === undefined) return;
    if (this.pending.size > 0) {
      this.recycleWhenIdle = true;
      return;
    }
    this.recycleWhenIdle = false;
    this.stop(worker);
  }

  /** Stops the worker; requests still in it fail, and the channel takes no more (callers parse inline). */
  async close(): Promise<void> {
    this.closedFlag = true;
    const worker = this.worker;
    this.idle?.abort();
    this.idle = undefined;
    this.worker = undefined;
    this.failAll(new Error(`${this.opts.name} closed`));
    await worker?.terminate();
  }

  private start(): Worker {
    const worker = new Worker(
      this.opts.url,
      this.opts.resourceLimits ? { resourceLimits: this.opts.resourceLimits } : {},
    );
    this.started++;
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0 && this.worker === worker) {
        if (this.recycleWhenIdle) this.recycle();
        else this.idleFrom(worker);
      }
      p.resolve(reply);
    });
    const gone = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new Error(`${this.opts.name} stopped: ${why}`));
    };
    worker.on('error', (err) => gone(err.message));
    worker.on('exit', (code) => gone(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  private stop(worker: Worker): void {
    this.idle?.abort();
    this.idle = undefined;
    this.worker = undefined;
    void worker.terminate();
  }

  /** Stops `worker` after idleMs unless a request comes first. */
  private idleFrom(worker: Worker): void {
    const idle = new AbortController();
    this.idle = idle;
    this.clock.sleep(this.opts.idleMs, idle.signal).then(
      () => {
        if (this.idle !== idle || this.worker !== worker || this.pending.size > 0) return;
        this.retired++;
        this.opts.log?.debug({ idleMs: this.opts.idleMs }, `${this.opts.name} idle: stopped`);
        this.stop(worker);
      },
      () => {
        // a request came, or the channel closed
      },
    );
  }

  private failAll(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }
}
