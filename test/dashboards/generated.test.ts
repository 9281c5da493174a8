/**
 * The committed grafana/dashboards/*.json must be exactly what grafana/dashboards-src builds: edit the sources,
 * then run `npm run dashboards`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DASHBOARDS, renderAll } from '../../grafana/dashboards-src/index.js';

const DIR = join(import.meta.dirname, '..', '..', 'grafana', 'dashboards');

describe('generated dashboards', () => {
  const generated = renderAll();

  it('has one dashboard per concern with stable uids', () => {
    expect(DASHBOARDS.map((d) => d.uid)).toEqual([
      'cdn-traffic',
      'cdn-dvr',
      'cdn-recordings',
      'cdn-exporter',
      'cdn-cost',
    ]);
    for (const d of DASHBOARDS) expect(d.build().uid).toBe(d.uid);
  });

  it('builds the same JSON twice (stable output)', () => {
    expect(renderAll()).toEqual(generated);
  });

  it.each(generated.map((g) => [g.file, g.text] as const))('%s is committed and up to date', (file, text) => {
    let committed: string;
    try {
      committed = readFileSync(join(DIR, file), 'utf8');
    } catch {
      throw new Error(`grafana/dashboards/${file} is missing: run npm run dashboards`);
    }
    // toBe on the whole text would print two 40 kB strings; compare parsed first for a readable diff.
    expect(JSON.parse(committed), `grafana/dashboards/${file} is stale: run npm run dashboards`).toEqual(
      JSON.parse(text),
    );
    expect(
      committed === text,
      `grafana/dashboards/${file} differs in formatting: run npm run dashboards`,
    ).toBe(true);
  });

  it('holds no stray dashboard files', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual(generated.map((g) => g.file).sort());
  });
});
