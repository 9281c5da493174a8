/**
 * Content negotiation for /metrics: which exposition format (an Accept parser of our own, bounded), and whether
 * to gzip (express's `req.acceptsEncodings`, the negotiator package).
 *
 * Prometheus sends, for example,
 * `application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*\/*;q=0.1`
 * (or text/plain first when scrape_protocols says so; Prometheus 3 adds `escaping=allow-utf-8`); with
 * `--enable-feature=created-timestamp-zero-ingestion` (or `scrape_protocols: [PrometheusProto, ...]`) the
 * protobuf format comes first: `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;
 * encoding=delimited;q=0.5,...`. A range matches an offer only when every parameter it names has the offered
 * value, so each format is offered with the parameters scrapers send: OpenMetrics 1.0.0 and its draft 0.0.1
 * (parsed the same), the classic text format 0.0.4, the delimited protobuf MetricFamily stream, each without and
 * with every `escaping` scheme (our names are valid under all of them), the two text formats also with
 * `charset=utf-8` (what we send). A range of an unknown version (OpenMetrics 2.0.0), another charset, or another
 * protobuf message or encoding matches nothing.
 *
 * The choice is negotiator's (express's `req.accepts`), which this used to call: for each offer the most specific
 * range that matches it gives its q; the offer with the highest q wins, then the more specific range, then the
 * range listed first, then the offer listed first. negotiator compares every offer with every range, re-parsing the
 * offer each time: a 16 KB `Accept: *\/*,*\/*,...` (4000 ranges, within Node's header limit) cost 103 ms of CPU
 * per request. Here the offers are parsed once, only the first MAX_ACCEPT_RANGES ranges are read, and a range's
 * parameters are read once: the work is bounded whatever the header.
 */
import type { Request } from 'express';
import type { ExpositionFormat } from '../store/types.js';

const PROTOBUF =
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';
const ESCAPING = ['allow-utf-8', 'underscores', 'dots', 'values'];

interface Offer {
  type: string;
  subtype: string;
  /** Lower-case names and values. */
  params: ReadonlyMap<string, string>;
  format: ExpositionFormat;
}

function offer(type: string, params: Record<string, string>, format: ExpositionFormat): Offer {
  const [t = '', s = ''] = type.split('/');
  return {
    type: t,
    subtype: s,
    params: new Map(Object.entries(params).map(([k, v]) => [k, v.toLowerCase()])),
    format,
  };
}

const MEDIA: Array<[string, Record<string, string>, ExpositionFormat]> = [
  // First: at equal preference (`*/*` alone, no Accept) the classic text format wins.
  ['text/plain', { version: '0.0.4', charset: 'utf-8' }, 'text'],
  ['application/openmetrics-text', { version: '1.0.0', charset: 'utf-8' }, 'openmetrics'],
  ['application/openmetrics-text', { version: '0.0.1', charset: 'utf-8' }, 'openmetrics'],
  [
    'application/vnd.google.protobuf',
    { proto: 'io.prometheus.client.MetricFamily', encoding: 'delimited' },
    'protobuf',
  ],
];

/**
 * What we offer, in order: each format without and with each `escaping` scheme. A range naming `charset` matches
 * the text formats only with `utf-8`; a range not naming it matches as before (a range's parameters are what it
 * requires, the offer's may be more).
 */
const OFFERS: readonly Offer[] = MEDIA.flatMap(([type, params, format]) => [
  offer(type, params, format),
  ...ESCAPING.map((escaping) => offer(type, { ...params, escaping }, format)),
]);

/**
 * Ranges read from an Accept header at most: one for each offer and one wildcard, enough for a client to rank
 * every offer we make apart. Prometheus sends at most six (its five scrape_protocols, each once, and `*\/*`).
 * Ranges past this are not read: a refusal (`;q=0`) there is ignored, a format named only there is not chosen
 * (the classic text format is, which every scraper reads).
 */
export const MAX_ACCEPT_RANGES = OFFERS.length + 1;

export interface AcceptRange {
  type: string;
  subtype: string;
  /** Parameters other than q, names lower-case, values as sent; the first of a repeated name counts. */
  params: Map<string, string>;
  q: number;
}

const SP = 0x20;
const HTAB = 0x09;
const COMMA = 0x2c;
const SEMI = 0x3b;
const EQ = 0x3d;
const DQUOTE = 0x22;
const BSLASH = 0x5c;

function skipOWS(s: string, i: number): number {
  while (i < s.length && (s.charCodeAt(i) === SP || s.charCodeAt(i) === HTAB)) i++;
  return i;
}

function trimEnd(s: string, start: number, end: number): number {
  while (end > start && (s.charCodeAt(end - 1) === SP || s.charCodeAt(end - 1) === HTAB)) end--;
  return end;
}

/** Index of the next `;` or `,` from `i` (or the end). */
function skipValue(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === SEMI || c === COMMA) break;
    i++;
  }
  return i;
}

