/**
 * The series store (docs/architecture.md): the CDN data families, rendered once per change and served from a
 * cached buffer.
 *
 * Caching, from the bottom up:
 * - each family's sample lines (identical in both formats: a counter's samples carry `_total` in both) are kept
 *   as one Buffer of exactly their size, re-rendered only when the family changed (its version moved);
 * - each format's exposition is the list of those buffers with the format's HELP/TYPE headers between them
 *   (families without series left out), rebuilt only when a family changed. It is never copied into one
 *   buffer: the server writes the list as is to every client (at 1M series one copy is ~85 MB, and it was made
 *   once per refresh and once more per scrape). render() concatenates it on demand, for callers that want one
 *   buffer (tests, small stores);
 * - its gzip is made on the first renderGzip after a change, and by a refresh for a format scraped with gzip.

 * Rendering 1M series takes a few hundred milliseconds. So the poller calls `refresh()` after applying a poll:
 * it re-renders changed families in chunks, yielding to the event loop between them, assembles the formats in
 * use, gzips those asked for gzip (on the libuv pool), and swaps them in at once. While a refresh runs,
 * render() and renderGzip() serve the last complete buffers. Without a refresh in flight they are always
 * current: a change not yet refreshed is rendered synchronously by the scrape that sees it.
 *
 * Whole windows only: the traffic applier counts a window in slices across turns of the event loop, inside the
 * store's CountingLock. Family bodies are rendered only while no window is half counted (a refresh waits for the
 * window in progress and holds the next one back while it renders; a scrape in the middle of a window is served the
 * last complete exposition). So each exposition is the state after a whole number of windows, and carries the
 * counted cursors of that state: what the exporter may save as seen once those bytes are served.
 *
 * Freeing: a replaced family body is freed at once (free-now.ts) as soon as nothing can read it any more: not the
 * family (its label source), not an exposition still current, not a response writing it (`hold`), not a gzip
 * stream reading it. A body that a response may still have been writing when it was cut off is left to the GC.
 */
import { createGzip, gzipSync } from 'node:zlib';
import { SeriesFamily } from './family.js';
import { freeNow } from './free-now.js';
import { openMetricsName } from './names.js';
import type {
  CountedCursors,
  CountingLock,
  ExpositionFormat,
  Family,
  FamilySpec,
  HeldChunks,
  SeriesStoreApi,
} from './types.js';

const FORMATS: readonly ExpositionFormat[] = ['text', 'openmetrics'];
/**
 * A refresh yields to the event loop after this much rendering (or `chunkSize` slots, whichever comes first): a
 * scrape or probe that arrives meanwhile waits about this long. Checked every RENDER_STEP slots (~0.5 ms).
 */
const RENDER_SLICE_MS = 8;
const RENDER_STEP = 2048;
/** A refresh whose family keeps gaining or losing series this often finishes that family synchronously. */
const MAX_RESTARTS = 3;

export interface SeriesStoreOptions {
  /** Slots a refresh() renders at most between two yields to the event loop (it also yields after 8 ms). Default 32768. */
  chunkSize?: number;
  /** zlib level of the cached gzip. Default 1: on this text level 6 took 5x as long for 8% less. */
  gzipLevel?: number;
}

interface Exposed {
  /** layout + the sum of the family versions it was built from: versions only grow, so equal means current. */
  stamp: number;
  /** Headers and bodies, in order; immutable. */
  chunks: Buffer[];
  /** Total bytes of chunks. */
  length: number;
  /** chunks concatenated, made by the first render() (never by the server). */
  text?: Buffer;
  gzip?: Buffer;
  /** The counted cursors of the state these bytes show. */
  counted: CountedCursors;
}

interface Body {
  body: Buffer;
  version: number;
}

const EMPTY = Buffer.alloc(0);

