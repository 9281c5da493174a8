/**
 * The settled writer's acknowledged side (docs/remote-write.md, "Across restarts"): per account, the windows handed
 * to the receiver wait here in order; as the receiver answers, the acknowledged cursor and totals move over every
 * window whose answer came and whose predecessors are acknowledged, and the state is saved (./settled-state.ts).
 *
 * One worker does it all: acknowledgements applied (in slices of the event loop), then a save of every account,
 * then again while more came. Nothing else changes the acknowledged totals, so each save is one consistent moment.
 */
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { RunningTotals, TakenWindow } from './running-totals.js';
import type { SavedSettled } from './settled-state.js';
import { commitInSlices } from './window-slices.js';

/** Where the acknowledged state goes (./settled-state.ts); a save is asked for after each acknowledgement. */
export interface SettledPersistence {
  save(state: SavedSettled): Promise<void>;
}

/** A window handed over or skipped, waiting for the ones before it to be acknowledged. */
export interface InFlight {
  end: number;
  /** Undefined: nothing was written for it (skipped, or no series). */
  taken: TakenWindow | undefined;
  done: boolean;
}

/** What the worker reads and moves of one account. */
export interface AcknowledgedAccount {
  /** Every window before it was accepted by the receiver or dropped by it for good. */
  acked: number | undefined;
  /** The running totals at `acked`. */
  acknowledged: RunningTotals;
  /** Windows handed over, in order. */
  inFlight: InFlight[];
}

export interface AcknowledgementsDeps {
  log: Logger;
  persistence?: SettledPersistence;
  /** The acknowledged state a previous run saved: its accounts not (yet) polled are saved as they were. */
  loaded?: SavedSettled;
  sliceMs?: number;
}

export class Acknowledgements {
  /** The worker, while it runs. */
  private worker: Promise<void> | undefined;
  /** Acknowledgements arrived since the worker last looked. */
  private ackArrived = false;
  private saveAsked = false;

  constructor(
    private readonly accounts: ReadonlyMap<string, AcknowledgedAccount>,
    private readonly d: AcknowledgementsDeps,
  ) {}

  /** An in-flight window was marked done (or a skipped one added done): the worker moves the cursors. */
  arrived(): void {
    this.ackArrived = true;
    this.kick();
  }

  /** Asks the worker for a save (one at a time; one asked meanwhile writes the newest state after it). */
  save(): void {
    this.saveAsked = true;
    this.kick();
  }

  private kick(): void {
    if (this.worker) return;
    // Reset after the promise is stored, even when the work ends without waiting on anything; an acknowledgement
    // that came after the work's last look starts it again.
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      if (this.ackArrived || (this.saveAsked && this.d.persistence)) this.kick();
    });
  }

  private async work(): Promise<void> {
    do {
      this.ackArrived = false;
      let moved = false;
      for (const a of this.accounts.values()) {
        while (a.inFlight.length > 0 && a.inFlight[0]!.done) {
          const w = a.inFlight.shift()!;
          if (w.taken) await commitInSlices(a.acknowledged, w.taken, this.d.sliceMs);
          a.acked = w.end;
          moved = true;
        }
      }
      const p = this.d.persistence;
      if (p && (moved || this.saveAsked)) {
        this.saveAsked = false;
        try {
          await p.save(this.savedState());
        } catch (err) {
          this.d.log.error({ error: describeError(err) }, 'saving the settled writer state failed');
        }
      }
    } while (this.ackArrived || (this.saveAsked && this.d.persistence));
  }

  /** The acknowledged state of every account (its totals read as the save writes them). */
  savedState(): SavedSettled {
    const accounts: SavedSettled['accounts'] = new Map();
    for (const [account, a] of this.accounts)
      if (a.acked !== undefined) accounts.set(account, { cursor: a.acked, totals: a.acknowledged.entries() });
    // Accounts a previous run saved and this one has not polled (yet): kept as they were.
    for (const [account, s] of this.d.loaded?.accounts ?? [])
      if (!accounts.has(account)) accounts.set(account, s);
    return { accounts };
  }

  /** Resolves once the acknowledgements so far are applied and the state asked to be saved is on disk. */
  async flush(): Promise<void> {
    for (let i = 0; i < 1000 && this.worker; i++) await this.worker;
  }
}
