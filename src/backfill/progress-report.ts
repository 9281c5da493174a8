/**
 * What a backfill shows while it runs: on a terminal (stderr is a TTY) one line rewritten in place with `\r`
 * (windows done of planned, percent, requests, time left), at most every REDRAW_MS; otherwise a log line every
 * PLAIN_EVERY_MS or every PLAIN_STEP of the windows, whichever comes first. And the summary line at the end.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';

/** A terminal redraws at most this often: a backfill at 1000 requests/s would otherwise write a line per window. */
const REDRAW_MS = 100;
/** Plain progress: a line every 10 s, or every 5 % of the windows (one twentieth). */
export const PLAIN_EVERY_MS = 10_000;
const PLAIN_STEPS = 20;
const BAR = 24;

export interface ProgressReportOptions {
  clock: Clock;
  /** A terminal: the one-line bar; otherwise log lines. */
  tty: boolean;
  /** Where the bar is drawn (stderr). */
  write(text: string): void;
  log: Logger;
}

/** `95` -> `1m35s`; under a minute `12s`; over an hour `2h05m`. */
export function formatSeconds(s: number): string {
  const t = Math.max(0, Math.round(s));
  if (t < 60) return `${t}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m${String(t % 60).padStart(2, '0')}s`;
  return `${Math.floor(t / 3600)}h${String(Math.floor((t % 3600) / 60)).padStart(2, '0')}m`;
}

export class ProgressReport {
  private readonly startedAt: number;
  private doneAtStart: number | undefined;
  private lastDraw = Number.NEGATIVE_INFINITY;
  private lastLine: number;
  /** The last twentieth of the windows a plain line was written for; -1: none yet. */
  private lastStep = -1;
  private drawn = false;

  constructor(private readonly o: ProgressReportOptions) {
    this.startedAt = o.clock.now();
    this.lastLine = this.startedAt;
  }

  /** Seconds left at the pace of this process so far; undefined before it has done a window. */
  private eta(done: number, total: number): number | undefined {
    const since = done - (this.doneAtStart ?? done);
    if (since <= 0) return undefined;
    return (((this.o.clock.now() - this.startedAt) / since) * (total - done)) / 1000;
  }

  update(done: number, total: number, requests: number): void {
    this.doneAtStart ??= Math.max(0, done - 1);
    const now = this.o.clock.now();
    const share = total > 0 ? Math.min(1, done / total) : 1;
    const eta = this.eta(done, total);
    if (this.o.tty) {
      if (now - this.lastDraw < REDRAW_MS && done < total) return;
      this.lastDraw = now;
      const filled = Math.round(share * BAR);
      this.o.write(
        `\r\x1b[K[${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${done}/${total} windows ${Math.floor(share * 100)}%` +
          `  ${requests} requests  ETA ${eta === undefined ? '?' : formatSeconds(eta)}`,
      );
      this.drawn = true;
      return;
    }
    const step = total > 0 ? Math.floor((Math.min(done, total) * PLAIN_STEPS) / total) : PLAIN_STEPS;
    if (now - this.lastLine < PLAIN_EVERY_MS && step <= this.lastStep) return;
    this.lastLine = now;
    this.lastStep = step;
    this.o.log.info(
      {
        windows: done,
        total,
        percent: Math.floor(share * 100),
        requests,
        ...(eta === undefined ? {} : { eta_seconds: Math.round(eta) }),
      },
      'backfill progress',
    );
  }

  /** Ends the bar's line (before the summary or an error is printed). */
  end(): void {
    if (this.drawn) this.o.write('\n');
    this.drawn = false;
  }

  /** Seconds since the report began. */
  seconds(): number {
    return (this.o.clock.now() - this.startedAt) / 1000;
  }
}
