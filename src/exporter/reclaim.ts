/**
 * Memory given back after the series shrink (issue 15: a resource set that grows and shrinks again must not keep
 * the process at its high-water RSS).
 *
 * Measured on the exporter process (bench/process-shrink.ts: 100k series, a burst to 800k for two windows, back
 * to 100k): without this, RSS stays at the burst's level (650 MB against 240 MB before) for as long as one
 * watches. Three parts hold it:
 * - V8's heap keeps the freed pages (committed 200 MB for 57 MB live, 96 MB of them pooled). Its memory reducer,
 *   which would give them back, never runs here: it waits for a low allocation rate, and that estimate is only
 *   updated by GCs, so in a process that allocates little between polls it stays "high" (--trace-memory-reducer
 *   says so every 8 s). A regular major GC keeps the pages; a last-resort GC (what V8 does under memory
 *   pressure) releases them: 230 MB.
 * - The traffic parse worker's own heap, grown to the biggest answer it parsed (140 MB committed for 6 MB live):
 *   dropping the idle worker releases it (the next big answer starts a new one): 100 MB.
 * - glibc's arenas (~130 MB more than before): freed buffers the allocator keeps. Not reachable from here;
 *   `MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=32768` (set in the Docker image) bring it to ~40 MB.
 *
 * So when the store has shrunk to at most half of its largest size since the last reclaim, by at least
 * `minDrop` series, this waits `settleMs` (the /metrics text is rebuilt without the deleted series, answers in
 * flight are let go), then reclaims once. The last-resort GC stops the event loop for as long as a full
 * collection of what is left takes (100-280 ms with 100k series left, on a loaded 2-core machine), once per shrink;
 * growth and steady polls never trigger it.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';

export interface ShrinkReclaimOptions {
  clock: Clock;
  log: Logger;
  /** Aborted at stop: a reclaim still waiting is dropped. */
  signal: AbortSignal;
  /** Series the store holds now. */
  size(): number;
  /** Gives back what can be given back (see releaseMemory). */
  reclaim(): void;
  /** Smallest drop that is worth a reclaim (default 50,000 series). */
  minDrop?: number;
  /** Wait between seeing the shrink and reclaiming (default 5 s). */
  settleMs?: number;
}

/** How much the RSS moved, for the log line. */
export type RssReader = () => number;

export class ShrinkReclaim {
  private highWater = 0;
  private waiting = false;
  private readonly minDrop: number;
  private readonly settleMs: number;
  /** Reclaims done so far. */
  reclaims = 0;

  constructor(
    private readonly opts: ShrinkReclaimOptions,
    private readonly rss: RssReader = () => process.memoryUsage.rss(),
  ) {
    this.minDrop = opts.minDrop ?? 50_000;
    this.settleMs = opts.settleMs ?? 5000;
  }

  /** Call after every change of the store; cheap (its size read and compared) unless it has just shrunk. */
  changed(): void {
    const size = this.opts.size();
    if (size > this.highWater) this.highWater = size;
    if (this.waiting || size > this.highWater / 2 || this.highWater - size < this.minDrop) return;
    this.waiting = true;
    this.opts.clock.sleep(this.settleMs, this.opts.signal).then(
      () => this.run(),
      () => {
        // stopped while waiting: nothing to give back any more
      },
    );
  }

  private run(): void {
    this.waiting = false;
    const from = this.highWater;
    const to = this.opts.size();
    // Grown again meanwhile: not a shrink any more.
    if (to > from / 2 || from - to < this.minDrop) return;
    const rssBefore = this.rss();
    const t = performance.now();
    try {
      this.opts.reclaim();
    } catch (err) {
      this.opts.log.warn({ err }, 'giving memory back after the series shrank failed');
    }
    this.reclaims++;
    this.highWater = to;
    this.opts.log.info(
      {
        seriesFrom: from,
        seriesTo: to,
        rssMbBefore: Math.round(rssBefore / 1e6),
        rssMbAfter: Math.round(this.rss() / 1e6),
        ms: Math.round(performance.now() - t),
      },
      'series shrank: memory given back',
    );
  }
}

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
let gc: GcFunction | undefined;

/**
 * A last-resort major GC: every unreachable object collected and the heap's free pages returned to the system.
 * Node offers no call for it; `--expose-gc` is set for contexts made from now on and one is made to fetch the
 * function (the main context, and so user code, does not get a `gc` global).
 */
export function lastResortGc(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as GcFunction;
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
