/**
 * /metrics body: prom-client's registry (self metrics, process and Node.js defaults, rendered per scrape)
 * followed by the series store's cached text (docs/architecture.md, "The series store"). In OpenMetrics a single `# EOF` ends it.
 *
 * prom-client can render OpenMetrics only by switching the registry's content type, which renames counters in
 * place (it strips `_total` from the metric objects) and is shared by concurrent scrapes. So the registry is
 * always rendered as classic text, and that text is turned into OpenMetrics here.
 */
import { gzipSync } from 'node:zlib';
import type { Registry } from 'prom-client';
import type { CountedCursors, Exposition, ExpositionFormat } from '../store/types.js';
import { registryToProtobuf } from './registry-protobuf.js';

const EOF_TEXT = '# EOF\n';
const EOF = Buffer.from(EOF_TEXT);
/** A gzip member of its own: multi-member gzip is one valid stream (RFC 1952; Go's gzip.Reader reads it). */
const EOF_GZ = gzipSync(EOF);
const EMPTY = Buffer.alloc(0);

function unescapeHelp(s: string): string {
  return s.replace(/\\(\\|n)/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
}

function escapeOpenMetricsHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function sampleName(line: string): string {
  const end = line.search(/[{ ]/);
  return end < 0 ? line : line.slice(0, end);
}

/**
 * Classic text (as prom-client writes it: HELP, TYPE, then samples, families apart by blank lines) to
 * OpenMetrics 1.0 without `# EOF`: no blank lines, a counter family is named without `_total` and its samples
 * carry it, each followed by its `_created` sample; a histogram's `_count` sample (prom-client writes it last of
 * each label set: buckets, `_sum`, `_count`) is followed by the label set's `_created`, as the OpenMetrics spec's
 * histogram example ends (`startedSeconds`: prom-client's counters and histograms count from the process start);
 * HELP escapes `"` too.
 */
export function textToOpenMetrics(text: string, startedSeconds?: number): string {
  const lines = text.split('\n');
  // A HELP line precedes its TYPE line; the family name (and so the HELP line) depends on the type.
  const types = new Map<string, string>();
  for (const line of lines) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (name && type) types.set(name, type);
    }
  }
  const familyOf = (name: string): string =>
    types.get(name) === 'counter' && name.endsWith('_total') ? name.slice(0, -'_total'.length) : name;

  const out: string[] = [];
  let counterFamily: string | undefined;
  let histogramCount: string | undefined;
  for (const line of lines) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const rest = line.slice('# HELP '.length);
      const sp = rest.indexOf(' ');
      const name = sp < 0 ? rest : rest.slice(0, sp);
      const help = sp < 0 ? '' : rest.slice(sp + 1);
      out.push(`# HELP ${familyOf(name)} ${escapeOpenMetricsHelp(unescapeHelp(help))}`);
    } else if (line.startsWith('# TYPE ')) {
      const [, , name = '', type = ''] = line.split(' ');
      counterFamily = type === 'counter' ? familyOf(name) : undefined;
      histogramCount = type === 'histogram' ? `${name}_count` : undefined;
      out.push(`# TYPE ${familyOf(name)} ${type}`);
    } else if (line.startsWith('#')) {
      // Other comments are not part of OpenMetrics.
    } else if (counterFamily !== undefined && isCounterSample(sampleName(line), counterFamily)) {
      const rest = line.slice(sampleName(line).length);
      out.push(`${counterFamily}_total${rest}`);
      if (startedSeconds !== undefined) {
        out.push(`${counterFamily}_created${rest.slice(0, rest.lastIndexOf(' '))} ${startedSeconds}`);
      }
    } else if (histogramCount !== undefined && sampleName(line) === histogramCount) {
      out.push(line);
      if (startedSeconds !== undefined) {
        const rest = line.slice(histogramCount.length);
        const family = histogramCount.slice(0, -'_count'.length);
        out.push(`${family}_created${rest.slice(0, rest.lastIndexOf(' '))} ${startedSeconds}`);
      }
    } else {
      out.push(line);
    }
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

function isCounterSample(name: string, family: string): boolean {
  return name === family || name === `${family}_total`;
}

