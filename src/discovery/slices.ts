/**
 * Work over a whole inventory (100,000 accounts, by mistake or worse) done in slices: each slice runs at most about
 * SLICE_MS, then yields to the event loop (so /healthz and /metrics answer meanwhile), and the work ends early once
 * its signal aborts. Each item costs O(1) on top of its own work: O(N) in all, never one O(N) block.
 */

/** Work between two yields to the event loop (the traffic applier's slice). */
export const SLICE_MS = 10;

export interface Slicing {
  /** Ends the work early: the rest is not done. */
  signal?: AbortSignal;
  /** Longest slice (default SLICE_MS; 0 yields after every item). */
  sliceMs?: number;
}

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * When the current slice ends, shared by every call: work done as several passes in one turn of the loop (the
 * sort's merges, discovery's filter then diff then start) still yields every SLICE_MS. A budget per call let
 * the sort's many small merges of one level run as one block (~90 ms for 100,000 names). A deadline left from an
 * earlier turn only makes the first item yield.
 */
let sliceEnd = 0;

/**
 * Calls `fn` for each item (awaiting it when it returns a promise), yielding to the event loop between slices.
 * False when the signal ended it before the last item.
 */
export async function inSlices<T>(
  items: Iterable<T>,
  fn: (item: T) => unknown,
  { signal, sliceMs = SLICE_MS }: Slicing = {},
): Promise<boolean> {
  for (const item of items) {
    if (signal?.aborted) return false;
    const done = fn(item);
    if (done instanceof Promise) await done;
    if (performance.now() >= sliceEnd) {
      await yieldToLoop();
      sliceEnd = performance.now() + sliceMs;
    }
  }
  return !signal?.aborted;
}

/** Items sorted by each RUN of them before the merges (a sort of 1,024 names: well under a millisecond). */
const RUN = 1024;

/**
 * `items` sorted as Array.prototype.sort does without a comparator (by UTF-16 code units), in slices: runs sorted,
 * then merged pairwise, O(N log N) in all. Undefined when the signal ended it.
 */
export async function sortedInSlices(
  items: readonly string[],
  slicing: Slicing = {},
): Promise<string[] | undefined> {
  let runs: string[][] = [];
  const starts = Array.from({ length: Math.ceil(items.length / RUN) }, (_, i) => i * RUN);
  if (!(await inSlices(starts, (at) => runs.push(items.slice(at, at + RUN).sort()), slicing)))
    return undefined;
  while (runs.length > 1) {
    const merged: string[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const b = runs[i + 1];
      if (b === undefined) {
        merged.push(runs[i]!);
        continue;
      }
      const a = runs[i]!;
      const out = new Array<string>(a.length + b.length);
      let ia = 0;
      let ib = 0;
      const ok = await inSlices(
        out.keys(),
        (k) => {
          out[k] = ib >= b.length || (ia < a.length && a[ia]! <= b[ib]!) ? a[ia++]! : b[ib++]!;
        },
        slicing,
      );
      if (!ok) return undefined;
      merged.push(out);
    }
    runs = merged;
  }
  return runs[0] ?? [];
}
