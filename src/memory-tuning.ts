/**
 * Memory settings the exporter gives its own process (every command but `check-config`, `--help`, `--version`). Both matter at a million
 * series (README, "Memory"), measured with `node dist/bench/run.js process-1M`:
 *
 * - glibc's malloc keeps freed memory in per-thread arenas and raises its mmap threshold after each big free, so
 *   the exposition buffers, rebuilt after every poll, end up fragmenting its heap: about 160 MB more resident at
 *   1M series. `MALLOC_ARENA_MAX=2` and a fixed `MALLOC_MMAP_THRESHOLD_` keep it flat: at 32 KiB every
 *   buffer from a socket read (64 KiB) up gets its own mapping, given back when freed; at 128 KiB the socket
 *   reads of each 22 MB answer still left ~75 MB of holes in the heap. The container image sets the same.
 * - V8 sizes the young generation from the machine's memory: on a 24 GB machine it grew to 134 MB committed and
 *   stayed there. `--max-semi-space-size` caps it.
 *
 * Both must be in place when the process starts, so the entry point re-executes itself once (`process.execve`,
 * same pid, same stdio) with them added. It adds only what the environment and the Node options do not already
 * set, and does nothing when CDN_EXPORTER_TUNED is set (to anything: `CDN_EXPORTER_TUNED=0` turns it off), on
 * platforms other than Linux, or on a Node without `process.execve`. No imports: the entry point loads this first.
 */

export const TUNED_MARK = 'CDN_EXPORTER_TUNED';
export const MALLOC_SETTINGS: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '32768',
};
/** MiB per semi-space: 3 of them make the young generation, ~48 MiB. */
export const SEMI_SPACE_MB = 16;
/** Arguments of the short-lived uses, which gain nothing from a restart. */
const SHORT_LIVED = new Set(['check-config', '--help', '-h', '--version']);

export interface TuningInput {
  /** The command line after the script (`run --config x.yml`). */
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  execArgv: readonly string[];
  platform: string;
  canExec: boolean;
}

export interface Restart {
  execArgv: string[];
  env: Record<string, string>;
}

/** How to restart the process tuned, or undefined to go on as it is. */
export function tunedRestart(input: TuningInput): Restart | undefined {
  const { argv, env, execArgv } = input;
  if (!input.canExec || input.platform !== 'linux' || env[TUNED_MARK] !== undefined) return undefined;
  if (argv.some((a) => SHORT_LIVED.has(a))) return undefined;
  const added: Record<string, string> = {};
  for (const [k, v] of Object.entries(MALLOC_SETTINGS)) if (env[k] === undefined) added[k] = v;
  const nodeOptions = `${env.NODE_OPTIONS ?? ''} ${execArgv.join(' ')}`;
  const flags = nodeOptions.includes('--max-semi-space-size')
    ? []
    : [`--max-semi-space-size=${SEMI_SPACE_MB}`];
  if (Object.keys(added).length === 0 && flags.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return { execArgv: [...execArgv, ...flags], env: { ...out, ...added, [TUNED_MARK]: '1' } };
}
