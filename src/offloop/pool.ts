/**
 * Parsing big answers off the event loop, for the three APIs. A poll of 15k resources is a body of about 20 MB:
 * JSON.parse and the tolerant parser take about 230 ms in one piece on whichever thread runs them, and on the
 * event loop that is a scrape waiting as long (a 10 MB DVR answer or recordings listing: 100-200 ms). So bodies of
 * at least `minBytes` go to one worker thread (./worker.ts) and come back packed (each API's AnswerCodec:
 * ./packing.ts), to be unpacked in slices of a few milliseconds; smaller ones are parsed inline, where a round
 * trip would cost more than they do. An API module asks for its own codec's parser (`parser`); `traffic` is the
 * parser the traffic pipeline is given.
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
 * pages back to the system only about 8 s after it stopped. The worker's life is ./channel.ts's.
 *
 * Why a worker and not parsing in slices on the event loop: JSON.parse cannot be cut into slices (a 10 MB body is
 * 30-60 ms in one call), and a resumable JSON parser of our own would be slower and another parser to trust. Why
 * packed: a structured clone of ~300k small objects costs the receiving thread 70-130 ms in one piece (measured),
 * about what parsing them did; the packed form is a few transferred arrays and one string.
 *
 * The exporter runs two pools, each with its worker: TRAFFIC_POOL (recycled when the series shrink) and
 * ANSWER_POOL (DVR and recordings), so that a traffic catch-up does not hold up a DVR round, nor the reverse.
 */
import type { ResourceLimits } from 'node:worker_threads';
import { type Clock, systemClock } from '../clock.js';
import { malformed } from '../http/parse.js';
import type { Logger } from '../log.js';
import type { BodyParsers } from '../poll/api-module.js';
import type { TrafficBodyParser } from '../traffic/client.js';
import { WorkerChannel } from './channel.js';
import type { AnswerCodec } from './packing.js';
import { trafficCodec } from './traffic.js';
import type { ParseReply, ParseRequest } from './worker.js';

/** What a pool is for: its name in messages and errors, and its worker's limits (default: Node's). */
export interface PoolKind {
  name: string;
  resourceLimits?: ResourceLimits;
}

/**
 * The traffic worker's young generation, capped: it reads one element at a time (./elements.ts), so what it
 * allocates dies young, and V8's default young generation (up to 48 MB) only made its heap 2.5x bigger (47 MB
 * against 20 MB at 8 MB, for a 22 MB answer, in the same time: `npm run bench`, suite `parse worker`).
 */
export const PARSE_WORKER_LIMITS = { maxYoungGenerationSizeMb: 8 } as const;

export const TRAFFIC_POOL: PoolKind = { name: 'traffic parse worker', resourceLimits: PARSE_WORKER_LIMITS };
export const ANSWER_POOL: PoolKind = { name: 'answer parse worker' };

export interface ParsePoolOptions {
  /** Bodies smaller than this are parsed inline (default 256 KiB; 0: every body goes to the worker). */
  minBytes?: number;
  /** The worker's module (default: worker.js beside this module). */
  workerUrl?: URL;
  log?: Logger;
  /** A worker idle for this long is stopped (default 5000 ms; 0: as soon as it has nothing to parse). */
  idleMs?: number;
  /** Times the idle wait (default: the system clock). */
  clock?: Clock;
}

const DEFAULT_MIN_BYTES = 256 * 1024;
const DEFAULT_IDLE_MS = 5000;

export class ParsePool implements BodyParsers {
  private readonly minBytes: number;
  private readonly channel: WorkerChannel<ParseReply>;
  /** Each codec's parser, made once (an account's poller asks for its API's at every start). */
  private readonly parsers = new Map<AnswerCodec<never, unknown, unknown>, unknown>();

  constructor(
    private readonly kind: PoolKind,
    opts: ParsePoolOptions = {},
  ) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.channel = new WorkerChannel<ParseReply>({
      name: kind.name,
      url: opts.workerUrl ?? new URL('./worker.js', import.meta.url),
      resourceLimits: kind.resourceLimits,
      idleMs: opts.idleMs ?? DEFAULT_IDLE_MS,
      clock: opts.clock ?? systemClock,
      log: opts.log,
      missingMessage: `${kind.name} not found (run the build): big answers are parsed on the event loop`,
    });
  }

  readonly traffic: TrafficBodyParser = this.parser(trafficCodec);

  /** Workers started so far (a restarted one counts again). */
  get started(): number {
    return this.channel.started;
  }

  /** Workers stopped for being idle. */
  get retired(): number {
    return this.channel.retired;
  }

  /**
   * Drops the worker once it has no parse in flight (now, or when its last one ends): its heap, grown to the
   * biggest answer it parsed, goes with it (../exporter/reclaim.ts). The next big body starts a new one.
   */
  recycle(): void {
    this.channel.recycle();
  }

  /** Stops the worker; parses still in it fail, later ones run inline. */
  close(): Promise<void> {
    return this.channel.close();
  }

  /** The body parser of `codec`'s API: inline below `minBytes` (or without a worker), in the worker above. */
  parser<Arg, Answer, Packed>(
    codec: AnswerCodec<Arg, Answer, Packed>,
  ): (bytes: Uint8Array, arg: Arg) => Promise<Answer> {
    const key = codec as unknown as AnswerCodec<never, unknown, unknown>;
    const made = this.parsers.get(key) as ((bytes: Uint8Array, arg: Arg) => Promise<Answer>) | undefined;
    if (made) return made;
    const parse = async (bytes: Uint8Array, arg: Arg): Promise<Answer> => {
      const c = this.channel;
      if (bytes.byteLength < this.minBytes || !c.available || c.closed) return codec.parse(bytes, arg);
      const reply = await c.send(
        bytes,
        (id, own): ParseRequest => ({ id, api: codec.api, module: codec.module, bytes: own, arg }),
      );
      if ('packed' in reply) return codec.unpack(reply.packed as Packed);
      if (reply.error.malformed) throw malformed(codec.api, reply.error.detail);
      throw new Error(`${this.kind.name}: ${reply.error.detail}`);
    };
    this.parsers.set(key, parse);
    return parse;
  }
}
