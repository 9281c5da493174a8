/**
 * Skipped groups, said once at the end of the run. A test file that skips for a missing tool calls `noteSkip`; the
 * workers are separate processes, so each appends its line to the file that `global-setup.ts` names in
 * CDN_TEST_SKIP_LOG, and that setup's teardown prints each distinct line once after vitest's summary.
 */
import { appendFileSync } from 'node:fs';

export const SKIP_LOG_ENV = 'CDN_TEST_SKIP_LOG';

/** Says why a group of tests is skipped: now on stderr, and once more in the run's closing list. */
export function noteSkip(line: string): void {
  console.warn(`skipping: ${line}`);
  const file = process.env[SKIP_LOG_ENV];
  if (file) appendFileSync(file, `${line}\n`);
}
