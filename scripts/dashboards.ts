/**
 * Writes grafana/dashboards/*.json from grafana/dashboards-src (entry of `npm run dashboards`).
 * `--check` writes nothing and exits 1 when a committed file differs from the generated one.
 * `--out DIR` writes elsewhere (default: grafana/dashboards beside this checkout's package.json).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { renderAll } from '../grafana/dashboards-src/index.js';

function projectRoot(): string {
  // Works from the source (scripts/) and from the build (dist/scripts/).
  let dir = import.meta.dirname;
  for (let i = 0; i < 4; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'cdn-exporter') return dir;
    } catch {
      // not here; go up
    }
    dir = resolve(dir, '..');
  }
  throw new Error('cannot find the cdn-exporter package.json above this script');
}

function main(): number {
  const { values } = parseArgs({ options: { check: { type: 'boolean' }, out: { type: 'string' } } });
  const outDir = resolve(values.out ?? join(projectRoot(), 'grafana', 'dashboards'));
  const stale: string[] = [];
  if (!values.check) mkdirSync(outDir, { recursive: true });
  for (const { file, text } of renderAll()) {
    const path = join(outDir, file);
    if (values.check) {
      let current = '';
      try {
        current = readFileSync(path, 'utf8');
      } catch {
        // missing counts as stale
      }
      if (current !== text) stale.push(path);
    } else {
      writeFileSync(path, text);
      console.log(`wrote ${path}`);
    }
  }
  if (stale.length > 0) {
    console.error(`out of date (run npm run dashboards): ${stale.join(', ')}`);
    return 1;
  }
  return 0;
}

process.exitCode = main();
