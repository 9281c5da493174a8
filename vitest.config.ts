import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at a time at least: most of the suite waits on loopback, processes and real-time bounds, not on
    // the CPU, so a second worker halves the run on a 2-core machine (vitest's default there is one). Every test
    // holds on a busy machine (docs/development.md), which is what a second worker makes it.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
