/**
 * Content negotiation for /metrics: which exposition format (Accept) and whether to gzip (Accept-Encoding).
 *
 * Prometheus sends, for example,
 * `application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*\/*;q=0.1`
 * (or text/plain first when scrape_protocols says so), sometimes with protobuf ranges we do not serve.
 */
import type { ExpositionFormat } from '../store/types.js';

interface MediaRange {
  type: string;
  params: Map<string, string>;
  q: number;
  index: number;
}

function parseQ(v: string | undefined): number {
  if (v === undefined) return 1;
  const q = Number(v);
  return Number.isFinite(q) ? Math.min(1, Math.max(0, q)) : 0;
}

function parseList(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  header.split(',').forEach((part, index) => {
    const [head, ...rest] = part.split(';');
    const type = head?.trim().toLowerCase() ?? '';
    if (!type) return;
    const params = new Map<string, string>();
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      params.set(
        p.slice(0, eq).trim().toLowerCase(),
        p
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1'),
      );
    }
    out.push({ type, params, q: parseQ(params.get('q')), index });
  });
  return out;
}

/** OpenMetrics versions whose parsers read what we write (1.0.0 text; 0.0.1 is its draft and parses the same). */
const OPENMETRICS_VERSIONS = new Set(['1.0.0', '0.0.1']);

interface Best {
  q: number;
  /** 2: exact type, 1: type/*, 0: *\/* */
  specificity: number;
  index: number;
}

function better(a: Best | undefined, b: Best): Best {
  if (!a) return b;
  if (b.q !== a.q) return b.q > a.q ? b : a;
  if (b.specificity !== a.specificity) return b.specificity > a.specificity ? b : a;
  return b.index < a.index ? b : a;
}

/**
 * OpenMetrics when the client prefers it to the classic text format (higher q; at equal q the more specific
 * range, then the one listed first); the classic text format otherwise, including when Accept is missing.
 */
export function negotiateFormat(accept: string | undefined): ExpositionFormat {
  if (!accept) return 'text';
  let om: Best | undefined;
  let text: Best | undefined;
  for (const r of parseList(accept)) {
    if (r.q <= 0) continue;
    if (r.type === 'application/openmetrics-text') {
      const v = r.params.get('version');
      if (v === undefined || OPENMETRICS_VERSIONS.has(v))
        om = better(om, { q: r.q, specificity: 2, index: r.index });
    } else if (r.type === 'text/plain') {
      const v = r.params.get('version');
      if (v === undefined || v === '0.0.4') text = better(text, { q: r.q, specificity: 2, index: r.index });
    } else if (r.type === 'text/*') {
      text = better(text, { q: r.q, specificity: 1, index: r.index });
    } else if (r.type === '*/*') {
      text = better(text, { q: r.q, specificity: 0, index: r.index });
    }
  }
  if (!om) return 'text';
  if (!text) return 'openmetrics';
  return better(text, om) === om ? 'openmetrics' : 'text';
}

/** True when Accept-Encoding allows gzip (explicitly, or through `*`, and not refused with q=0). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (!acceptEncoding) return false;
  let gzip: number | undefined;
  let star: number | undefined;
  for (const r of parseList(acceptEncoding)) {
    if (r.type === 'gzip' || r.type === 'x-gzip') gzip = Math.max(gzip ?? 0, r.q);
    else if (r.type === '*') star = r.q;
  }
  if (gzip !== undefined) return gzip > 0;
  return star !== undefined && star > 0;
}

export const CONTENT_TYPES: Record<ExpositionFormat, string> = {
  text: 'text/plain; version=0.0.4; charset=utf-8',
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
};
