/**
 * Parsing DVR and recordings answers off the event loop (issue 15). A 10 MB answer (a DVR stream with ~300k
 * ranges, or thousands of recording settings listed with every instance) takes 100-200 ms of JSON.parse and
 * tolerant parsing in one piece: on the event loop, /healthz and /metrics wait that long (a 50 MB one, seconds).
 * So bodies of at least `minBytes` go to one small worker thread shared by both APIs (./parse-worker.ts) and come
 * back packed (src/dvr/packed.ts, src/recordings/packed.ts), to be unpacked in slices of a few milliseconds;
 * smaller ones are parsed inline, where a round trip would cost more than they do.
 *
 * Why a worker and not parsing in slices on the event loop: JSON.parse cannot be cut into slices (a 10 MB body is
 * 30-60 ms in one call), and a resumable JSON parser of our own would be slower and another parser to trust. Why
 * packed: a structured clone of ~300k small objects costs the receiving thread 70-130 ms in one piece (measured),
 * about what parsing them did; the packed form is a few transferred arrays and one string.
 *
 * The worker starts with the first big body. If it dies, the parses it held fail (the HTTP client makes them
 * `malformed` answers: the round fails and is retried at its next interval) and the next big body starts a new one.
 * If its file is missing (the sources run without a build), every body is parsed inline, and that is logged once.
 * close() (the exporter's stop) ends it; later bodies are parsed inline.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { DvrBodyParser } from '../dvr/client.js';
import { unpackDvrStreamResponse } from '../dvr/packed.js';
import { type DvrStreamResponse, parseDvrBody } from '../dvr/response.js';
import { malformed } from '../http/parse.js';
import type { Logger } from '../log.js';
import type { RecordingsBodyParser } from '../recordings/client.js';
import { unpackRecordingList } from '../recordings/packed.js';
import { parseRecordingsBody, type RecordingListResponse } from '../recordings/response.js';
import type { AnswerApi, AnswerReply, AnswerRequest } from './parse-worker.js';

export const parseDvrInline: DvrBodyParser = async (bytes, stream) => parseDvrBody(bytes, stream);
export const parseRecordingsInline: RecordingsBodyParser = async (bytes, account) =>
  parseRecordingsBody(bytes, account);

export interface AnswerParserOptions {
  /** Bodies smaller than this are parsed inline (default 256 KiB; 0: every body goes to the worker). */
  minBytes?: number;
  /** The worker's module (default: parse-worker.js beside this module). */
  workerUrl?: URL;
  log?: Logger;
}

interface Pending {
  api: AnswerApi;
  resolve(r: unknown): void;
  reject(err: unknown): void;
}

const DEFAULT_MIN_BYTES = 256 * 1024;

export class WorkerAnswerParser {
  private readonly minBytes: number;
  private readonly url: URL;
  private readonly available: boolean;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** Workers started so far (a restarted one counts again). */
  started = 0;

  constructor(opts: AnswerParserOptions = {}) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.url = opts.workerUrl ?? new URL('./parse-worker.js', import.meta.url);
    this.available = existsSync(fileURLToPath(this.url));
    if (!this.available) {
      opts.log?.warn(
        { worker: fileURLToPath(this.url) },
        'answer parse worker not found (run the build): big DVR and recordings answers are parsed on the event loop',
      );
    }
  }

  readonly dvr: DvrBodyParser = (bytes, stream) => {
    if (!this.offLoop(bytes)) return parseDvrInline(bytes, stream);
    return this.send('dvr-net', bytes, stream) as Promise<DvrStreamResponse>;
  };

  readonly recordings: RecordingsBodyParser = (bytes, account) => {
    if (!this.offLoop(bytes)) return parseRecordingsInline(bytes, account);
    return this.send('recorder-cloud', bytes, account) as Promise<RecordingListResponse>;
  };

  /** Stops the worker; parses still in it fail, later ones run inline. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('answer parse worker closed'));
    await worker?.terminate();
  }

  private offLoop(bytes: Uint8Array): boolean {
    return bytes.byteLength >= this.minBytes && this.available && !this.closed;
  }

  private send(api: AnswerApi, bytes: Uint8Array, arg: string | undefined): Promise<unknown> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    // The buffer moves to the worker instead of being copied, unless it holds more than these bytes.
    const own =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { api, resolve, reject });
      const req: AnswerRequest = { id, api, bytes: own, arg };
      worker.postMessage(req, [own.buffer as ArrayBuffer]);
    });
  }

  private start(): Worker {
    const worker = new Worker(this.url);
    this.started++;
    // Only polls use it: it must not keep a process alive that has nothing else to do.
    worker.unref();
    worker.on('message', (reply: AnswerReply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      if ('error' in reply) {
        const { error } = reply;
        p.reject(
          error.malformed
            ? malformed(p.api, error.detail)
            : new Error(`answer parse worker: ${error.detail}`),
        );
      } else if (reply.api === 'dvr-net') unpackDvrStreamResponse(reply.packed).then(p.resolve, p.reject);
      else unpackRecordingList(reply.packed).then(p.resolve, p.reject);
    });
    const gone = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new Error(`answer parse worker stopped: ${why}`));
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
