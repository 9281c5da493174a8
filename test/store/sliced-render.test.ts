/**
 * A family's body rendered in slices of the event loop, and an exposition's gzip (src/store/sliced-render.ts): the
 * sliced body is byte for byte the body rendered at once, in each format, with the version it shows; the event loop
 * turns between slices; a family that gains or loses series meanwhile is started over (every live series once),
 * and one that keeps changing is finished at once rather than never. The gzip is one stream of the chunks as given.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SeriesFamily } from '../../src/store/family.js';
import { gzipChunks, renderSliced } from '../../src/store/sliced-render.js';
import type { ExpositionFormat, FamilySpec } from '../../src/store/types.js';
import { turnsDuring } from '../helpers/loop-turns.js';

const T = Date.UTC(2026, 5, 1, 12, 0);
const SPEC: FamilySpec = {
  name: 'cdn_edge_requests_total',
  help: 'Requests.',
  type: 'counter',
  labelNames: ['account', 'resource'],
};

function family(n: number): SeriesFamily {
  const f = new SeriesFamily(SPEC, () => T);
  for (let i = 0; i < n; i++) f.set(f.slot(['acme', `r${i}`], T - i * 1000), i);
  return f;
}

/** The resources of a text body's series lines. */
const resources = (body: Buffer) =>
  body
    .toString()
    .split('\n')
    .filter((l) => l.startsWith('cdn_edge_requests_total{'))
    .map((l) => /resource="([^"]*)"/.exec(l)![1]!);

describe('renderSliced', () => {
  for (const format of ['text', 'openmetrics', 'protobuf'] as ExpositionFormat[]) {
    it(`gives the ${format} body rendered at once, turning the event loop between slices`, async () => {
      const f = family(1000);
      // The text body first: the other formats read their label texts from it, as the store renders them.
      if (format !== 'text') f.renderBody('text');
      const { result, turns } = await turnsDuring(() => renderSliced(f, format, 100));
      expect(result.version).toBe(f.version);
      const atOnce = family(1000);
      if (format !== 'text') atOnce.renderBody('text');
      expect(result.body.equals(atOnce.renderBody(format))).toBe(true);
      // 1000 series in chunks of 100: at least a yield between each.
      expect(turns).toBeGreaterThanOrEqual(9);
    });
  }

  it('starts over when series come and go between slices: every live series once', async () => {
    const f = family(500);
    let changed = false;
    const { result } = await turnsDuring(
      () => renderSliced(f, 'text', 50),
      () => {
        if (changed) return;
        changed = true;
        // A freed slot reused by another series while the render is under way.
        f.delete(['acme', 'r3']);
        f.slot(['acme', 'late']);
      },
    );
    const got = resources(result.body);
    expect(new Set(got).size).toBe(got.length);
    expect(got.sort()).toEqual(
      ['late', ...Array.from({ length: 500 }, (_, i) => `r${i}`).filter((r) => r !== 'r3')].sort(),
    );
    expect(result.version).toBe(f.version);
  });

  it('finishes a family that keeps changing at once, with every series live when it returns', async () => {
    const f = family(500);
    let n = 0;
    const { result } = await turnsDuring(
      () => renderSliced(f, 'text', 10),
      () => {
        f.slot(['acme', `new${n++}`]);
      },
    );
    const got = resources(result.body);
    expect(got).toHaveLength(f.size);
    expect(new Set(got).size).toBe(f.size);
    expect(result.version).toBe(f.version);
  });
});

describe('gzipChunks', () => {
  it('is one gzip stream of the chunks in order, at the level given', async () => {
    const chunks = [Buffer.from('# HELP a A.\n'), Buffer.alloc(200_000, 'a 1\n'), Buffer.from('b 2\n')];
    const gz = await gzipChunks(chunks, 1);
    expect(gunzipSync(gz).equals(Buffer.concat(chunks))).toBe(true);
    expect(gz.length).toBeLessThan(Buffer.concat(chunks).length / 10);
    expect(gunzipSync(await gzipChunks([], 1)).length).toBe(0);
  });
});
