/**
 * Parsing DVR, recordings and inventory answers off the event loop (issue 15; the inventory since issue 25). A 10 MB answer (a DVR stream with ~300k
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
 * The worker's life (started with the first big body, restarted after it dies, stopped after 5 s idle, ended by
 * close() at the exporter's stop) is src/http/worker-channel.ts's, shared with the traffic parser.
 */
import { type Clock, systemClock } from '../clock.js';
import type { InventoryBodyParser } from '../discovery/client.js';
import { type InventoryResponse, parseInventoryBody, unpackInventory } from '../discovery/response.js';
import type { DvrBodyParser } from '../dvr/client.js';
import { unpackDvrStreamResponse } from '../dvr/packed.js';
import { type DvrStreamResponse, parseDvrBody } from '../dvr/response.js';
import { malformed } from '../http/parse.js';
import { WorkerChannel } from '../http/worker-channel.js';
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
  /** A worker idle for this long is stopped (default 5000 ms). */
  idleMs?: number;
  /** Times the idle wait (default: the system clock). */
  clock?: Clock;
}

const DEFAULT_MIN_BYTES = 256 * 1024;
const DEFAULT_IDLE_MS = 5000;

export class WorkerAnswerParser {
  private readonly minBytes: number;
  private readonly channel: WorkerChannel<AnswerReply>;

  constructor(opts: AnswerParserOptions = {}) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.channel = new WorkerChannel<AnswerReply>({
      name: 'answer parse worker',
      url: opts.workerUrl ?? new URL('./parse-worker.js', import.meta.url),
      idleMs: opts.idleMs ?? DEFAULT_IDLE_MS,
      clock: opts.clock ?? systemClock,
      log: opts.log,
      missingMessage:
        'answer parse worker not found (run the build): big DVR and recordings answers are parsed on the event loop',
    });
  }

  /** Workers started so far (a restarted one counts again). */
  get started(): number {
    return this.channel.started;
  }

  readonly dvr: DvrBodyParser = (bytes, stream) => {
    if (!this.offLoop(bytes)) return parseDvrInline(bytes, stream);
    return this.send('dvr-net', bytes, stream) as Promise<DvrStreamResponse>;
  };

  readonly recordings: RecordingsBodyParser = (bytes, account) => {
    if (!this.offLoop(bytes)) return parseRecordingsInline(bytes, account);
    return this.send('recorder-cloud', bytes, account) as Promise<RecordingListResponse>;
  };

  readonly inventory: InventoryBodyParser = async (bytes) => {
    if (!this.offLoop(bytes)) return parseInventoryBody(bytes);
    return this.send('inventory', bytes, undefined) as Promise<InventoryResponse>;
  };

  /** Stops the worker; parses still in it fail, later ones run inline. */
  close(): Promise<void> {
    return this.channel.close();
  }

  private offLoop(bytes: Uint8Array): boolean {
    return bytes.byteLength >= this.minBytes && this.channel.available && !this.channel.closed;
  }

  private async send(api: AnswerApi, bytes: Uint8Array, arg: string | undefined): Promise<unknown> {
    const reply = await this.channel.send(bytes, (id, own): AnswerRequest => ({ id, api, bytes: own, arg }));
    if ('error' in reply) {
      throw reply.error.malformed
        ? malformed(api, reply.error.detail)
        : new Error(`answer parse worker: ${reply.error.detail}`);
    }
    if (reply.api === 'dvr-net') return unpackDvrStreamResponse(reply.packed);
    if (reply.api === 'inventory') return unpackInventory(reply.packed);
    return unpackRecordingList(reply.packed);
  }
}
