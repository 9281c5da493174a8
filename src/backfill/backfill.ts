/**
 * A backfill without the process around it (the command is ./command.ts): every account's runs read side by side
 * (./account-runner.ts), their series written to the `--output` spool or the remote writer, the progress saved at
 * checkpoints for `--resume`, and at the end the `.om` assembled or the remote queue drained. Tests run it on a
 * fake clock against the simulator.
 *
 * Checkpoints (every `checkpointMs`, at an interruption, at the end):
 * - `--output`: the spool's buffered lines and every run's state are taken in one turn, the lines appended to the
 *   parts and flushed, then the progress written with the parts' sizes. A crash at any moment leaves a progress
 *   file that matches a prefix of every part.
 * - `--remote-write`: an account's state is saved once the receiver acknowledged every window up to it (each
 *   account keeps one snapshot waiting for its acknowledgement). A resume sends the windows after it again, with
 *   the same timestamps and values: a receiver stores an identical sample once.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import type { RemoteWriter } from '../remote-write/index.js';
import type { WindowSeries } from '../settled/window-series.js';
import { AccountRunner } from './account-runner.js';
import type { OpenMetricsSpool, PartSizes } from './openmetrics.js';
import { windowsLeft } from './plan.js';
import type { Progress, ProgressFile, RunProgress } from './progress-file.js';
import { BackfillStop, type FetchWindow, WindowReader } from './reader.js';
import { FileSink, RemoteSink } from './sinks.js';

export type BackfillOutputDeps =
  | { kind: 'file'; spool: OpenMetricsSpool; path: string; maxBufferedBytes: number; parts?: PartSizes }
  | { kind: 'remote'; writer: RemoteWriter; timeoutMs: number; graceMs: number };

export interface BackfillDeps {
  asked: string;
  /** Accounts in configuration order (their order in the output). */
  accounts: readonly string[];
  runs: RunProgress[];
  windowMs: number;
  /** Metrics requests a run of this backfill sent before this process (a resume). */
  requestsBefore: number;
  /** Metrics requests this process sent so far. */
  requests(): number;
  fetchFor(account: string): FetchWindow;
  readAhead: number;
  /** With the labels every series ends with (job, instance, external labels). */
  series: WindowSeries;
  retentionMs: number;
  output: BackfillOutputDeps;
  progressFile?: ProgressFile;
  checkpointMs: number;
  clock: Clock;
  log: Logger;
  random: () => number;
  backoff: BackoffPolicy;
  /** Windows done and planned, and requests, after each window (a progress display). */
  onProgress?(done: number, total: number, requests: number): void;
  /** The interruption (SIGINT, SIGTERM): stops reading, saves the progress. */
  signal: AbortSignal;
}

export interface BackfillResult {
  /** done: every run written; interrupted: the signal; stopped: a failure retrying cannot mend (`error`). */
  status: 'done' | 'interrupted' | 'stopped';
  error?: string;
  windows: number;
  skipped: number;
  samples: number;
  requests: number;
  /** `--output`: the bytes of the file written. */
  bytes?: number;
  /** `--remote-write`: batches the receiver refused for good. */
  droppedBatches?: number;
  runs: RunProgress[];
}

export async function runBackfill(d: BackfillDeps): Promise<BackfillResult> {
  return new Backfill(d).run();
}

class Backfill {
  private readonly stop = new AbortController();
  private readonly runners: AccountRunner[] = [];
  private readonly fileSink: FileSink | undefined;
  private readonly remoteSink: RemoteSink | undefined;
  private saving: Promise<void> = Promise.resolve();
  /** --remote-write: per account, the runs as acknowledged, and a snapshot waiting for its acknowledgement. */
  private readonly acknowledged = new Map<string, RunProgress[]>();
  private readonly waiting = new Map<string, { end: number; runs: RunProgress[] }>();
  private readonly lastEnd = new Map<string, number>();
  private done = 0;
  private total = 0;

  constructor(private readonly d: BackfillDeps) {
    const interrupt = () => this.stop.abort(d.signal.reason);
    if (d.signal.aborted) interrupt();
    else d.signal.addEventListener('abort', interrupt, { once: true });
    const out = d.output;
    if (out.kind === 'file')
      this.fileSink = new FileSink(out.spool, out.maxBufferedBytes, () => this.checkpoint());
    else this.remoteSink = new RemoteSink(out.writer, this.stop.signal);
    for (const r of d.runs) {
      this.done += r.done?.windows ?? 0;
      this.total += (r.done?.windows ?? 0) + windowsLeft(r, r.next, d.windowMs);
    }
    d.accounts.forEach((account, index) => {
      const runs = d.runs.filter((r) => r.account === account).sort((a, b) => a.start - b.start);
      this.acknowledged.set(account, runs.map(copyRun));
      const reader = new WindowReader(account, d.fetchFor(account), {
        clock: d.clock,
        log: d.log,
        backoff: d.backoff,
        random: d.random,
        signal: this.stop.signal,
      });
      this.runners.push(
        new AccountRunner({
          account,
          index,
          runs,
          windowMs: d.windowMs,
          readAhead: d.readAhead,
          reader,
          series: d.series,
          retentionMs: d.retentionMs,
          sink: (this.fileSink ?? this.remoteSink)!,
          log: d.log,
          signal: this.stop.signal,
          onWindow: (_samples, _skipped, extra, end) => {
            this.done++;
            this.total += extra;
            this.lastEnd.set(account, end);
            d.onProgress?.(this.done, this.total, this.requests());
          },
        }),
      );
    });
  }

