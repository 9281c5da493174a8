/**
 * One account's part of a backfill: its runs in time order, each read window by window (up to `readAhead` windows
 * asked for ahead, taken in order) and turned into series by a RunningTotals of its own (src/settled/): a run
 * starts with no totals, so each of its series begins with a zero one millisecond after its first window's start,
 * then holds the running total at each window's end.
 *
 * A counter unchanged for `retentionMs` (metrics.counter_retention) is forgotten, as RunningTotals does and as
 * /metrics does: if it comes back it starts again from a zero. Here it is forgotten exactly when its next window
 * starts more than `retentionMs` after it was last counted, whatever the moment RunningTotals sweeps (every few
 * dozen windows): a resumed run, whose sweeps fall on other windows, writes the same samples.
 *
 * Each window goes to the sink and is applied to the run's state in one turn of the event loop (after any wait
 * for room), so a snapshot taken between windows always matches what the sink holds.
 *
 * With `trackAcks` (remote write), the runner also keeps the state as acknowledged: the windows the receiver has
 * taken, all before them included, applied in order to a second copy of the runs and of the running totals, as
 * the settled writer does (src/settled/writer.ts). `acknowledged()` is what a resume may start from. That copy
 * forgets nothing itself: a counter the walk forgot is written from zero again, and its new total replaces the
 * old; one still held there when a resume starts is forgotten by the resumed walk at its next window, the rule
 * above.
 */
import type { Logger } from '../log.js';
import { RunningTotals, type SettledSeries, type TakenWindow } from '../settled/running-totals.js';
import type { WindowPoint, WindowSeries } from '../settled/window-series.js';
import { nextWindow } from './plan.js';
import type { RunProgress } from './progress-file.js';
import type { WindowReader, WindowResult } from './reader.js';

/**
 * Where a window's series go: `ready` waits for room for its samples, then `put` takes them in the same turn, or
 * returns false when the room went to another account meanwhile (then wait again). `acknowledged`, when the sink
 * tells, is called once the window is taken for good (by a receiver, or at once when there is nothing to send).
 */
export interface SeriesSink {
  ready(samples: number): Promise<void>;
  /** Takes a window's series (none: a window with nothing to write, or skipped). */
  put(
    account: string,
    index: number,
    end: number,
    series: readonly SettledSeries[],
    acknowledged?: () => void,
  ): boolean;
}

export interface AccountRunnerDeps {
  account: string;
  /** The account's place in the plan (configuration order): the order of its series in the output. */
  index: number;
  /** Its runs, in time order, as loaded (a resume) or fresh. */
  runs: RunProgress[];
  windowMs: number;
  readAhead: number;
  reader: WindowReader;
  /** With the labels every series ends with (job, instance, external labels). */
  series: WindowSeries;
  retentionMs: number;
  sink: SeriesSink;
  log: Logger;
  /** Stops the walk (the backfill's interruption or failure): windows still in flight are not waited for. */
  signal: AbortSignal;
  /** A window ending at `end` written or skipped; `extra`: windows a split added to the plan's count. */
  onWindow(samples: number, skipped: boolean, extra: number, end: number): void;
  /** Keep the state as acknowledged by the sink (remote write). */
  trackAcks?: boolean;
  /** The acknowledged state moved. */
  onAcknowledged?(): void;
}

/** How often (in windows) the keys not counted for `retentionMs` are dropped from memory. */
const SWEEP_EVERY = 64;

interface Current {
  run: RunProgress;
  totals: RunningTotals;
  /** Per counter key, the end of the last window that counted it. */
  last: Map<string, number>;
}

/** A window handed to the sink, waiting for its acknowledgement (trackAcks). */
interface Handed {
  run: number;
  end: number;
  /** Its totals (keys, totals, end): what commit reads. */
  taken: TakenWindow | undefined;
  samples: number;
  skipped: boolean;
  done: boolean;
}

export class AccountRunner {
  private current: Current | undefined;
  private windows = 0;
  /** trackAcks: the runs as acknowledged, the totals of the one under way there, the windows not yet acknowledged. */
  private readonly acked: RunProgress[];
  private ackedTotals: { run: number; totals: RunningTotals } | undefined;
  private readonly handed: Handed[] = [];

  constructor(private readonly d: AccountRunnerDeps) {
    this.acked = d.runs.map(copyRun);
  }

  /** trackAcks: where every run stands as acknowledged, with the running totals there. */
  acknowledged(): RunProgress[] {
    return this.acked.map((r, i) => {
      const copy = copyRun(r);
      if (this.ackedTotals?.run === i) copy.totals = this.ackedTotals.totals.saved();
      return copy;
    });
  }

  /** Applies the windows acknowledged at the head, in order. */
  private advance(): void {
    let moved = false;
    while (this.handed.length > 0 && this.handed[0]!.done) {
      const h = this.handed.shift()!;
      const run = this.acked[h.run]!;
      if (this.ackedTotals?.run !== h.run) {
        const totals = new RunningTotals(this.d.retentionMs);
        if (run.totals) totals.restore(run.totals);
        this.ackedTotals = { run: h.run, totals };
        run.totals = undefined;
      }
      if (h.taken) this.ackedTotals.totals.commit(h.taken);
      run.next = h.end;
      run.done ??= { windows: 0, skipped: 0, samples: 0 };
      const done = run.done;
      done.windows++;
      if (h.skipped) done.skipped++;
      done.samples += h.samples;
      moved = true;
    }
    if (moved) this.d.onAcknowledged?.();
  }

