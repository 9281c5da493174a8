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
import { type Clock, systemClock } from '../clock.js';
import { malformed } from '../http/parse.js';
import { WorkerChannel } from '../http/worker-channel.js';
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
  private readonly channel: WorkerChannel<ParseReply>;

  constructor(opts: WorkerParserOptions = {}) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.channel = new WorkerChannel<ParseReply>({
      name: 'traffic parse worker',
      url: opts.workerUrl ?? new URL('./parse-worker.js', import.meta.url),
      resourceLimits: PARSE_WORKER_LIMITS,
      idleMs: opts.idleMs ?? DEFAULT_IDLE_MS,
      clock: opts.clock ?? systemClock,
      log: opts.log,
      missingMessage:
        'traffic parse worker not found (run the build): big answers are parsed on the event loop',
    });
  }

  /** Workers started so far (a restarted one counts again). */
  get started(): number {
    return this.channel.started;
  }

  /** Workers stopped for being idle. */
  get retired(): number {
    return this.channel.retired;
  }

  readonly parse: TrafficBodyParser = async (bytes, opts) => {
    const c = this.channel;
    if (bytes.byteLength < this.minBytes || !c.available || c.closed) return parseInline(bytes, opts);
    const reply = await c.send(bytes, (id, own): ParseRequest => ({ id, bytes: own, opts }));
    if ('packed' in reply) return unpackTrafficResponseSliced(reply.packed);
    if (reply.error.malformed) throw malformed('metrics', reply.error.detail);
    throw new Error(`traffic parse worker: ${reply.error.detail}`);
  };

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
}
