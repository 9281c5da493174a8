/**
 * What the benchmark suites measure with: a full garbage collection before a timed run (each run pays for its
 * own garbage only), the median of runs, and the longest event-loop stall while some work runs.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gcFn = runInNewContext('gc') as () => void;

/** Collects until nothing more goes (a few rounds: one frees what the next can then free). */
export function fullGc(rounds = 3): void {
  for (let i = 0; i < rounds; i++) gcFn();
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Longest event-loop stall (ms) while `work` runs, from a 1 ms resolution histogram. */
export async function maxStall(work: () => Promise<unknown>): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  // The histogram records the gap between two of its ticks: let it tick before the work starts.
  await new Promise((resolve) => setTimeout(resolve, 20));
  await work();
  // Let the histogram's timer record the last stretch.
  await new Promise((resolve) => setTimeout(resolve, 5));
  h.disable();
  return h.max / 1e6;
}
