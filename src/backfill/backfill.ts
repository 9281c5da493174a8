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
 * - `--remote-write`: the state as the receiver acknowledged it (./account-runner.ts `acknowledged`). A resume
 *   sends the windows after it again, with the same timestamps and values: a receiver stores an identical sample
 *   once.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import type { RemoteWriter } from '../remote-write/index.js';
import type { WindowSeries } from '../settled/window-series.js';
import { AccountRunner } from './account-runner.js';
import type { KeptResources } from './kept-resources.js';
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
  /** With the labels every series ends with (job, instance, external labels), folding by `kept`. */
  series: WindowSeries;
  /** limits.top_resources: the resources kept apart, saved with the progress so a resume folds the same way. */
  kept?: KeptResources;
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
  /** --remote-write: the acknowledged state moved since the last save. */
  private ackMoved = false;
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
          onWindow: (_samples, _skipped, extra) => {
            this.done++;
            this.total += extra;
            d.onProgress?.(this.done, this.total, this.requests());
          },
          trackAcks: out.kind === 'remote',
          onAcknowledged: () => {
            this.ackMoved = true;
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
    // Checkpoints go on while the remote queue drains after the last read, until the end.
    const ticks = new AbortController();
    const ticking = this.tick(ticks.signal);
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
    if (out.kind === 'remote' && complete) await this.remoteSink!.drained(this.d.signal);
    if (!this.stop.signal.aborted) this.stop.abort();
    ticks.abort();
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
      const graceMs = complete && !this.d.signal.aborted ? out.timeoutMs : out.graceMs;
      await out.writer.close(this.d.clock.now() + graceMs);
      result.droppedBatches = this.remoteSink!.dropped;
      const runs = this.runners.flatMap((r) => r.acknowledged());
      if (runs.every((r) => r.next >= r.end)) await this.d.progressFile?.remove();
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

  /** Checkpoints every checkpointMs until `signal` aborts. */
  private async tick(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.d.clock.sleep(this.d.checkpointMs, signal).catch(() => {});
      if (signal.aborted) return;
      if (this.fileSink) await this.checkpoint();
      else if (this.ackMoved) await this.save();
    }
  }

  /** --output: the spool's lines and the runs' state taken now, written in order after the ones taken before. */
  private checkpoint(): Promise<void> {
    const out = this.d.output;
    if (out.kind !== 'file') return Promise.resolve();
    const runs = this.runners.flatMap((r) => r.snapshot());
    const taken = out.spool.take();
    const progress: Progress = {
      asked: this.d.asked,
      runs,
      parts: taken.sizes,
      requests: this.requests(),
      ...(this.d.kept ? { kept: this.d.kept } : {}),
    };
    this.saving = this.saving.then(async () => {
      await out.spool.write(taken);
      await this.d.progressFile?.save(progress);
    });
    return this.saving;
  }

  /** --remote-write: the acknowledged state, one save at a time. */
  private save(): Promise<void> {
    this.ackMoved = false;
    const runs = this.runners.flatMap((r) => r.acknowledged());
    const progress: Progress = {
      asked: this.d.asked,
      runs,
      requests: this.requests(),
      ...(this.d.kept ? { kept: this.d.kept } : {}),
    };
    this.saving = this.saving.then(() => this.d.progressFile?.save(progress));
    return this.saving;
  }
}
