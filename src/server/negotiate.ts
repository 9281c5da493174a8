/**
 * Content negotiation for /metrics through express's own `req.accepts` and `req.acceptsEncodings` (the
 * negotiator package): which exposition format, and whether to gzip.
 *
 * Prometheus sends, for example,
 * `application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*\/*;q=0.1`
 * (or text/plain first when scrape_protocols says so; Prometheus 3 adds `escaping=allow-utf-8`); with
 * `--enable-feature=created-timestamp-zero-ingestion` (or `scrape_protocols: [PrometheusProto, ...]`) the
 * protobuf format comes first: `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;
 * encoding=delimited;q=0.5,...`. negotiator matches a range only when every parameter it names has the offered
 * value, so each format is offered with the parameters scrapers send: OpenMetrics 1.0.0 and its draft 0.0.1
 * (parsed the same), the classic text format 0.0.4, the delimited protobuf MetricFamily stream, each without and
 * with every `escaping` scheme (our names are valid under all of them). A range of an unknown version
 * (OpenMetrics 2.0.0) or another protobuf message or encoding matches nothing.
 */
import type { Request } from 'express';
import type { ExpositionFormat } from '../store/types.js';

const PROTOBUF =
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';
const ESCAPING = ['allow-utf-8', 'underscores', 'dots', 'values'];
const MEDIA: Array<[string, ExpositionFormat]> = [
  // First: at equal preference (`*/*` alone, no Accept) the classic text format wins.
  ['text/plain; version=0.0.4', 'text'],
  ['application/openmetrics-text; version=1.0.0', 'openmetrics'],
  ['application/openmetrics-text; version=0.0.1', 'openmetrics'],
  [PROTOBUF, 'protobuf'],
];
const OFFERS = new Map<string, ExpositionFormat>(
  MEDIA.flatMap(([type, format]) => [
    [type, format] as const,
    ...ESCAPING.map((e) => [`${type}; escaping=${e}`, format] as const),
  ]),
);
const OFFERED = [...OFFERS.keys()];

type Negotiable = Pick<Request, 'accepts' | 'acceptsEncodings'>;

/**
 * The format the client prefers (higher q; at equal q the more specific range, then the one listed first: the
 * classic text format); the classic text format when Accept is missing or names nothing we serve.
 */
export function negotiateFormat(req: Negotiable): ExpositionFormat {
  const best = req.accepts(OFFERED);
  return (best && OFFERS.get(best)) || 'text';
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
