/**
 * The DVR ranges one host keeps for one stream, computed lazily from the clock (no timers): every read or change
 * first brings the state up to `now`. All times are whole Unix seconds; ranges are half-open `[from, to)`.
 *
 * Model (the API document shows none of this; it is what receiving equipment plausibly does):
 * - While alive, the newest range grows up to now.
 * - With breaks, a recording break starts every `breakEverySec` (phase fixed per host) and lasts a few seconds;
 *   the range ends at the break and a new one starts when the pause is over.
 * - The equipment keeps only `[now - window, now)`: older ranges are dropped and a range that straddles the
 *   window's start is shown trimmed to it.
 * - A stream that is not alive stops growing; when it comes back a new range starts at that moment.
 */

export interface SecRange {
  from: number;
  /** Exclusive end. */
  to: number;
}

export interface TimelineOptions {
  /** When recording began, Unix seconds. */
  startSec: number;
  /** DVR depth, seconds. */
  window: number;
  /** Seconds between breaks; undefined or 0: no breaks. */
  breakEverySec?: number;
  /** Offset of the first break after startSec, seconds. */
  breakPhaseSec?: number;
  /** Length in seconds of the pause after break number k (clamped to [1, breakEverySec - 1]). */
  pauseFor?: (k: number) => number;
}

export class HostTimeline {
  private closed: SecRange[] = [];
  /** Start of the growing range; null while in a break or not alive. */
  private openFrom: number | null = null;
  /** When alive and in a break: when recording resumes. */
  private resumeAt: number;
  private syncedTo: number;
  private alive = true;
  private readonly window: number;
  private readonly every: number;
  private readonly anchor: number;
  private readonly pauseFor: (k: number) => number;

  constructor(opts: TimelineOptions) {
    this.window = opts.window;
    this.every = opts.breakEverySec && opts.breakEverySec > 1 ? Math.floor(opts.breakEverySec) : 0;
    this.anchor = opts.startSec + (opts.breakPhaseSec ?? 0);
    this.pauseFor = opts.pauseFor ?? (() => 5);
    this.resumeAt = opts.startSec;
    this.syncedTo = opts.startSec;
  }

  isAlive(): boolean {
    return this.alive;
  }

  /** The ranges the equipment holds at `now`, oldest first, trimmed to the window; empty ranges left out. */
  ranges(now: number): SecRange[] {
    this.advance(now);
    const cutoff = now - this.window;
    const all = [...this.closed];
    if (this.openFrom !== null) all.push({ from: this.openFrom, to: now });
    return all.map((r) => ({ from: Math.max(r.from, cutoff), to: r.to })).filter((r) => r.to > r.from);
  }

  setAlive(alive: boolean, now: number): void {
    this.advance(now);
    if (alive === this.alive) return;
    if (!alive) {
      if (this.openFrom !== null && this.openFrom < now) this.closed.push({ from: this.openFrom, to: now });
      this.openFrom = null;
    } else {
      this.resumeAt = now;
    }
    this.alive = alive;
    this.advance(now);
  }

  /** Removes `[from, to)` from what is recorded. Recording in progress goes on: a cut that reaches now restarts it at now. */
  deleteSlice(from: number, to: number, now: number): void {
    this.advance(now);
    if (to <= from) return;
    this.closed = this.closed.flatMap((r) => subtract(r, from, to));
    if (this.openFrom === null) return;
    const pieces = subtract({ from: this.openFrom, to: now }, from, to);
    const last = pieces.at(-1);
    if (last && last.to === now) {
      this.closed.push(...pieces.slice(0, -1));
      this.openFrom = last.from;
    } else {
      this.closed.push(...pieces);
      this.openFrom = now;
    }
  }

  /** Empties the ranges; a recording in progress accumulates again from now. */
  deleteAll(now: number): void {
    this.advance(now);
    this.closed = [];
    if (this.openFrom !== null) this.openFrom = now;
  }

  private advance(now: number): void {
    if (now <= this.syncedTo) return;
    if (!this.alive) {
      this.syncedTo = now;
      return;
    }
    this.skipAhead(now);
    // Each turn either stops or consumes one break; breaks before the window were skipped above, so this is bounded
    // by window / every (plus the final turn).
    for (;;) {
      if (this.openFrom === null) {
        if (this.resumeAt > now) break;
        this.openFrom = this.resumeAt;
      }
      const k = this.nextBreakIndex(this.openFrom);
      if (k === undefined) break;
      const at = this.breakAt(k);
      if (at > now) break;
      if (at > this.openFrom) this.closed.push({ from: this.openFrom, to: at });
      this.openFrom = null;
      this.resumeAt = at + this.pause(k);
    }
    this.syncedTo = now;
    const cutoff = now - this.window;
    this.closed = this.closed.filter((r) => r.to > cutoff);
  }

  /** After a long gap between reads, jumps over the breaks that ended before the window so advance stays cheap. */
  private skipAhead(now: number): void {
    if (!this.every) return;
    const cutoff = now - this.window;
    const position = this.openFrom ?? this.resumeAt;
    if (position >= cutoff - 2 * this.every) return;
    const k = Math.floor((cutoff - this.every - this.anchor) / this.every);
    const at = this.breakAt(k);
    if (at <= position) return;
    this.closed = [];
    this.openFrom = null;
    this.resumeAt = at + this.pause(k);
  }

  private nextBreakIndex(t: number): number | undefined {
    if (!this.every) return undefined;
    return Math.floor((t - this.anchor) / this.every) + 1;
  }

  private breakAt(k: number): number {
    return this.anchor + k * this.every;
  }

  private pause(k: number): number {
    return Math.min(Math.max(1, Math.round(this.pauseFor(k))), this.every - 1);
  }
}

/** `r` minus `[from, to)`: zero, one or two pieces. */
export function subtract(r: SecRange, from: number, to: number): SecRange[] {
  if (to <= r.from || from >= r.to) return [r];
  const out: SecRange[] = [];
  if (from > r.from) out.push({ from: r.from, to: from });
  if (to < r.to) out.push({ from: to, to: r.to });
  return out;
}
