/**
 * Parse pools (src/offloop/pool.ts) on the built worker: dist/, which `npm test` builds before the tests run.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, expect } from 'vitest';
import { ParsePool, type ParsePoolOptions, type PoolKind } from '../../src/offloop/pool.js';

/** The worker entry as the build makes it. */
export const BUILT_WORKER = pathToFileURL(
  join(import.meta.dirname, '..', '..', 'dist', 'src', 'offloop', 'worker.js'),
);

export function expectBuiltWorker(): void {
  const path = fileURLToPath(BUILT_WORKER);
  expect(existsSync(path), `${path} is missing: run npm run build (npm test does)`).toBe(true);
}

/**
 * Call at a test file's top level. `pool` makes a pool on the built worker that sends every body to it (unless
 * `opts.minBytes` says otherwise); `crashingWorker` writes a worker that exits with code 3 on a body holding
 * "CRASH" and otherwise is the built one. Both are cleaned up after each test.
 */
export function builtPools(): {
  pool(kind: PoolKind, opts?: ParsePoolOptions): ParsePool;
  crashingWorker(): URL;
} {
  const pools: ParsePool[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    pool(kind, opts = {}) {
      expectBuiltWorker();
      const p = new ParsePool(kind, { minBytes: 0, workerUrl: BUILT_WORKER, ...opts });
      pools.push(p);
      return p;
    },
    crashingWorker() {
      const dir = mkdtempSync(join(tmpdir(), 'cdn-parse-worker-'));
      dirs.push(dir);
      const script = join(dir, 'crashing-worker.mjs');
      writeFileSync(
        script,
        `import { parentPort } from 'node:worker_threads';
parentPort.on('message', (m) => { if (new TextDecoder().decode(m.bytes).includes('CRASH')) process.exit(3); });
await import(${JSON.stringify(BUILT_WORKER.href)});
`,
      );
      return pathToFileURL(script);
    },
  };
}
