/**
 * The contract between whoever builds the settled windows' series (each window's samples at its own timestamps) and
 * the remote-write transport (./queue.ts). The transport knows nothing of windows or families: it sends what it is
 * given, in order.
 */

/** One series and its samples, oldest first. */
export interface SeriesSamples {
  /**
   * Every label, `['__name__', family]` included, in any order: the encoder sorts them by name (remote write 1.0
   * requires sorted labels). Names are unique within a series.
   */
  labels: readonly (readonly [string, string])[];
  /** In time order: receivers refuse a sample older than the newest of its series they hold. */
  samples: readonly { value: number; timestampMs: number }[];
}

export interface WriteBatch {
  account: string;
  /** End of the window (ms) this batch settles. */
  end: number;
  series: readonly SeriesSamples[];
}

export type WriteOutcome = 'sent' | 'dropped';

export interface RemoteWriter {
  /**
   * Queues a batch; returns false (and queues nothing) when its samples would take pending samples over
   * queue.max_pending_samples: the caller keeps it and offers later (a batch bigger than the whole bound is accepted
   * when the queue is empty). Also false once close() was called. `done` is called once, when every sample of it was
   * accepted by the receiver ('sent') or given up after a non-retryable answer ('dropped': at least one of its
   * requests was refused for good; the others were sent). Batches are sent in the order offered (per-series time
   * order matters to receivers).
   */
  offer(batch: WriteBatch, done: (outcome: WriteOutcome) => void): boolean;
  /** Samples offered and not yet sent or dropped. */
  pendingSamples(): number;
  /**
   * Resolves when room for `samples` frees up (or at once) — lets a caller wait instead of polling. Rejects when
   * `signal` aborts, and with a RemoteWriterClosed once close() was called (no room will come).
   */
  room(samples: number, signal?: AbortSignal): Promise<void>;
  /** Sends what is queued until `deadlineMs` (a Clock time), then stops; pending batches get no `done`. */
  close(deadlineMs: number): Promise<void>;
  /** Removes the account's `cdn_exporter_remote_write_settled_timestamp_seconds` series (an account gone). */
  forget(account: string): void;
}

/** What room() rejects with once the writer is closed. */
export class RemoteWriterClosed extends Error {
  constructor() {
    super('the remote writer is closed');
    this.name = 'RemoteWriterClosed';
  }
}
