/**
 * A remote writer for the backfill's tests, built on the RemoteWriter interface (src/remote-write/types.ts) alone:
 * room for a number of batches at once, and a receiver that answers only when the test says, oldest batch first.
 */
import type { RemoteWriter, WriteBatch, WriteOutcome } from '../../src/remote-write/types.js';

export class FakeWriter implements RemoteWriter {
  /** Every batch accepted, in offer order. */
  readonly offered: { batch: WriteBatch; done: (o: WriteOutcome) => void }[] = [];
  /** Offers refused for want of room. */
  refusals = 0;
  /** The samples each room() call asked for. */
  readonly roomAsked: number[] = [];
  /** The deadline close() was given; undefined until then. */
  closedAt: number | undefined;
  private readonly waiting: (() => void)[] = [];
  private answered = 0;

  /** `free`: batches the queue takes before a receiver's answer frees room. */
  constructor(private free: number) {}

  /** Batches accepted and not answered yet. */
  get unanswered(): number {
    return this.offered.length - this.answered;
  }

  offer(batch: WriteBatch, done: (o: WriteOutcome) => void): boolean {
    if (this.free === 0 || this.closedAt !== undefined) {
      this.refusals++;
      return false;
    }
    this.free--;
    this.offered.push({ batch, done });
    return true;
  }

  /** The receiver answers the oldest batch not yet answered. */
  answer(outcome: WriteOutcome): void {
    const next = this.offered[this.answered++]!;
    this.free++;
    next.done(outcome);
    for (const w of this.waiting.splice(0)) w();
  }

  pendingSamples(): number {
    return 0;
  }

  room(samples: number, signal?: AbortSignal): Promise<void> {
    this.roomAsked.push(samples);
    if (this.free > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve);
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  async close(deadlineMs: number): Promise<void> {
    this.closedAt = deadlineMs;
  }

  forget(): void {}
}
