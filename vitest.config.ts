import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take the longest, most of it waiting on real time (a receiver held down two minutes, processes
 * killed and restarted, promtool's blocks), started first: a fresh clone has no durations cached, so vitest would
 * order by file size and could leave one of them running alone at the end of the run. Measured in `.ci/run`.
 */
const LONGEST_FIRST = [
  'test/e2e/remote-write.test.ts',
  'test/cli/exact-across-restarts.test.ts',
  'test/e2e/cost-month.test.ts',
  'test/scenarios/top-resources.test.ts',
  'test/backfill/promtool-week.test.ts',
  'test/cli/misuse.test.ts',
  'test/scenarios/fault-schedules.test.ts',
  'test/scenarios/limits.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    const sorted = await super.sort(files);
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Lists the groups skipped for a missing tool once, at the end of the run (test/helpers/skip-log.ts).
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    sequence: { sequencer: LongestFirst },
    // Two files at a time at least: most of the suite waits on loopback, child processes and the simulator, not
    // on the CPU, so a second worker nearly halves the run on a 2-core machine (vitest's default there is one).
    // Every test holds on a busy machine (docs/development.md, "Tests that hold on a busy machine"); a second
    // worker beside two busy loops is how that is checked before a stop.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
