/**
 * Memory settings the exporter gives its own process (every command but `check-config`, `--help`, `--version`). Both matter at a million
 * series (docs/operations.md, "Memory"), measured with `node dist/bench/run.js process-1M`:
 *
 * - glibc's malloc keeps freed memory in per-thread arenas and raises its mmap threshold after each big free, so
 *   the exposition buffers, rebuilt after every poll, end up fragmenting its heap: about 160 MB more resident at
 *   1M series. `MALLOC_ARENA_MAX=2` and a fixed `MALLOC_MMAP_THRESHOLD_` keep it flat: at 32 KiB every
 *   buffer from a socket read (64 KiB) up gets its own mapping, given back when freed; at 128 KiB the socket
 *   reads of each 22 MB answer still left ~75 MB of holes in the heap. The container image sets the same.
 * - V8 sizes the young generation from the machine's memory: on a 24 GB machine it grew to 134 MB committed and
 *   stayed there. `--max-semi-space-size` caps it.
 * - V8 keeps the pages a major GC frees in a pool for reuse, and gives them back to the system only in a GC that
 *   reduces memory: the memory reducer's (which waits for a low allocation rate, so a probed or scraped exporter
 *   rarely gets one) or a last-resort one (a 150 ms pause at 1M series). The pool held 90 MB after the polls of
 *   1M series. `--memory-saver-mode` makes every major GC reduce memory; on its own it also keeps the old
 *   generation's limit within 10% of the live heap, and the back-to-back full GCs that forced stalled the event
 *   loop up to 130 ms. `--heap-growing-percent=150` gives the heap room again. Together: steady RSS 245-286 MB
 *   against 298-357 MB, peak 415-417 MB against 458-513 MB, longest /healthz wait 40-55 ms.
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
/**
 * The V8 flags added, each unless the Node options already name it. V8 13 (Node 24) knows them all; an older or
 * unknown V8 gets only the first, which every V8 Node supports has.
 */
export const V8_FLAGS: readonly string[] = [
  `--max-semi-space-size=${SEMI_SPACE_MB}`,
  '--memory-saver-mode',
  '--heap-growing-percent=150',
];
const V8_FLAGS_FROM_MAJOR = 13;
/** Arguments of the short-lived uses, which gain nothing from a restart. */
const SHORT_LIVED = new Set(['check-config', '--help', '-h', '--version']);

export interface TuningInput {
  /** The command line after the script (`run --config x.yml`). */
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  execArgv: readonly string[];
  platform: string;
  canExec: boolean;
  /** process.versions.v8 */
  v8: string;
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
  const known = Number.parseInt(input.v8, 10) >= V8_FLAGS_FROM_MAJOR ? V8_FLAGS : V8_FLAGS.slice(0, 1);
  // V8 reads `--a-b` and `--a_b` alike; `--no-a-b` names `--a-b` too.
  const given = nodeOptions.replace(/_/g, '-');
  const named = (flag: string) => {
    const name = flag.split('=')[0]!.slice(2);
    return given.includes(`--${name}`) || given.includes(`--no-${name}`);
  };
  const flags = known.filter((f) => !named(f));
  if (Object.keys(added).length === 0 && flags.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return { execArgv: [...execArgv, ...flags], env: { ...out, ...added, [TUNED_MARK]: '1' } };
}
