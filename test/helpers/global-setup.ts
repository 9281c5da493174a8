/**
 * vitest's global setup: a file for the skipped groups (skip-log.ts beside it), printed at the end, one line per
 * group with the number of test files that skipped for it, so a run on a machine without Prometheus, promtool or
 * Chromium says in a few lines what it did not check and how to get it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SKIP_LOG_ENV } from './skip-log.js';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-skips-'));
  const file = join(dir, 'skips.log');
  process.env[SKIP_LOG_ENV] = file;
  return () => {
    let lines: string[] = [];
    try {
      lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    } catch {
      // nothing was skipped
    }
    rmSync(dir, { recursive: true, force: true });
    const counts = new Map<string, number>();
    for (const line of lines) counts.set(line, (counts.get(line) ?? 0) + 1);
    if (counts.size === 0) return;
    const out = [...counts].map(([line, n]) => ` skipped (${n} file${n === 1 ? '' : 's'}): ${line}`);
    process.stdout.write(`\n${out.join('\n')}\n`);
  };
}
