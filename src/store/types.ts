/**
 * The series store's contract (docs/architecture.md). The CDN data families live here, not in prom-client:
 * one slot per series in typed arrays, each series' label text rendered once when the series is created, each
 * family's exposition text rebuilt once per change (not per scrape) and served from a cached buffer.
 *
 * Implemented by ./series-store.ts. Collectors (traffic, dvr, recordings) only use Family; the HTTP server only
 * uses Exposition.
 */

export type FamilyType = 'counter' | 'gauge';

export interface FamilySpec {
  /** Full metric name; a counter's name ends in `_total`. */
  name: string;
  help: string;
  type: FamilyType;
  labelNames: readonly string[];
}

/**
 * A series' slot: its index in its family's typed arrays (./series-index.ts), the one handle to a series. Stable for
 * the life of the series, invalid after it is deleted (a freed slot is reused by a later series).
 */
export type Slot = number;

export interface Family {
  readonly spec: FamilySpec;
  /** Number of live series. */
  readonly size: number;
  /**
   * The series for these label values (same order as spec.labelNames), created at 0 on first use. A counter
   * created so starts at `startMs` (default: now): its created timestamp, exposed in OpenMetrics (`_created`) and
   * protobuf, is where Prometheus' created-timestamp zero ingestion puts its zero. For traffic that is the start of
   * the first window the series counts, not when the exporter got to it.
   */
  slot(labelValues: readonly string[], startMs?: number): Slot;
  /** The series' slot if it exists. */
  find(labelValues: readonly string[]): Slot | undefined;
  /** A counter's start (its created timestamp, whole seconds, as ms); what slot() was given. */
  startOf?(slot: Slot): number;
  set(slot: Slot, value: number): void;
  /** Counters only accept non-negative deltas (throws otherwise). */
  add(slot: Slot, delta: number): void;
  get(slot: Slot): number;
  delete(labelValues: readonly string[]): boolean;
  /** Deletes every series whose label values match; returns how many. */
  deleteWhere(match: (labelValues: readonly string[]) => boolean): number;
  /** Calls fn for every live series. */
  forEach(fn: (labelValues: readonly string[], value: number, slot: Slot) => void): void;
}

/** Prometheus text 0.0.4, OpenMetrics 1.0.0, and protobuf (delimited io.prometheus.client.MetricFamily). */
export type ExpositionFormat = 'text' | 'openmetrics' | 'protobuf';

/**
 * Per account, the cursor up to which traffic windows are counted in the values an exposition shows: every window
 * before it is in, none after it (docs/architecture.md, "What a scrape has seen"). Kept by traffic's ledger
 * (src/traffic/counting-ledger.ts); the store carries it with each exposition, and the state file saves it.
 */
export type CountedCursors = ReadonlyMap<string, number> & {
  /**
   * How many revisits of late data (metrics.revisit) the values include: revisits are numbered 1, 2, ... in the
   * order they are counted (CountingLedger.countRevisit). Absent: none, or not tracked.
   */
  readonly revisitCount?: number;
};

/** Chunks lent to one response. */
export interface HeldChunks {
  readonly chunks: readonly Buffer[];
  /**
   * Gives the chunks back; later calls do nothing. `written`: every byte has left for the kernel (an HTTP/1
   * response's 'finish'), so nothing outside JavaScript still reads them. With false (a response cut off, an
   * HTTP/2 stream, whose writes the transport may still hold) the store leaves these buffers to the GC.
   */
  release(written: boolean): void;
}

export interface Exposition {
  /**
   * Every family's exposition in the given format, as one cached buffer rebuilt only when something changed.
   * OpenMetrics output has no `# EOF`: the server appends it once after all sources.
   */
  render(format: ExpositionFormat): Buffer;
  /**
   * The same exposition as a list of immutable buffers (concatenated, they are render()'s bytes), for a server
   * that writes them to each client without copying them. They stay valid until `release` is called, and no
   * longer: the store may free a replaced body's memory at once (not at the next GC) once nothing holds it.
   */
  hold(format: ExpositionFormat): HeldChunks;
  /** The same, gzipped, cached alongside. */
  renderGzip(format: ExpositionFormat): Buffer;
  /**
   * Undefined when the format can be served at once (`gzip`: as renderGzip, else as hold/render); otherwise a
   * promise to await first (a format not asked for lately has no bodies yet, nor one asked for only gzipped until
   * now has plain ones, and a window being counted keeps them from being rendered now).
   */
  prepare?(format: ExpositionFormat, gzip?: boolean): Promise<void> | undefined;
  /** Names of all families, so the server can check that none appears twice across sources. */
  familyNames(): string[];
  /**
   * The counted cursors of the exposition the last render()/renderGzip() of `format` returned (call it in the same
   * turn of the event loop). Undefined when the store does not track them.
   */
  countedIn?(format: ExpositionFormat): CountedCursors | undefined;
}

export interface SeriesStoreApi extends Exposition {
  /** Registers a family; registering the same name twice throws. */
  family(spec: FamilySpec): Family;
}
