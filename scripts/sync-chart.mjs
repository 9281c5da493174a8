#!/usr/bin/env node
/**
 * Copies the project's alert rules and Grafana dashboards into the Helm chart, which can only read files inside
 * itself (.Files.Get): rules/cdn-exporter.rules.yml -> helm/cdn-exporter/files/rules/, grafana/dashboards/*.json ->
 * helm/cdn-exporter/files/dashboards/ (dashboards no longer in grafana/dashboards are removed from the chart).
 *
 *   node scripts/sync-chart.mjs           copy (npm run chart:sync)
 *   node scripts/sync-chart.mjs --check   change nothing; exit 1 and name the files when the chart's copies differ
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chartFiles = join(root, 'helm/cdn-exporter/files');

/** [source, copy] pairs, and the copies that have no source any more. */
function plan() {
  const pairs = [
    [join(root, 'rules/cdn-exporter.rules.yml'), join(chartFiles, 'rules/cdn-exporter.rules.yml')],
  ];
  const srcDir = join(root, 'grafana/dashboards');
  const dstDir = join(chartFiles, 'dashboards');
  const sources = existsSync(srcDir) ? readdirSync(srcDir).filter((f) => f.endsWith('.json')) : [];
  for (const f of sources.sort()) pairs.push([join(srcDir, f), join(dstDir, f)]);
  const copies = existsSync(dstDir) ? readdirSync(dstDir).filter((f) => f.endsWith('.json')) : [];
  const stale = copies.filter((f) => !sources.includes(f)).map((f) => join(dstDir, f));
  return { pairs, stale };
}

const same = (a, b) => existsSync(b) && readFileSync(a).equals(readFileSync(b));
const rel = (p) => p.slice(root.length + 1);

const { pairs, stale } = plan();
const missing = pairs.filter(([src]) => !existsSync(src)).map(([src]) => rel(src));
if (missing.length > 0) {
  console.error(`sync-chart: source missing: ${missing.join(', ')}`);
  process.exit(2);
}

if (process.argv.includes('--check')) {
  const differ = [
    ...pairs.filter(([src, dst]) => !same(src, dst)).map(([, dst]) => rel(dst)),
    ...stale.map(rel),
  ];
  if (differ.length > 0) {
    console.error(
      `sync-chart: the chart's copies differ from their sources; run npm run chart:sync:\n  ${differ.join('\n  ')}`,
    );
    process.exit(1);
  }
  console.log(`sync-chart: ${pairs.length} files in sync`);
} else {
  for (const [src, dst] of pairs) {
    mkdirSync(dirname(dst), { recursive: true });
    copyFileSync(src, dst);
  }
  for (const p of stale) rmSync(p);
  console.log(`sync-chart: copied ${pairs.length} files, removed ${stale.length}`);
}
