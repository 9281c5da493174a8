/**
 * The two places a backfill's series go (./account-runner.ts SeriesSink): the OpenMetrics spool of `--output`
 * (./openmetrics.ts), and the remote writer of `--remote-write` (src/remote-write/, its contract in types.ts).
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

interface Offered {
  end: number;
  done: boolean;
}

/**
 * `--remote-write`: each window with samples is one batch, offered once the writer has room for it. Per account the
 * windows are acknowledged in order: `acked(account)` is the end of the last window whose batch, and every one
 * before it, the receiver accepted (or refused for good: dropped, counted by the writer).
 */
export class RemoteSink implements SeriesSink {
  private readonly ledgers = new Map<string, Offered[]>();
  private readonly ackedEnd = new Map<string, number>();
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

  put(account: string, _index: number, end: number, series: readonly SettledSeries[]): boolean {
    const ledger = this.ledgers.get(account) ?? [];
    this.ledgers.set(account, ledger);
    const entry: Offered = { end, done: series.length === 0 };
    ledger.push(entry);
    if (entry.done) {
      this.advance(account);
      return true;
    }
    this.pendingBatches++;
    const accepted = this.writer.offer({ account, end, series }, (outcome: WriteOutcome) => {
      if (outcome === 'dropped') this.batchesDropped++;
      entry.done = true;
      this.pendingBatches--;
      this.advance(account);
      if (this.pendingBatches === 0) this.idle?.();
    });
    // Another account's window took the room ready() waited for: nothing was queued, wait again.
    if (!accepted) {
      this.pendingBatches--;
      ledger.pop();
    }
    return accepted;
  }

  /** End of the last window of `account` acknowledged with all before it; undefined before the first. */
  acked(account: string): number | undefined {
    return this.ackedEnd.get(account);
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

  private advance(account: string): void {
    const ledger = this.ledgers.get(account)!;
    while (ledger.length > 0 && ledger[0]!.done) this.ackedEnd.set(account, ledger.shift()!.end);
  }
}