function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SeriesStore implements SeriesStoreApi, CountingLock {
  private readonly families: SeriesFamily[] = [];
  /** Family names, both as given and as OpenMetrics names them (a counter without `_total`). */
  private readonly names = new Set<string>();
  private readonly bodies = new Map<SeriesFamily, Body>();
  private readonly exposed: Partial<Record<ExpositionFormat, Exposed>> = {};
  private readonly gzipWanted: Record<ExpositionFormat, boolean> = { text: false, openmetrics: false };
  private readonly chunkSize: number;
  private readonly gzipLevel: number;
  private layout = 0;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Counted cursors now (set by the applier inside enter/leave). */
  private readonly counted = new Map<string, number>();
  /** Re-reads of late data counted so far (CountingLock.reread). */
  private rereads = 0;
  /** Counted cursors of the state the family bodies were rendered from. */
  private bodiesCounted: CountedCursors = new Map();
  /** Windows being counted (entered, not left). */
  private writers = 0;
  /** A refresh renders family bodies: no window may begin. */
  private reading = false;
  private readonly writerWaiters: (() => void)[] = [];
  private readonly readerWaiters: (() => void)[] = [];
  /** Expositions lent out (to responses writing them, to gzip streams reading them), with their holders. */
  private readonly lent = new Map<Exposed, number>();
  /** Replaced bodies not freed yet: sweep() frees each once nothing holds it. */
  private readonly retired = new Set<Buffer>();
  /** Buffers a cut-off response may still have handed to the transport: never freed here, left to the GC. */
  private readonly unsafeToFree = new WeakSet<ArrayBufferLike>();

  constructor(opts: SeriesStoreOptions = {}) {
    this.chunkSize = Math.max(1, opts.chunkSize ?? 32_768);
    this.gzipLevel = opts.gzipLevel ?? 1;
  }

  family(spec: FamilySpec): Family {
    const family = new SeriesFamily(spec);
    const om = openMetricsName(spec);
    for (const n of new Set([spec.name, om])) {
      if (this.names.has(n))
        throw new Error(`metric family ${spec.name} clashes with one already registered`);
    }
    this.names.add(spec.name).add(om);
    this.families.push(family);
    this.layout++;
    return family;
  }

  /** Series in every family. */
  get size(): number {
    let n = 0;
    for (const f of this.families) n += f.size;
    return n;
  }

  familyNames(): string[] {
    return this.families.map((f) => f.spec.name);
  }

  enter(): Promise<void> | undefined {
    if (!this.reading && this.readerWaiters.length === 0) {
      this.writers++;
      return undefined;
    }
    return new Promise((resolve) =>
      this.writerWaiters.push(() => {
        this.writers++;
        resolve();
      }),
    );
  }

  leave(): void {
    this.writers = Math.max(0, this.writers - 1);
    // Handed over at once: the applier goes on to its next window in the same turn.
    if (this.writers === 0 && this.readerWaiters.length > 0) {
      this.reading = true;
      this.readerWaiters.shift()!();
    }
  }

  setCounted(account: string, cursor: number): void {
    this.counted.set(account, cursor);
  }

  forgetCounted(account: string): void {
    this.counted.delete(account);
  }

  reread(): number {
    return ++this.rereads;
  }

  /** The counted cursors now, with the number of re-reads counted (an exposition's `counted`). */
  private countedNow(): CountedCursors {
    return Object.assign(new Map(this.counted), { rereads: this.rereads });
  }

  /**
   * Called with the counted cursors each time the bodies are rendered from a complete state (no window half
   * counted), before anything else changes: the moment to copy what goes with that exposition (a checkpoint).
   */
  settled: ((counted: CountedCursors) => void) | undefined;

  /**
   * Runs `read` once no window is half counted, with the counted cursors of that moment; no window begins until
   * it returns (a checkpoint of the counting state: src/exporter/cursor-book.ts).
   */
  async whole<T>(read: (counted: CountedCursors) => T): Promise<T> {
    const waiting = this.beginRead();
    if (waiting) await waiting;
    try {
      return read(this.countedNow());
    } finally {
      this.endRead();
    }
  }

  countedIn(format: ExpositionFormat): CountedCursors | undefined {
    return this.exposed[format]?.counted;
  }

  /** Undefined: reading now. Otherwise resolves once reading (no window half counted). */
  private beginRead(): Promise<void> | undefined {
    if (this.writers === 0 && !this.reading) {
      this.reading = true;
      return undefined;
    }
    return new Promise((resolve) => this.readerWaiters.push(resolve));
  }

  private endRead(): void {
    this.reading = false;
    if (this.readerWaiters.length > 0 && this.writers === 0) {
      this.reading = true;
      this.readerWaiters.shift()!();
      return;
    }
    for (const w of this.writerWaiters.splice(0)) w();
  }

  render(format: ExpositionFormat): Buffer {
    const e = this.current(format);
    e.text ??= e.chunks.length ? Buffer.concat(e.chunks, e.length) : EMPTY;
    return e.text;
  }

  hold(format: ExpositionFormat): HeldChunks {
    const e = this.current(format);
    this.lend(e);
    let held = true;
    return {
      chunks: e.chunks,
      release: (written: boolean) => {
        if (!held) return;
        held = false;
        if (!written) for (const c of e.chunks) this.unsafeToFree.add(c.buffer);
        this.giveBack(e);
      },
    };
  }

  private lend(e: Exposed): void {
    this.lent.set(e, (this.lent.get(e) ?? 0) + 1);
  }

  private giveBack(e: Exposed): void {
    const n = (this.lent.get(e) ?? 1) - 1;
    if (n > 0) {
      this.lent.set(e, n);
      return;
    }
    this.lent.delete(e);
    this.sweep();
  }

  /** A family's body left the store's table: it is freed by sweep() once nothing holds it. */
  private retire(body: Body | undefined): void {
    if (body && body.body.length > 0) this.retired.add(body.body);
  }

  /** Frees every retired body nothing can read any more (see the module comment). */
  private sweep(): void {
    if (this.retired.size === 0) return;
    const live = new Set<ArrayBufferLike>();
    for (const f of this.families) live.add(f.source.buffer);
    for (const b of this.bodies.values()) live.add(b.body.buffer);
    for (const e of Object.values(this.exposed)) for (const c of e.chunks) live.add(c.buffer);
    for (const e of this.lent.keys()) for (const c of e.chunks) live.add(c.buffer);
    for (const body of this.retired) {
      if (live.has(body.buffer)) continue;
      this.retired.delete(body);
      if (!this.unsafeToFree.has(body.buffer)) freeNow(body);
    }
  }

  renderGzip(format: ExpositionFormat): Buffer {
    this.gzipWanted[format] = true;
    const e = this.current(format);
    // One gzip member per chunk: no copy of the whole text is made, and multi-member gzip is one valid stream.
    e.gzip ??= e.chunks.length
      ? Buffer.concat(e.chunks.map((c) => gzipSync(c, { level: this.gzipLevel })))
      : gzipSync(EMPTY, { level: this.gzipLevel });
    return e.gzip;
  }

  /**
   * Re-renders what changed without blocking the event loop for long (see the module comment). Calls made
   * while one runs share one follow-up run, which picks up whatever changed in the meantime.
   */
  refresh(): Promise<void> {
    if (!this.running) {
      this.running = this.rebuild().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    if (!this.queued) {
      const next = () => {
        this.queued = undefined;
        return this.refresh();
      };
      this.queued = this.running.then(next, next);
    }
    return this.queued;
  }

  /** True while a refresh() is in flight. */
  get refreshing(): boolean {
    return this.running !== undefined;
  }

  private stamp(): number {
    let s = this.layout;
    for (const f of this.families) s += f.version;
    return s;
  }

  private current(format: ExpositionFormat): Exposed {
    const e = this.exposed[format];
    if (e && (this.running || e.stamp === this.stamp())) return e;
    // A window is half counted: the last complete state (its bodies) is what there is to show.
    if (e && this.writers > 0) return e;
    if (this.writers === 0) {
      for (const f of this.families) {
        if (f.version !== (this.bodies.get(f)?.version ?? 0)) {
          this.retire(this.bodies.get(f));
          this.bodies.set(f, { version: f.version, body: f.renderBody() });
        }
      }
      this.bodiesCounted = this.countedNow();
      this.settled?.(this.bodiesCounted);
    }
    const fresh = this.assemble(format);
    this.exposed[format] = fresh;
    this.sweep();
    return fresh;
  }

  private assemble(format: ExpositionFormat): Exposed {
    const chunks: Buffer[] = [];
    let stamp = this.layout;
    let length = 0;
    for (const f of this.families) {
      const b = this.bodies.get(f);
      stamp += b?.version ?? 0;
      if (b && b.body.length > 0) {
        const header = f.header(format);
        chunks.push(header, b.body);
        length += header.length + b.body.length;
      }
    }
    return { stamp, chunks, length, counted: this.bodiesCounted };
  }

  private async rebuild(): Promise<void> {
    const wait = this.beginRead();
    if (wait) await wait;
    try {
      for (const f of this.families) {
        if (f.version === (this.bodies.get(f)?.version ?? 0)) continue;
        const fresh = await this.renderBodyChunked(f);
        // A synchronous render during the await may have stored a newer body already.
        if (fresh.version > (this.bodies.get(f)?.version ?? 0)) {
          this.retire(this.bodies.get(f));
          this.bodies.set(f, fresh);
        } else {
          this.retire(fresh);
        }
      }
      this.bodiesCounted = this.countedNow();
      this.settled?.(this.bodiesCounted);
    } finally {
      // The bodies are immutable buffers: assembling and gzipping them need not hold windows back.
      this.endRead();
    }
    const built: { format: ExpositionFormat; exposed: Exposed }[] = [];
    for (const format of FORMATS) {
      if (this.exposed[format] !== undefined) built.push({ format, exposed: this.assemble(format) });
    }
    // zlib reads the chunks on the libuv pool: they are lent to it until it is done.
    for (const b of built) this.lend(b.exposed);
    try {
      await Promise.all(
        built
          .filter((b) => this.gzipWanted[b.format])
          .map(async (b) => {
            b.exposed.gzip = await gzipChunks(b.exposed.chunks, this.gzipLevel);
          }),
      );
      for (const { format, exposed } of built) {
        const old = this.exposed[format];
        if (!old || old.stamp <= exposed.stamp) this.exposed[format] = exposed;
      }
    } catch (err) {
      // A failed stream may not have finished with every chunk handed to it.
      for (const b of built) for (const c of b.exposed.chunks) this.unsafeToFree.add(c.buffer);
      throw err;
    } finally {
      for (const b of built) this.giveBack(b.exposed);
      this.sweep();
    }
  }

  private async renderBodyChunked(f: SeriesFamily): Promise<Body> {
    for (let attempt = 0; attempt < MAX_RESTARTS; attempt++) {
      const r = f.beginRender();
      for (;;) {
        const until = performance.now() + RENDER_SLICE_MS;
        const stop = r.next + this.chunkSize;
        while (r.next < stop && r.next < f.highWater) {
          f.renderRange(r, Math.min(stop, r.next + RENDER_STEP));
          if (performance.now() >= until) break;
        }
        if (r.next >= f.highWater) return { body: f.finishRender(r), version: r.version };
        await yieldToLoop();
        // A freed slot may have been reused by a series already written: start over.
        if (f.structure !== r.structure) {
          f.abandonRender(r);
          break;
        }
      }
    }
    return { body: f.renderBody(), version: f.version };
  }
}

/** One gzip stream over the chunks, on the libuv pool (the event loop only hands chunks over). */
function gzipChunks(chunks: readonly Buffer[], level: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const z = createGzip({ level });
    const out: Buffer[] = [];
    z.on('data', (c: Buffer) => out.push(c));
    z.on('end', () => resolve(Buffer.concat(out)));
    z.on('error', reject);
    for (const c of chunks) z.write(c);
    z.end();
  });
}
