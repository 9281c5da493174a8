/**
 * The settled writer (docs/remote-write.md): takes each account's settled windows (src/traffic/pipeline.ts
 * `windowSettled`, `settledSkipped`) in time order, turns them into series with their own timestamps
 * (./window-series.ts, ./running-totals.ts) and hands them to a `BatchWriter` (remote write, src/remote-write/).
 *
 * Per account it keeps a cursor `next`: every minute before it has been handed to the batch writer (or skipped).
 * - A window starting at `next` is taken at once. One starting later is held until the gap before it is filled;
 *   one ending at or before `next` was written already (a restart re-counts windows no scrape saw) and is left.
 * - A gap no settled window will fill (the state file's cursor behind the walk after a restart, a window refused
 *   by a full queue, a window that straddles `next`, a held window over the bound) is read by the writer itself,
 *   through the account's upstream at the revisits' priority, once its minutes are final (delay + revisit old).
 *   A gap that may still be filled (a revisit out of order) waits `graceMs` first.
 * - The cursor saved (./settled-state.ts) is the acknowledged one (./acknowledgements.ts): every window before it
 *   was accepted by the receiver or dropped by it for good (counted), with the running totals as they were there.
 *   A restart resumes there, so a window in the queue at a crash is read and written again, with the same
 *   timestamps and values: a receiver takes an identical sample twice as once. Nothing is skipped and nothing
 *   counts twice.
 */