  private requests(): number {
    return this.d.requestsBefore + this.d.requests();
  }

  async run(): Promise<BackfillResult> {
    const out = this.d.output;
    if (out.kind === 'file' && out.parts) await out.spool.restore(out.parts);
    let failure: unknown;
    const ticking = this.tick();
    await Promise.all(
      this.runners.map((r) =>
        r.run().catch((err: unknown) => {
          if (!this.stop.signal.aborted) {
            failure = err;
            this.stop.abort(err);
          }
        }),
      ),
    );
    const complete = !this.stop.signal.aborted;
    if (!this.stop.signal.aborted) this.stop.abort();
    await ticking;
    const result = this.result(
      complete ? 'done' : failure === undefined ? 'interrupted' : 'stopped',
      failure,
    );
    if (out.kind === 'file') {
      await this.checkpoint();
      if (complete) {
        result.bytes = await out.spool.assemble(out.path);
        await out.spool.remove();
        await this.d.progressFile?.remove();
      }
    } else {
      if (complete) await this.remoteSink!.drained(this.d.signal);
      const graceMs = complete && !this.d.signal.aborted ? out.timeoutMs : out.graceMs;
      await out.writer.close(this.d.clock.now() + graceMs);
      result.droppedBatches = this.remoteSink!.dropped;
      const all = this.acknowledge(true);
      if (complete && all && !this.d.signal.aborted) await this.d.progressFile?.remove();
      else {
        // Read through, but interrupted while the receiver still had windows to acknowledge.
        if (complete) result.status = 'interrupted';
        await this.save();
      }
    }
    return result;
  }

  private result(status: BackfillResult['status'], failure: unknown): BackfillResult {
    const runs = this.runners.flatMap((r) => r.snapshot());
    const sum = (k: 'windows' | 'skipped' | 'samples') => runs.reduce((n, r) => n + (r.done?.[k] ?? 0), 0);
    const result: BackfillResult = {
      status,
      windows: sum('windows'),
      skipped: sum('skipped'),
      samples: sum('samples'),
      requests: this.requests(),
      runs,
    };
    if (failure !== undefined)
      result.error =
        failure instanceof BackfillStop || failure instanceof Error ? failure.message : String(failure);
    return result;
  }

  /** Checkpoints every checkpointMs until the runners end. */
  private async tick(): Promise<void> {
    while (!this.stop.signal.aborted) {
      await this.d.clock.sleep(this.d.checkpointMs, this.stop.signal).catch(() => {});
      if (this.stop.signal.aborted) return;
      if (this.fileSink) await this.checkpoint();
      else if (this.acknowledge(false)) await this.save();
    }
  }

  /** --output: the spool's lines and the runs' state taken now, written in order after the ones taken before. */
  private checkpoint(): Promise<void> {
    const out = this.d.output;
    if (out.kind !== 'file') return Promise.resolve();
    const runs = this.runners.flatMap((r) => r.snapshot());
    const taken = out.spool.take();
    const progress: Progress = { asked: this.d.asked, runs, parts: taken.sizes, requests: this.requests() };
    this.saving = this.saving.then(async () => {
      await out.spool.write(taken);
      await this.d.progressFile?.save(progress);
    });
    return this.saving;
  }

  /**
   * --remote-write: moves each account's waiting snapshot to `acknowledged` once the receiver acknowledged up to it,
   * and takes a new one. `final`: also the state now, if everything handed over was acknowledged. Returns true when
   * something changed (final: when every account is acknowledged up to its last window).
   */
  private acknowledge(final: boolean): boolean {
    const sink = this.remoteSink!;
    let changed = false;
    let all = true;
    this.d.accounts.forEach((account, i) => {
      const acked = sink.acked(account) ?? Number.NEGATIVE_INFINITY;
      const last = this.lastEnd.get(account);
      const w = this.waiting.get(account);
      if (final) {
        if (last === undefined || acked >= last) {
          this.acknowledged.set(account, this.runners[i]!.snapshot());
          this.waiting.delete(account);
          changed = true;
          return;
        }
        all = false;
      }
      if (w && acked >= w.end) {
        this.acknowledged.set(account, w.runs);
        this.waiting.delete(account);
        changed = true;
      }
      if (!final && !this.waiting.has(account) && last !== undefined && last !== w?.end)
        this.waiting.set(account, { end: last, runs: this.runners[i]!.snapshot() });
    });
    return final ? all : changed;
  }

  /** --remote-write: the acknowledged state, one save at a time. */
  private save(): Promise<void> {
    const runs = this.d.accounts.flatMap((a) => this.acknowledged.get(a) ?? []);
    const progress: Progress = { asked: this.d.asked, runs, requests: this.requests() };
    this.saving = this.saving.then(() => this.d.progressFile?.save(progress));
    return this.saving;
  }
}

function copyRun(r: RunProgress): RunProgress {
  const copy: RunProgress = { account: r.account, start: r.start, end: r.end, next: r.next };
  if (r.totals) copy.totals = r.totals;
  if (r.done) copy.done = { ...r.done };
  return copy;
}