/**
 * The first MAX_ACCEPT_RANGES ranges of an Accept header, as negotiator splits them (the content-type package's
 * grammar: ranges apart by commas outside quoted strings, parameters by semicolons, quoted values unescaped).
 * Ranges without a `/` are dropped, but count towards the bound. Reads at most the characters of those ranges.
 */
export function parseAccept(header: string): AcceptRange[] {
  const out: AcceptRange[] = [];
  let i = 0;
  for (let read = 0; read < MAX_ACCEPT_RANGES && i < header.length; read++) {
    i = skipOWS(header, i);
    const typeStart = i;
    i = skipValue(header, i);
    const full = header.slice(typeStart, trimEnd(header, typeStart, i)).toLowerCase();
    const params = new Map<string, string>();
    // Parameters, until the comma that ends this range.
    param: while (i < header.length && header.charCodeAt(i) !== COMMA) {
      i = skipOWS(header, i + 1); // past the `;`
      const keyStart = i;
      while (i < header.length) {
        const c = header.charCodeAt(i);
        if (c === COMMA) break param;
        if (c === SEMI) continue param;
        if (c === EQ) {
          const key = header.slice(keyStart, trimEnd(header, keyStart, i)).toLowerCase();
          i = skipOWS(header, i + 1);
          if (header.charCodeAt(i) === DQUOTE) {
            // A quoted value: commas inside do not end the range; without its closing quote it is not kept.
            i++;
            let value = '';
            while (i < header.length) {
              const q = header.charCodeAt(i++);
              if (q === DQUOTE) {
                i = skipValue(header, i);
                if (!params.has(key)) params.set(key, value);
                break;
              }
              if (q === BSLASH && i < header.length) value += header[i++];
              else value += String.fromCharCode(q);
            }
            continue param;
          }
          const valueStart = i;
          i = skipValue(header, i);
          if (!params.has(key)) params.set(key, header.slice(valueStart, trimEnd(header, valueStart, i)));
          continue param;
        }
        i++;
      }
    }
    i++; // past the `,`
    const slash = full.indexOf('/');
    if (slash < 0) continue;
    const qText = params.get('q');
    params.delete('q');
    out.push({
      type: full.slice(0, slash),
      subtype: full.slice(slash + 1),
      params,
      // negotiator's: an absent or empty q is 1; one that is not a number makes the range unacceptable.
      q: qText ? Number.parseFloat(qText) : 1,
    });
  }
  return out;
}

/** negotiator's specificity of `range` for `o` (4 type, 2 subtype, 1 parameters), or -1 when it does not match. */
function specificity(range: AcceptRange, o: Offer): number {
  let s = 0;
  if (range.type === o.type) s |= 4;
  else if (range.type !== '*') return -1;
  if (range.subtype === o.subtype) s |= 2;
  else if (range.subtype !== '*') return -1;
  if (range.params.size > 0) {
    for (const [k, v] of range.params) {
      if (v !== '*' && v.toLowerCase() !== (o.params.get(k) ?? '')) return -1;
    }
    s |= 1;
  }
  return s;
}

interface Priority {
  q: number;
  s: number;
  /** The range's position among those read (-1: none matched). */
  o: number;
  /** The offer's position. */
  i: number;
}

/** The format `ranges` prefer, negotiator's way; undefined when none is acceptable (q > 0). */
function preferred(ranges: readonly AcceptRange[]): ExpositionFormat | undefined {
  let best: Priority | undefined;
  let bestFormat: ExpositionFormat | undefined;
  for (let i = 0; i < OFFERS.length; i++) {
    const o = OFFERS[i]!;
    let p: Priority = { q: 0, s: 0, o: -1, i };
    for (let r = 0; r < ranges.length; r++) {
      const range = ranges[r]!;
      const s = specificity(range, o);
      if (s < 0) continue;
      // The most specific matching range counts; then the higher q; then the one listed first.
      if ((p.s - s || p.q - range.q || p.o - r) < 0) p = { q: range.q, s, o: r, i };
    }
    if (!(p.q > 0)) continue;
    if (!best || (p.q - best.q || p.s - best.s || best.o - p.o || best.i - p.i) > 0) {
      best = p;
      bestFormat = o.format;
    }
  }
  return bestFormat;
}

type Negotiable = Pick<Request, 'headers' | 'acceptsEncodings'>;

/**
 * The format the client prefers (higher q; at equal q the more specific range, then the one listed first, then
 * the classic text format); the classic text format when Accept is missing or names nothing we serve.
 */
export function negotiateFormat(req: Pick<Request, 'headers'>): ExpositionFormat {
  const accept = req.headers.accept;
  // RFC 9110: no Accept is `*/*`; an empty one accepts nothing: both get the classic text format.
  if (accept === undefined || accept === '') return 'text';
  return preferred(parseAccept(accept)) ?? 'text';
}

/** True when Accept-Encoding allows gzip (explicitly, or through `*`, and not refused with q=0). */
export function acceptsGzip(req: Negotiable): boolean {
  return req.acceptsEncodings('gzip', 'identity') === 'gzip';
}

export const CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: 'text/plain; version=0.0.4; charset=utf-8',
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
  protobuf: PROTOBUF,
};