  /** The acknowledgement callback of a window put now (trackAcks), or none. */
  private hand(run: RunProgress, end: number, taken: TakenWindow | undefined, skipped: boolean) {
    if (!this.d.trackAcks) return undefined;
    const h: Handed = {
      run: this.d.runs.indexOf(run),
      end,
      taken: taken && { ...taken, series: [] },
      samples: taken?.samples ?? 0,
      skipped,
      done: false,
    };
    this.handed.push(h);
    return () => {
      h.done = true;
      this.advance();
    };
  }

  /** Where every run stands now, with the running totals of the one under way. */
  snapshot(): RunProgress[] {
    return this.d.runs.map((r) => {
      const copy = copyRun(r);
      if (this.current?.run === r) copy.totals = this.current.totals.saved();
      return copy;
    });
  }

  async run(): Promise<void> {
    for (const run of this.d.runs) {
      if (run.next >= run.end) continue;
      const totals = new RunningTotals(this.d.retentionMs);
      const last = new Map<string, number>();
      if (run.totals) {
        totals.restore(run.totals);
        for (const t of run.totals) last.set(t.key, t.lastMs);
      }
      this.current = { run, totals, last };
      run.done ??= { windows: 0, skipped: 0, samples: 0 };
      await this.walk(run);
      this.current = undefined;
      run.totals = undefined;
    }
  }

  /** Reads the run's windows from its `next`, `readAhead` ahead, and takes them in order. */
  private async walk(run: RunProgress): Promise<void> {
    const inFlight: Promise<WindowResult[]>[] = [];
    let asked = run.next;
    const ask = () => {
      while (inFlight.length < this.d.readAhead && asked < run.end) {
        const w = nextWindow(run, asked, this.d.windowMs);
        const p = this.d.reader.read(w.start, w.end);
        // A failure is seen where it is awaited; one never awaited (the walk stopped first) is not unhandled.
        p.catch(() => {});
        inFlight.push(p);
        asked = w.end;
      }
    };
    ask();
    while (inFlight.length > 0) {
      const results = await abortable(inFlight.shift()!, this.d.signal);
      ask();
      for (const r of results) await this.take(run, r, results.length - 1);
    }
  }

  private async take(run: RunProgress, r: WindowResult, extra: number): Promise<void> {
    const cur = this.current!;
    const done = run.done!;
    if (r.kind === 'rejected') {
      this.d.sink.put(this.d.account, this.d.index, r.end, [], this.hand(run, r.end, undefined, true));
      run.next = r.end;
      done.windows++;
      done.skipped++;
      this.d.onWindow(0, true, extra, r.end);
      return;
    }
    const points = this.d.series.points(this.d.account, r.start, r.end, r.response);
    this.forgetStale(cur, r.start, points);
    const taken = cur.totals.take(r.start, r.end, points);
    // Nothing else changes this run's totals meanwhile (one walk per account): put and commit in the same turn.
    for (;;) {
      await abortable(this.d.sink.ready(taken.samples), this.d.signal);
      const acknowledged = this.hand(run, r.end, taken, false);
      if (this.d.sink.put(this.d.account, this.d.index, r.end, taken.series, acknowledged)) break;
      this.handed.pop();
    }
    cur.totals.commit(taken);
    for (const key of taken.keys) cur.last.set(key, r.end);
    run.next = r.end;
    done.windows++;
    done.samples += taken.samples;
    this.d.onWindow(taken.samples, false, extra, r.end);
    if (++this.windows % SWEEP_EVERY === 0) this.sweep(cur, r.end);
  }

  /** Counters whose window starts more than retentionMs after they were last counted start again from zero. */
  private forgetStale(cur: Current, start: number, points: readonly WindowPoint[]): void {
    const stale = new Set<string>();
    for (const p of points) {
      if (p.kind !== 'counter') continue;
      const last = cur.last.get(p.key);
      if (last !== undefined && start - last > this.d.retentionMs) stale.add(p.key);
    }
    if (stale.size > 0) this.drop(cur, stale);
  }

  /** Drops from memory the keys not counted for retentionMs at `end` (forgetStale would forget them anyway). */
  private sweep(cur: Current, end: number): void {
    const stale = new Set<string>();
    for (const [key, last] of cur.last) if (end - last > this.d.retentionMs) stale.add(key);
    if (stale.size > 0) this.drop(cur, stale);
  }

  private drop(cur: Current, keys: ReadonlySet<string>): void {
    cur.totals.restore(cur.totals.saved().filter((t) => !keys.has(t.key)));
    for (const key of keys) cur.last.delete(key);
  }
}

/** `p`, or its rejection with the signal's reason once `signal` aborts first. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function copyRun(r: RunProgress): RunProgress {
  const copy: RunProgress = { account: r.account, start: r.start, end: r.end, next: r.next };
  if (r.totals) copy.totals = r.totals;
  if (r.done) copy.done = { ...r.done };
  return copy;
}
