/**
 * The series store (docs/architecture.md): the CDN data families, rendered once per change and served from a
 * cached buffer.
 *
 * Caching, from the bottom up:
 * - each family's sample lines in text (a counter's samples carry `_total` in both text formats) are kept as one
 *   Buffer of exactly their size, re-rendered only when the family changed (its version moved). They are also the
 *   family's label source (family.ts), so they are rendered whatever the formats asked for;
 * - the bodies a format needs of its own, rendered only while that format is asked for (FORMAT_IDLE_MS): a
 *   counter's OpenMetrics body (each series with its `_created` sample when it has a start; a gauge's is its text
 *   body) and every family's protobuf body (its Metric messages; the MetricFamily header with the length is made
 *   when assembled);
 * - each format's exposition is the list of those buffers with the format's HELP/TYPE headers between them
 *   (families without series left out), rebuilt only when a family changed. It is never copied into one
 *   buffer: the server writes the list as is to every client (at 1M series one copy is ~85 MB, and it was made
 *   once per refresh and once more per scrape). render() concatenates it on demand, for callers that want one
 *   buffer (tests, small stores);
 * - its gzip is made on the first renderGzip after a change, and by a refresh for a format scraped with gzip;
 *   a format other than text asked for only gzipped keeps no bodies of its own at all: a refresh renders them
 *   one family at a time straight into its gzip (streamGzip).

 * Rendering 1M series takes a few hundred milliseconds. So the store refreshes itself after a change (with
 * `refreshLog`: on the next turn of the event loop, once per turn, and for a window being counted once it is
 * whole; the pollers tell it nothing): `refresh()` re-renders changed families in chunks, yielding to the event loop between them, assembles the formats in
 * use, gzips those asked for gzip (on the libuv pool), and swaps them in at once. While a refresh runs,
 * render() and renderGzip() serve the last complete buffers. Without a refresh in flight they are always
 * current: a change not yet refreshed is rendered synchronously by the scrape that sees it.
 *
 * Whole windows only: the traffic applier counts a window in slices across turns of the event loop, inside the
 * store's render lock (./render-lock.ts). Family bodies are rendered only while no window is half counted (a
 * refresh waits for the window in progress and holds the next one back while it renders; a scrape in the middle
 * of a window is served the last complete exposition). So each exposition is the state after a whole number of windows, and carries the
 * counted cursors of that state (traffic's ledger, src/traffic/counting-ledger.ts): what the exporter may save as
 * seen once those bytes are served.
 *
 * Freeing: a replaced family body is freed at once (free-now.ts) as soon as nothing can read it any more: not the
 * family (its label source), not an exposition still current, not a response writing it (`hold`), not a gzip
 * stream reading it. A body that a response may still have been writing when it was cut off is left to the GC.
 */
import { createGzip, gzipSync } from 'node:zlib';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { BodyLoans } from './body-loans.js';
import { SeriesFamily } from './family.js';
import { freeNow } from './free-now.js';
import { openMetricsName } from './names.js';
import { RenderLock } from './render-lock.js';
import { type Body, gzipChunks, renderSliced } from './sliced-render.js';
import type {
  CountedCursors,
  ExpositionFormat,
  Family,
  FamilySpec,
  HeldChunks,
  SeriesStoreApi,
} from './types.js';

const FORMATS: readonly ExpositionFormat[] = ['text', 'openmetrics', 'protobuf'];
/**
 * A format not asked for this long is no longer rebuilt by refreshes (its own bodies are freed); the next scrape
 * that asks for it waits for a refresh. Prometheus asks for one format, at its scrape interval (at most minutes).
 */
const FORMAT_IDLE_MS = 15 * 60_000;

export interface SeriesStoreOptions {
  /** Slots a refresh() renders at most between two yields to the event loop (it also yields after 8 ms). Default 32768. */
  chunkSize?: number;
  /** zlib level of the cached gzip. Default 1: on this text level 6 took 5x as long for 8% less. */
  gzipLevel?: number;
  /** The start of a counter created without one (Family.slot), and of format idleness. Default: the system clock. */
  clock?: Pick<Clock, 'now'>;
  /**
   * The store refreshes itself after every change of a family (a value, a series added or removed): once per turn
   * of the event loop, on the next, and for a window being counted (./render-lock.ts) once it is whole; a failed
   * refresh is logged here and the previous text stays served. Absent: only refresh() calls refresh it.
   */
  refreshLog?: Pick<Logger, 'error'>;
}

