/**
 * A small stand-in for the series store's Exposition (src/store/types.ts): fixed families rendered the way the
 * contract says (classic text; OpenMetrics without `# EOF`, a counter family named without `_total`), with the
 * gzip cached alongside. Counts renders so tests can see the app uses the cache it is given.
 */
import { gzipSync } from 'node:zlib';
import { Registry } from 'prom-client';
import type { Logger } from '../../src/log.js';
import { type AppDeps, createApp } from '../../src/server/app.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import type { Exposition, ExpositionFormat, FamilyType, HeldChunks } from '../../src/store/types.js';
import { escapeLabel } from './exposition.js';

export interface FakeFamily {
  name: string;
  help: string;
  type: FamilyType;
  series: { labels: Record<string, string>; value: number }[];
}

function render(families: readonly FakeFamily[], format: ExpositionFormat): string {
  if (format === 'protobuf') throw new Error('FakeExposition renders the text formats only');
  let out = '';
  for (const f of families) {
    const base = format === 'openmetrics' && f.type === 'counter' ? f.name.replace(/_total$/, '') : f.name;
    out += `# HELP ${base} ${f.help}\n# TYPE ${base} ${f.type}\n`;
    for (const s of f.series) {
      const labels = Object.entries(s.labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      out += `${f.name}${labels ? `{${labels}}` : ''} ${s.value}\n`;
    }
  }
  return out;
}

export class FakeExposition implements Exposition {
  renders = 0;
  /** Chunks lent and not given back. */
  held = 0;
  private cache = new Map<string, Buffer>();

  constructor(private readonly families: readonly FakeFamily[]) {}

  render(format: ExpositionFormat): Buffer {
    this.renders++;
    const key = `plain:${format}`;
    let b = this.cache.get(key);
    if (!b) {
      b = Buffer.from(render(this.families, format));
      this.cache.set(key, b);
    }
    return b;
  }

  hold(format: ExpositionFormat): HeldChunks {
    this.held++;
    let held = true;
    return {
      chunks: [this.render(format)],
      release: () => {
        if (held) this.held--;
        held = false;
      },
    };
  }

  renderGzip(format: ExpositionFormat): Buffer {
    this.renders++;
    const key = `gzip:${format}`;
    let b = this.cache.get(key);
    if (!b) {
      b = gzipSync(render(this.families, format));
      this.cache.set(key, b);
    }
    return b;
  }

  familyNames(): string[] {
    return this.families.map((f) => f.name);
  }
}

/** Traffic-like families with awkward label values (quotes, backslashes, newlines, HTML). */
export function sampleFamilies(): FakeFamily[] {
  return [
    {
      name: 'cdn_edge_requests_total',
      help: 'Requests answered at the edge.',
      type: 'counter',
      series: [
        { labels: { account: 'acme', resource: '101' }, value: 1234 },
        { labels: { account: 'acme', resource: 'we"ird\\name\n<b>' }, value: 5 },
      ],
    },
    {
      name: 'cdn_edge_cache_hit_ratio',
      help: 'Share of bytes served from cache, last window.',
      type: 'gauge',
      series: [{ labels: { account: 'acme', resource: '101' }, value: 0.875 }],
    },
  ];
}

/**
 * The exporter's real app over the sample families: by default ready with no account, the traffic API's
 * self-metrics; `over` replaces any of its parts (a status, the traffic history, the secrets, the clock).
 */
export function exporterApp(log: Logger, over: Partial<AppDeps> = {}) {
  const registry = new Registry();
  createSelfMetrics(registry, { version: '0.1.0', apis: ['metrics'] });
  return createApp({
    registry,
    store: new FakeExposition(sampleFamilies()),
    status: () => ({
      ready: true,
      version: '0.1.0',
      startedAt: new Date(),
      accounts: [],
      problems: { dvr: [], recordings: [] },
    }),
    log,
    ...over,
  });
}