/** The family names a source contributes, as OpenMetrics sees them (a counter's `_total` is a sample suffix). */
function familyKey(name: string): string {
  return name.endsWith('_total') ? name.slice(0, -'_total'.length) : name;
}

/** Family names present in both sources (compared with and without `_total`, as OpenMetrics would). */
export function duplicateFamilies(registry: Registry, store: Exposition): string[] {
  const fromRegistry = new Map<string, string>();
  for (const m of registry.getMetricsAsArray()) {
    const name = (m as { name?: unknown }).name;
    if (typeof name === 'string') fromRegistry.set(familyKey(name), name);
  }
  const dups: string[] = [];
  for (const name of store.familyNames()) {
    const other = fromRegistry.get(familyKey(name));
    if (other !== undefined) dups.push(other === name ? name : `${other} / ${name}`);
  }
  return dups.sort();
}

/** Throws when a family name appears in both sources (the exporter refuses to start: Prometheus would reject it). */
export function assertDistinctFamilies(registry: Registry, store: Exposition): void {
  const dups = duplicateFamilies(registry, store);
  if (dups.length) {
    throw new Error(
      `metric families registered twice (prom-client registry and series store): ${dups.join(', ')}`,
    );
  }
}

export interface RenderedMetrics {
  /** Buffers to write in order; the store's are its cached ones, shared by every scrape. */
  chunks: Buffer[];
  /** Total bytes of chunks. */
  length: number;
  /** The counted cursors of the store's part (undefined: the store does not track them). */
  counted: CountedCursors | undefined;
  /**
   * Gives the store's buffers back (Exposition.hold): call it once the response is over, with whether every byte
   * left for the kernel. Until then the store keeps them.
   */
  release(written: boolean): void;
}

/**
 * The registry's part in `format`; its counters and histograms start at `startedMs` (the process start), shown
 * in whole seconds (rounded down) in both formats: OpenMetrics' `_created` and protobuf's `created_timestamp` then
 * name the same instant, and Prometheus reads both exactly (protobuf's to the millisecond; OpenMetrics' float
 * seconds times 1000, where a fraction may come out a millisecond off). The series store's counters start on whole
 * seconds too.
 */
async function renderRegistry(
  registry: Registry,
  format: ExpositionFormat,
  startedMs: number,
): Promise<Buffer> {
  const startedSeconds = Math.floor(startedMs / 1000);
  if (format === 'protobuf') return registryToProtobuf(registry, startedSeconds * 1000);
  const text = await registry.metrics();
  return Buffer.from(format === 'openmetrics' ? textToOpenMetrics(text, startedSeconds) : text);
}

/**
 * The whole /metrics body in `format`, gzipped when asked, as buffers to write in order (their total is
 * `length`): the registry's part is rendered (and gzipped) per scrape, it is small; the store's cached buffers
 * follow as they are, shared by every scrape and never copied; `# EOF` ends OpenMetrics, as a gzip member of its
 * own when gzipped. A protobuf body is a stream of delimited MetricFamily messages: the parts simply follow one
 * another. `startedMs`: the process start, the created timestamp of the registry's counters.
 */
export async function renderMetrics(
  registry: Registry,
  store: Exposition,
  format: ExpositionFormat,
  gzip: boolean,
  startedMs: number,
): Promise<RenderedMetrics> {
  const own = await renderRegistry(registry, format, startedMs);
  const preparing = store.prepare?.(format, gzip);
  if (preparing) await preparing;
  const eof = format === 'openmetrics';
  // The store's bytes and their cursors are read in one turn of the event loop.
  // The gzip is a buffer of its own, left to the GC; the plain chunks are the store's bodies, held while written.
  const held = gzip ? undefined : store.hold(format);
  const part = held ? held.chunks : [store.renderGzip(format)];
  const counted = store.countedIn?.(format);
  const chunks = [gzip ? gzipSync(own) : own, ...part, eof ? (gzip ? EOF_GZ : EOF) : EMPTY];
  const kept = chunks.filter((c) => c.length > 0);
  let length = 0;
  for (const c of kept) length += c.length;
  return { chunks: kept, length, counted, release: (written) => held?.release(written) };
}