interface Exposed {
  /** layout + the sum of the family versions it was built from: versions only grow, so equal means current. */
  stamp: number;
  /**
   * Headers and bodies, in order; immutable. Empty when `plain` is false: a format only asked for gzipped keeps
   * its gzip and lets its own bodies go (see dropPlain).
   */
  chunks: Buffer[];
  /** The chunks are there (always for text). */
  plain: boolean;
  /** Total bytes of chunks. */
  length: number;
  /** chunks concatenated, made by the first render() (never by the server). */
  text?: Buffer;
  gzip?: Buffer;
  /** The counted cursors of the state these bytes show. */
  counted: CountedCursors;
}

const EMPTY = Buffer.alloc(0);

export class SeriesStore extends RenderLock implements SeriesStoreApi {
  private readonly families: SeriesFamily[] = [];
  /** Family names, both as given and as OpenMetrics names them (a counter without `_total`). */
  private readonly names = new Set<string>();
  /** Each family's text body (its label source). */
  private readonly bodies = new Map<SeriesFamily, Body>();
  /** Each family's bodies of its own in other formats (SeriesFamily.rendersOwn). */
  private readonly own = new Map<SeriesFamily, Partial<Record<ExpositionFormat, Body>>>();
  private readonly exposed: Partial<Record<ExpositionFormat, Exposed>> = {};
  private readonly gzipWanted: Record<ExpositionFormat, boolean> = {
    text: false,
    openmetrics: false,
    protobuf: false,
  };
  /** When each format was last asked for (clock ms); never asked: absent. */
  private readonly askedAt: Partial<Record<ExpositionFormat, number>> = {};
  /** When each format was last asked for without gzip (render, hold). */
  private readonly plainAskedAt: Partial<Record<ExpositionFormat, number>> = {};
  private readonly now: () => number;
  private readonly chunkSize: number;
  private readonly gzipLevel: number;
  private layout = 0;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Counted cursors of the state the family bodies were rendered from. */
  private bodiesCounted: CountedCursors = new Map();
  /** What is lent out and retired, freed once nothing can read it (./body-loans.ts). */
  private readonly loans = new BodyLoans<Exposed>((live) => {
    for (const f of this.families) live.add(f.source.buffer);
    for (const b of this.bodies.values()) live.add(b.body.buffer);
    for (const own of this.own.values()) for (const b of Object.values(own)) live.add(b.body.buffer);
    for (const e of Object.values(this.exposed)) for (const c of e.chunks) live.add(c.buffer);
  });

  constructor(opts: SeriesStoreOptions = {}) {
    super(opts.refreshLog);
    this.chunkSize = Math.max(1, opts.chunkSize ?? 32_768);
    this.gzipLevel = opts.gzipLevel ?? 1;
    const clock = opts.clock;
    this.now = clock ? () => clock.now() : Date.now;
  }

