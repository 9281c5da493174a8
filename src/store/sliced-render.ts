/**
 * Rendering a family's body without holding the event loop (a few hundred ms at 1M series): in slices of about
 * RENDER_SLICE_MS, yielding between them; and the gzip of an exposition's chunks, on the libuv pool. Used by the
 * store's refreshes (./series-store.ts).
 */
import { createGzip } from 'node:zlib';
import type { SeriesFamily } from './family.js';
import type { ExpositionFormat } from './types.js';

/**
 * A refresh yields to the event loop after this much rendering (or `chunkSize` slots, whichever comes first): a
 * scrape or probe that arrives meanwhile waits about this long. Checked every RENDER_STEP slots (~0.5 ms).
 */
const RENDER_SLICE_MS = 8;
const RENDER_STEP = 2048;
/** A refresh whose family keeps gaining or losing series this often finishes that family synchronously. */
const MAX_RESTARTS = 3;

/** A family's body in one format, and the family's version it shows. */
export interface Body {
  body: Buffer;
  version: number;
}

function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The family's body in `format`, rendered in slices of the event loop. A family that gains or loses a series while
 * it renders is started over, and after MAX_RESTARTS finished synchronously.
 */
export async function renderSliced(
  f: SeriesFamily,
  format: ExpositionFormat,
  chunkSize: number,
): Promise<Body> {
  for (let attempt = 0; attempt < MAX_RESTARTS; attempt++) {
    const r = f.beginRender(format);
    for (;;) {
      const until = performance.now() + RENDER_SLICE_MS;
      const stop = r.next + chunkSize;
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
  return { body: f.renderBody(format), version: f.version };
}

/** One gzip stream over the chunks, on the libuv pool (the event loop only hands chunks over). */
export function gzipChunks(chunks: readonly Buffer[], level: number): Promise<Buffer> {
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
