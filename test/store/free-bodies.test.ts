/**
 * Replaced family bodies are freed at once (src/store/free-now.ts), but never while something may still read
 * them: a response writing them, an exposition still current, the family's label source.
 */
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family, FamilySpec } from '../../src/store/types.js';

const spec: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Requests at the edge.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};

/** A store whose one body is well over the 64 KiB below which nothing is freed early. */
function bigStore(): { store: SeriesStore; f: Family } {
  const store = new SeriesStore();
  const f = store.family(spec);
  for (let i = 0; i < 5000; i++) f.set(f.slot(['acme', `resource-${i}`]), i);
  return { store, f };
}

const joined = (chunks: readonly Buffer[]): string => Buffer.concat(chunks).toString('utf8');

describe('freeing replaced bodies', () => {
  it('keeps the bytes a response holds intact through a refresh, and frees them when it is done', async () => {
    const { store, f } = bigStore();
    const held = store.hold('text');
    const before = joined(held.chunks);
    const body = held.chunks.find((c) => c.length > 64 * 1024)!;
    expect(body).toBeDefined();

    f.add(f.slot(['acme', 'resource-7']), 1000);
    await store.refresh();

    // The refresh replaced the body; the response still holds the old one, byte for byte.
    expect(store.render('text').toString()).toContain('resource="resource-7"} 1007');
    expect(joined(held.chunks)).toBe(before);
    expect(body.buffer.byteLength).toBeGreaterThan(0);

    held.release(true);
    expect(body.buffer.byteLength).toBe(0);
    // What is served now is whole and current.
    const now = store.render('text').toString();
    expect(now.split('\n').filter((l) => l.startsWith('cdn_edge_requests_total{')).length).toBe(5000);
    expect(now).toContain('resource="resource-7"} 1007');
  });

  it('leaves to the GC what a response that was cut off held', async () => {
    const { store, f } = bigStore();
    const held = store.hold('text');
    const body = held.chunks.find((c) => c.length > 64 * 1024)!;
    f.add(f.slot(['acme', 'resource-1']), 1);
    await store.refresh();
    held.release(false);
    expect(body.buffer.byteLength).toBeGreaterThan(0);
    expect(body.toString('utf8')).toContain('resource="resource-1"} 1\n');
  });

  it('frees a replaced body nothing holds at the refresh that replaces it, and only then', async () => {
    const { store, f } = bigStore();
    const held = store.hold('text');
    const body = held.chunks.find((c) => c.length > 64 * 1024)!;
    held.release(true);
    // Still current: given back, not freed.
    expect(body.buffer.byteLength).toBeGreaterThan(0);
    f.add(f.slot(['acme', 'resource-2']), 1);
    await store.refresh();
    expect(body.buffer.byteLength).toBe(0);
  });

  it('keeps a body while another format still shows it', () => {
    const { store, f } = bigStore();
    const om = store.hold('openmetrics');
    const body = om.chunks.find((c) => c.length > 64 * 1024)!;
    om.release(true);
    f.add(f.slot(['acme', 'resource-3']), 1);
    // A synchronous render for text replaces the body; OpenMetrics' exposition still lists the old one.
    expect(store.render('text').toString()).toContain('resource="resource-3"} 4');
    expect(body.buffer.byteLength).toBeGreaterThan(0);
    expect(store.render('openmetrics').toString()).toContain('resource="resource-3"} 4');
    expect(body.buffer.byteLength).toBe(0);
  });

  it('gives chunks back once however often release is called', async () => {
    const { store, f } = bigStore();
    const a = store.hold('text');
    const b = store.hold('text');
    const body = a.chunks.find((c) => c.length > 64 * 1024)!;
    f.add(f.slot(['acme', 'resource-4']), 1);
    await store.refresh();
    a.release(true);
    a.release(true);
    // b still holds it: a second release of a must not count as b's.
    expect(body.buffer.byteLength).toBeGreaterThan(0);
    expect(joined(b.chunks)).toContain('resource="resource-4"} 4\n');
    b.release(true);
    expect(body.buffer.byteLength).toBe(0);
  });
});