  family(spec: FamilySpec): Family {
    const family = new SeriesFamily(spec, this.now, this.touched);
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

  /**
   * Called with the counted cursors each time the bodies are rendered from a complete state (no window half
   * counted), before anything else changes: the moment to copy what goes with that exposition (a checkpoint).
   */
  settled: ((counted: CountedCursors) => void) | undefined;

  countedIn(format: ExpositionFormat): CountedCursors | undefined {
    return this.exposed[format]?.counted;
  }

  /**
   * Undefined when render/hold/renderGzip can serve `format` now. Otherwise (a format not asked for lately, with
   * no bodies yet; one kept only gzipped, asked for plain or out of date) resolves once a refresh built it: in
   * slices, as every refresh renders, so the first scrape in a new format does not hold the event loop for the
   * whole render (a few hundred ms at 1M series), and waits out a window being counted.
   */
  prepare(format: ExpositionFormat, gzip = false): Promise<void> | undefined {
    const e = this.exposed[format];
    // A gzip-only exposition out of date is brought up to date by a refresh (which streams it), not by the
    // scrape rendering every body of the format at once and keeping them.
    const ready =
      e !== undefined &&
      this.inUse(format) &&
      (e.plain || (gzip && e.gzip !== undefined && (this.running || e.stamp === this.stamp())));
    const now = this.now();
    this.askedAt[format] = now;
    if (gzip) this.gzipWanted[format] = true;
    else this.plainAskedAt[format] = now;
    return ready ? undefined : this.refresh();
  }

  private inUse(format: ExpositionFormat): boolean {
    const at = this.askedAt[format];
    return at !== undefined && this.now() - at <= FORMAT_IDLE_MS;
  }

  /** Whether the format's plain bodies are kept once gzipped: text always (the label source), others while asked. */
  private keepsPlain(format: ExpositionFormat): boolean {
    const at = this.plainAskedAt[format];
    return format === 'text' || (at !== undefined && this.now() - at <= FORMAT_IDLE_MS);
  }

  /**
   * A format scraped only gzipped (Prometheus always asks for gzip) keeps only its gzip: its own bodies, as big
   * as the text bodies (protobuf) or twice as big (a counter's OpenMetrics), are not kept; refreshes render them
   * family by family into the gzip stream (streamGzip). So a Prometheus scraping protobuf or OpenMetrics costs
   * the text bodies (the label source, always kept) plus a gzip, not a second copy of every label. Called for an
   * exposition just built and not lent to any response yet; drops own bodies left from plain scrapes.
   */
  private dropPlain(format: ExpositionFormat, e: Exposed): void {
    e.chunks = [];
    e.plain = false;
    for (const own of this.own.values()) {
      this.loans.retire(own[format]?.body);
      delete own[format];
    }
  }

  /** The family's body in `format` (its text body unless it renders one of its own). */
  private bodyOf(f: SeriesFamily, format: ExpositionFormat): Body | undefined {
    return f.rendersOwn(format) ? this.own.get(f)?.[format] : this.bodies.get(f);
  }

  /** Stores a fresh body, retiring the one it replaces. */
  private setBody(f: SeriesFamily, format: ExpositionFormat, body: Body): void {
    this.loans.retire(this.bodyOf(f, format)?.body);
    if (!f.rendersOwn(format)) {
      this.bodies.set(f, body);
      return;
    }
    const own = this.own.get(f) ?? {};
    this.own.set(f, own);
    own[format] = body;
  }

  /** A format no longer asked for: its exposition and its own bodies go. */
  private drop(format: ExpositionFormat): void {
    delete this.exposed[format];
    for (const own of this.own.values()) {
      this.loans.retire(own[format]?.body);
      delete own[format];
    }
  }

  render(format: ExpositionFormat): Buffer {
    this.plainAskedAt[format] = this.now();
    const e = this.current(format, true);
    e.text ??= e.chunks.length ? Buffer.concat(e.chunks, e.length) : EMPTY;
    return e.text;
  }

  hold(format: ExpositionFormat): HeldChunks {
    this.plainAskedAt[format] = this.now();
    const e = this.current(format, true);
    this.loans.lend(e);
    let held = true;
    return {
      chunks: e.chunks,
      release: (written: boolean) => {
        if (!held) return;
        held = false;
        if (!written) this.loans.unsafe(e.chunks);
        this.loans.giveBack(e);
      },
    };
  }

  renderGzip(format: ExpositionFormat): Buffer {
    this.gzipWanted[format] = true;
    const e = this.current(format, false);
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
  override refresh(): Promise<void> {
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

  /** The exposition to serve; `plain`: its chunks are needed (else its gzip will do). */
  private current(format: ExpositionFormat, plain: boolean): Exposed {
    this.askedAt[format] = this.now();
    const e = this.exposed[format];
    const usable = e !== undefined && (e.plain || (!plain && e.gzip !== undefined));
    if (usable && (this.running || e.stamp === this.stamp())) return e;
    // A window is half counted: the last complete state (its bodies) is what there is to show.
    if (usable && this.writers > 0) return e;
    if (this.writers > 0 && format !== 'text') {
      // Its bodies were never rendered or were let go: prepare() waits for a refresh that renders them.
      throw new Error(
        `the ${format} exposition is not built while a window is counted: await prepare() first`,
      );
    }
    if (this.writers === 0) {
      for (const f of this.families) {
        if (f.version !== (this.bodies.get(f)?.version ?? 0)) {
          this.setBody(f, 'text', { version: f.version, body: f.renderBody() });
        }
      }
      // Rendered after the text bodies: they read the label texts from them.
      for (const f of this.families) {
        if (f.rendersOwn(format) && f.version !== (this.bodyOf(f, format)?.version ?? 0)) {
          this.setBody(f, format, { version: f.version, body: f.renderBody(format) });
        }
      }
      this.bodiesCounted = this.counted();
      this.settled?.(this.bodiesCounted);
    }
    const fresh = this.assemble(format);
    this.exposed[format] = fresh;
    this.loans.sweep();
    return fresh;
  }

  private assemble(format: ExpositionFormat): Exposed {
    const chunks: Buffer[] = [];
    let stamp = this.layout;
    let length = 0;
    for (const f of this.families) {
      const b = this.bodyOf(f, format);
      stamp += b?.version ?? 0;
      if (b && b.body.length > 0) {
        const header = format === 'protobuf' ? f.protobufHeader(b.body.length) : f.header(format);
        chunks.push(header, b.body);
        length += header.length + b.body.length;
      }
    }
    return { stamp, chunks, length, plain: true, counted: this.bodiesCounted };
  }

  private async rebuild(): Promise<void> {
    const wait = this.beginRead();
    if (wait) await wait;
    for (const format of FORMATS) if (this.exposed[format] && !this.inUse(format)) this.drop(format);
    const own = FORMATS.filter((format) => format !== 'text' && this.inUse(format));
    // Asked for only gzipped: compressed family by family as rendered, no body kept (streamGzip).
    const streamed = own.filter((format) => this.gzipWanted[format] && !this.keepsPlain(format));
    const gzipped: { format: ExpositionFormat; exposed: Exposed }[] = [];
    try {
      // Text first: the other formats read the label texts from the text bodies.
      for (const format of ['text' as const, ...own.filter((f) => !streamed.includes(f))]) {
        for (const f of this.families) {
          if (format !== 'text' && !f.rendersOwn(format)) continue;
          if (f.version === (this.bodyOf(f, format)?.version ?? 0)) continue;
          const fresh = await renderSliced(f, format, this.chunkSize);
          // A synchronous render during the await may have stored a newer body already.
          if (fresh.version > (this.bodyOf(f, format)?.version ?? 0)) this.setBody(f, format, fresh);
          else this.loans.retire(fresh.body);
        }
      }
      this.bodiesCounted = this.counted();
      this.settled?.(this.bodiesCounted);
      for (const format of streamed) {
        const { gzip, stamp } = await this.streamGzip(format);
        gzipped.push({
          format,
          exposed: { stamp, chunks: [], plain: false, length: 0, gzip, counted: this.bodiesCounted },
        });
      }
    } finally {
      // The bodies are immutable buffers: assembling and gzipping them need not hold windows back.
      this.endRead();
    }
    for (const { format, exposed } of gzipped) {
      const old = this.exposed[format];
      if (old && old.stamp > exposed.stamp) continue;
      this.exposed[format] = exposed;
      this.dropPlain(format, exposed);
    }
    const built: { format: ExpositionFormat; exposed: Exposed }[] = [];
    for (const format of FORMATS) {
      if (streamed.includes(format)) continue;
      if (this.exposed[format] !== undefined || this.inUse(format)) {
        built.push({ format, exposed: this.assemble(format) });
      }
    }
    // zlib reads the chunks on the libuv pool: they are lent to it until it is done.
    for (const b of built) this.loans.lend(b.exposed);
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
        if (old && old.stamp > exposed.stamp) continue;
        this.exposed[format] = exposed;
        if (exposed.gzip && !this.keepsPlain(format)) this.dropPlain(format, exposed);
      }
    } catch (err) {
      // A failed stream may not have finished with every chunk handed to it.
      for (const b of built) this.loans.unsafe(b.exposed.chunks);
      throw err;
    } finally {
      for (const b of built) this.loans.giveBack(b.exposed);
      this.loans.sweep();
    }
  }

  /**
   * The gzip of the whole exposition in `format` (not text), rendered family by family inside the read lock: each
   * family's own body is written to the gzip stream and freed as soon as zlib has consumed it, so at most one
   * such body exists at a time (OpenMetrics' counter bodies hold every label twice: a second copy of all of them
   * would be the biggest thing in the process at 1M series). Text bodies (a gauge's OpenMetrics body) are lent,
   * not freed. Returns the exposition's stamp, as assemble() computes it.
   */
  private async streamGzip(format: ExpositionFormat): Promise<{ gzip: Buffer; stamp: number }> {
    const z = createGzip({ level: this.gzipLevel });
    const out: Buffer[] = [];
    z.on('data', (c: Buffer) => out.push(c));
    const ended = new Promise<void>((resolve, reject) => {
      z.on('end', resolve);
      z.on('error', reject);
    });
    // zlib calls back once it has consumed the whole chunk (it no longer reads it).
    const write = (b: Buffer) =>
      new Promise<void>((resolve, reject) => z.write(b, (err) => (err ? reject(err) : resolve())));
    const shared: Exposed = { stamp: 0, chunks: [], plain: true, length: 0, counted: new Map() };
    this.loans.lend(shared);
    let stamp = this.layout;
    try {
      for (const f of this.families) {
        const mine = f.rendersOwn(format);
        const b = mine ? await renderSliced(f, format, this.chunkSize) : this.bodies.get(f);
        stamp += b?.version ?? 0;
        if (!b || b.body.length === 0) continue;
        if (!mine) shared.chunks.push(b.body);
        await write(format === 'protobuf' ? f.protobufHeader(b.body.length) : f.header(format));
        await write(b.body);
        if (mine) freeNow(b.body);
      }
      z.end();
      await ended;
    } catch (err) {
      // zlib may still hold a chunk: nothing it was given is freed here.
      this.loans.unsafe(shared.chunks);
      z.destroy();
      throw err;
    } finally {
      this.loans.giveBack(shared);
    }
    return { gzip: Buffer.concat(out), stamp };
  }
}
