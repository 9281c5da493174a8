import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Lists the groups skipped for a missing tool once, at the end of the run (test/helpers/skip-log.ts).
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two files at a time at least: most of the suite waits on loopback, child processes and the simulator, not
    // on the CPU, so a second worker nearly halves the run on a 2-core machine (vitest's default there is one).
    // Every test holds on a busy machine (docs/development.md, "Tests that hold on a busy machine"); a second
    // worker beside two busy loops is how that is checked before a stop.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