import { type Clock, floorMinute, MINUTE } from '../clock.js';
import { describeError, isApiError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { TrafficResponse } from '../traffic/response.js';
import {
  type AcknowledgedAccount,
  Acknowledgements,
  type InFlight,
  type SettledPersistence,
} from './acknowledgements.js';
import { RunningTotals, type SettledSeries, type TakenWindow } from './running-totals.js';
import type { SavedSettled } from './settled-state.js';
import type { WindowSeries } from './window-series.js';
import { commitInSlices, takeInSlices } from './window-slices.js';

export type { SettledPersistence } from './acknowledgements.js';

export type WriteOutcome = 'sent' | 'dropped';

/** What the writer sends through (src/remote-write/ implements it). */
export interface BatchWriter {
  /** false: the queue is full and took nothing. `done` is called once the batch was sent or dropped for good. */
  offer(
    batch: { account: string; end: number; series: readonly SettledSeries[] },
    done: (outcome: WriteOutcome) => void,
  ): boolean;
  /** Resolves once `samples` more would fit. */
  room(samples: number, signal?: AbortSignal): Promise<void>;
}

export interface SettledWriterOptions {
  /** delay + revisit: a window is final once its end is this old. */
  finalAfterMs: number;
  /** How long a gap waits for the settled window that may still fill it before the writer reads it itself. */
  graceMs: number;
  /** Longest window the writer reads itself (the API's maximum, 10 minutes). */
  maxReadMs: number;
  /**
   * Records of settled windows held out of order (each record is at least one sample: queue.max_pending_samples
   * bounds it); past it a window is not held but read again once its turn comes.
   */
  maxHeldRecords: number;
  /** How often the writer looks for gaps to read when nothing woke it. */
  tickMs: number;
  /**
   * Longest stretch of event-loop time one window's series take before the writer yields (the applier's slices
   * are as long): a window of a million series is taken in pieces, and scrapes are served between them.
   */
  sliceMs?: number;
  /** Records turned into points between two looks at the time (./window-slices.ts has the default). */
  partRecords?: number;
}

export interface SettledWriterDeps {
  clock: Clock;
  log: Logger;
  batches: BatchWriter;
  series: WindowSeries;
  retentionMs: number;
  persistence?: SettledPersistence;
  /** The acknowledged state a previous run saved. */
  loaded?: SavedSettled;
  /** A window the writer read itself (a gap no settled window filled): counted for the self-metrics. */
  readOwn?: (account: string) => void;
  /** An account forgotten: its self-metric series go. */
  forgotten?: (account: string) => void;
}

type Reader = (start: number, end: number) => Promise<TrafficResponse>;

interface Held {
  start: number;
  end: number;
  /** Undefined: a skipped window. */
  response: TrafficResponse | undefined;
  records: number;
}

class AccountState implements AcknowledgedAccount {
  next: number | undefined;
  acked: number | undefined;
  queued: RunningTotals;
  acknowledged: RunningTotals;
  held: Held[] = [];
  heldRecords = 0;
  /** Newest end of a window settled or skipped by the pipeline. */
  horizon = Number.NEGATIVE_INFINITY;
  /** A gap no settled window will fill: read it as soon as its minutes are final. */
  lost = false;
  gapSince: number | undefined;
  reader: Reader | undefined;
  /** A window being taken (in slices) or read: the next waits for it, in order. */
  busy = false;
  /** After a failed read: not before this time. */
  retryAt = 0;
  failures = 0;
  lastError = '';
  inFlight: InFlight[] = [];

  constructor(totals: RunningTotals) {
    this.queued = totals;
    this.acknowledged = totals.clone();
  }
}

export class SettledWriter {
  private readonly accounts = new Map<string, AccountState>();
  private wake: (() => void) | undefined;
  private readonly acks: Acknowledgements;

  constructor(
    private readonly o: SettledWriterOptions,
    private readonly d: SettledWriterDeps,
  ) {
    this.acks = new Acknowledgements(this.accounts, {
      log: d.log,
      ...(d.persistence ? { persistence: d.persistence } : {}),
      ...(d.loaded ? { loaded: d.loaded } : {}),
      ...(o.sliceMs !== undefined ? { sliceMs: o.sliceMs } : {}),
    });
  }

  private state(account: string): AccountState {
    let a = this.accounts.get(account);
    if (!a) {
      const totals = new RunningTotals(this.d.retentionMs);
      const saved = this.d.loaded?.accounts.get(account);
      if (saved) totals.restore(saved.totals);
      a = new AccountState(totals);
      if (saved) {
        a.next = saved.cursor;
        a.acked = saved.cursor;
      }
      this.accounts.set(account, a);
    }
    return a;
  }

  /**
   * The account's poller started, walking from `walkFrom` (its counted cursor): the writer starts there too, or
   * at its own saved cursor; a saved cursor behind the walk is a gap only the writer's reads will fill.
   */
  attach(account: string, reader: Reader, walkFrom: number): void {
    const a = this.state(account);
    a.reader = reader;
    if (a.next === undefined) {
      // Saved at once: a run killed before its first acknowledgement resumes here, not at a later walk.
      a.next = walkFrom;
      a.acked = walkFrom;
      this.save();
    } else if (a.next < walkFrom) {
      a.lost = true;
    }
    a.horizon = Math.max(a.horizon, walkFrom);
    this.poke();
  }

  /** The account stopped: its reads end; what it handed over stays queued. */
  detach(account: string): void {
    const a = this.accounts.get(account);
    if (a) a.reader = undefined;
  }

  /**
   * The account was away longer than metrics.counter_retention (its scraped counters go too): its cursor and
   * totals are dropped, here and from the state, unless it came back meanwhile. If it returns later its series
   * start again from a zero.
   */
  forget(account: string): void {
    const a = this.accounts.get(account);
    if (a?.reader !== undefined || a?.busy) return;
    this.accounts.delete(account);
    this.d.loaded?.accounts.delete(account);
    this.d.forgotten?.(account);
    this.save();
  }

  settled(account: string, start: number, end: number, response: TrafficResponse): void {
    const a = this.state(account);
    a.horizon = Math.max(a.horizon, end);
    a.next ??= start;
    a.acked ??= start;
    this.intake(a, account, start, end, response);
  }

  /** A settled or skipped window from the pipeline: taken now if it is next, else held (or left to be read). */
  private intake(
    a: AccountState,
    account: string,
    start: number,
    end: number,
    response: TrafficResponse | undefined,
  ): void {
    const next = a.next!;
    if (end <= next) return;
    if (start < next) {
      a.lost = true;
    } else if (!a.held.some((h) => h.start === start)) {
      const records = response?.records.length ?? 0;
      if (a.heldRecords + records <= this.o.maxHeldRecords) {
        a.held.push({ start, end, response, records });
        a.held.sort((x, y) => x.start - y.start);
        a.heldRecords += records;
        if (start > next) a.gapSince ??= this.d.clock.now();
      } else a.lost = true;
    }
    this.drainHeld(a, account);
    this.poke();
  }

  skipped(account: string, start: number, end: number, _reason: string): void {
    const a = this.state(account);
    a.horizon = Math.max(a.horizon, end);
    a.next ??= start;
    a.acked ??= start;
    this.intake(a, account, start, end, undefined);
  }

  /** The samples handed over and not yet acknowledged, by account: for the tests and the landing page. */
  cursor(account: string): { next: number | undefined; acked: number | undefined } | undefined {
    const a = this.accounts.get(account);
    return a ? { next: a.next, acked: a.acked } : undefined;
  }

  /** Reads the gaps until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      for (const [account, a] of this.accounts) this.drainHeld(a, account);
      const reads: Promise<void>[] = [];
      for (const [account, a] of this.accounts) {
        const gap = this.gap(a);
        if (gap) reads.push(this.read(a, account, gap.start, gap.end, signal));
      }
      await Promise.all(reads);
      if (reads.length > 0) continue;
      // A wait of its own, ended by a poke or the stop: no timer left behind per poke.
      const woken = new AbortController();
      const stop = () => woken.abort();
      signal.addEventListener('abort', stop, { once: true });
      this.wake = stop;
      await this.d.clock.sleep(this.o.tickMs, woken.signal).catch(() => {});
      signal.removeEventListener('abort', stop);
      this.wake = undefined;
    }
    await this.flush();
  }

  private poke(): void {
    this.wake?.();
  }

  /** The gap to read now, if any: from `next`, up to what is held or the pipeline settled, once final. */
  private gap(a: AccountState): { start: number; end: number } | undefined {
    if (a.reader === undefined || a.busy || a.next === undefined) return undefined;
    const now = this.d.clock.now();
    if (now < a.retryAt) return undefined;
    const until = a.held[0]?.start ?? a.horizon;
    if (until <= a.next) {
      if (a.held.length === 0) {
        a.lost = false;
        a.gapSince = undefined;
      }
      return undefined;
    }
    if (!a.lost && (a.gapSince === undefined || now - a.gapSince < this.o.graceMs)) return undefined;
    const final = floorMinute(now - this.o.finalAfterMs);
    const end = Math.min(until, a.next + this.o.maxReadMs, final);
    return end > a.next ? { start: a.next, end } : undefined;
  }

  private async read(
    a: AccountState,
    account: string,
    start: number,
    end: number,
    signal: AbortSignal,
  ): Promise<void> {
    const reader = a.reader!;
    a.busy = true;
    try {
      this.d.readOwn?.(account);
      const response = await reader(start, end);
      if (signal.aborted || a.next !== start) return;
      const taken = await this.prepare(a, account, start, end, response);
      // A full queue waits here, for room for this window, instead of reading on.
      await this.d.batches.room(taken.samples, signal);
      if (a.next !== start) return;
      // Another account took the room first: try again at the next look.
      if (this.offer(a, account, taken)) await this.commitSliced(a.queued, taken);
      else a.retryAt = this.d.clock.now() + 1;
      a.failures = 0;
      a.lastError = '';
    } catch (err) {
      if (signal.aborted) return;
      if (isApiError(err) && err.kind === 'invalid' && a.next === start) {
        // The API refuses this window for good (422): the scraped side skips such minutes too.
        this.d.log.warn(
          { account, start: new Date(start).toISOString(), minutes: (end - start) / MINUTE },
          'the API refused a window the settled writer read; it is written as skipped',
        );
        this.pass(a, end);
        return;
      }
      a.failures++;
      a.retryAt = this.d.clock.now() + Math.min(5 * MINUTE, 1000 * 2 ** Math.min(a.failures, 9));
      const why = describeError(err);
      if (why !== a.lastError) {
        a.lastError = why;
        this.d.log.warn({ account, error: why }, 'the settled writer could not read a window; it retries');
      }
    } finally {
      a.busy = false;
      this.drainHeld(a, account);
    }
  }

  /** Takes the held windows that now start at `next`, in order, one at a time (each in slices). */
  private drainHeld(a: AccountState, account: string): void {
    while (!a.busy && a.held.length > 0) {
      const h = a.held[0]!;
      if (h.end <= a.next!) {
        a.held.shift();
        a.heldRecords -= h.records;
        continue;
      }
      if (h.start !== a.next) return;
      a.held.shift();
      a.heldRecords -= h.records;
      if (a.held.length === 0) a.gapSince = undefined;
      if (!h.response) {
        this.pass(a, h.end);
        continue;
      }
      void this.takeHeld(a, account, h.start, h.end, h.response);
    }
  }

  private async takeHeld(
    a: AccountState,
    account: string,
    start: number,
    end: number,
    response: TrafficResponse,
  ): Promise<void> {
    a.busy = true;
    try {
      const taken = await this.prepare(a, account, start, end, response);
      // A full queue: the window is read again once there is room (not held in memory meanwhile).
      if (a.next === start) {
        if (this.offer(a, account, taken)) await this.commitSliced(a.queued, taken);
        else a.lost = true;
      }
    } catch (err) {
      a.lost = true;
      this.d.log.error({ account, error: describeError(err) }, 'the settled writer could not take a window');
    } finally {
      a.busy = false;
    }
    this.drainHeld(a, account);
    this.poke();
  }

  /** The window's series and totals, made in slices of the event loop. */
  private prepare(
    a: AccountState,
    account: string,
    start: number,
    end: number,
    response: TrafficResponse,
  ): Promise<TakenWindow> {
    return takeInSlices(a.queued, this.d.series, account, start, end, response, this.o);
  }

  /** Hands a window over; false when the queue is full (nothing changed). */
  private offer(a: AccountState, account: string, taken: TakenWindow): boolean {
    const { endMs: end } = taken;
    if (taken.series.length === 0) {
      this.pass(a, end);
      return true;
    }
    const entry: InFlight = { end, taken, done: false };
    const ok = this.d.batches.offer({ account, end, series: taken.series }, () => {
      entry.done = true;
      this.acknowledge();
    });
    if (!ok) return false;
    a.next = end;
    a.inFlight.push(entry);
    return true;
  }

  /** Applies a window's totals in slices of the event loop (the account stays busy meanwhile). */
  private commitSliced(totals: RunningTotals, taken: TakenWindow): Promise<void> {
    return commitInSlices(totals, taken, this.o.sliceMs);
  }

  /** Moves `next` over a window with nothing to write. */
  private pass(a: AccountState, end: number): void {
    a.next = end;
    a.inFlight.push({ end, taken: undefined, done: true });
    this.acknowledge();
  }

  private acknowledge(): void {
    this.acks.arrived();
  }

  private save(): void {
    this.acks.save();
  }

  /** The acknowledged state of every account (its totals read as the save writes them). */
  savedState(): SavedSettled {
    return this.acks.savedState();
  }

  /** Resolves once the acknowledgements so far are applied and the state asked to be saved is on disk. */
  flush(): Promise<void> {
    return this.acks.flush();
  }
}
