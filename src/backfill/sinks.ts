/**
 * The two places a backfill's series go (./account-runner.ts SeriesSink): the OpenMetrics spool of `--output`
 * (./openmetrics.ts), and the remote writer of `--remote-write` (src/remote-write/, its contract in src/remote-write/types.ts).
 */
import type { RemoteWriter, WriteOutcome } from '../remote-write/index.js';
import type { SettledSeries } from '../settled/running-totals.js';
import type { SeriesSink } from './account-runner.js';
import type { OpenMetricsSpool } from './openmetrics.js';

/** `--output`: lines buffered in the spool; past `maxBufferedBytes` a window waits for `flush` (the checkpoint). */
export class FileSink implements SeriesSink {
  constructor(
    private readonly spool: OpenMetricsSpool,
    private readonly maxBufferedBytes: number,
    private readonly flush: () => Promise<void>,
  ) {}

  async ready(): Promise<void> {
    if (this.spool.buffered > this.maxBufferedBytes) await this.flush();
  }

  put(_account: string, index: number, _end: number, series: readonly SettledSeries[]): boolean {
    this.spool.add(index, series);
    return true;
  }
}

/**
 * `--remote-write`: each window with samples is one batch, offered once the writer has room for it; its
 * `acknowledged` is called when the receiver took it (or refused it for good: dropped, counted by the writer). A
 * window with nothing to send is acknowledged at once.
 */
export class RemoteSink implements SeriesSink {
  private pendingBatches = 0;
  private batchesDropped = 0;
  private idle: (() => void) | undefined;

  constructor(
    private readonly writer: RemoteWriter,
    private readonly signal: AbortSignal,
  ) {}

  /** Batches refused for good by the receiver (each at least one request of the batch). */
  get dropped(): number {
    return this.batchesDropped;
  }

  async ready(samples: number): Promise<void> {
    if (samples > 0) await this.writer.room(samples, this.signal);
  }

  put(
    account: string,
    _index: number,
    end: number,
    series: readonly SettledSeries[],
    acknowledged?: () => void,
  ): boolean {
    if (series.length === 0) {
      acknowledged?.();
      return true;
    }
    const accepted = this.writer.offer({ account, end, series }, (outcome: WriteOutcome) => {
      if (outcome === 'dropped') this.batchesDropped++;
      this.pendingBatches--;
      acknowledged?.();
      if (this.pendingBatches === 0) this.idle?.();
    });
    // Another account's window took the room ready() waited for: nothing was queued, wait again.
    if (accepted) this.pendingBatches++;
    return accepted;
  }

  /** Resolves once every batch offered was acknowledged (or `signal` aborts). */
  drained(signal: AbortSignal): Promise<void> {
    if (this.pendingBatches === 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        this.idle = undefined;
        resolve();
      };
      this.idle = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
