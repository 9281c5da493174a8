/**
 * What a backfill shows while it runs (src/backfill/progress-report.ts), on a fake clock: on a terminal one line
 * rewritten with \r (done/total, percent, requests, time left), redrawn at most every 100 ms; otherwise a log line
 * every 10 s or every 5 % of the windows, whichever comes first.
 */
import { describe, expect, it } from 'vitest';
import { formatSeconds, ProgressReport } from '../../src/backfill/progress-report.js';
import { createLogger } from '../../src/log.js';
import { FakeClock } from '../helpers/fake-clock.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    level: 'info',
    destination: { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) } as never,
  });
  return { lines, log };
}

describe('the progress of a backfill', () => {
  it('on a terminal, rewrites one line with \\r, at most every 100 ms, and always the last window', async () => {
    const clock = new FakeClock();
    let text = '';
    const { log } = capture();
    const report = new ProgressReport({ clock, tty: true, write: (t) => (text += t), log });
    await clock.advance(1000);
    report.update(1, 200, 1);
    await clock.advance(50);
    report.update(2, 200, 2);
    await clock.advance(50);
    report.update(3, 200, 3);
    const draws = text.split('\r').filter(Boolean);
    expect(draws).toHaveLength(2);
    // 3 windows in the 1.1 s since the report began: the 197 left take about 72 s.
    expect(draws[1]).toBe('\x1b[K[........................] 3/200 windows 1%  3 requests  ETA 1m12s');
    report.update(200, 200, 205);
    report.end();
    expect(text.endsWith('[########################] 200/200 windows 100%  205 requests  ETA 0s\n')).toBe(
      true,
    );
  });

  it('elsewhere, logs a line every 10 s or every 5 %, whichever comes first', async () => {
    const clock = new FakeClock();
    const { lines, log } = capture();
    const report = new ProgressReport({ clock, tty: false, write: () => {}, log });
    const at: number[] = [];
    for (let done = 1; done <= 1000; done++) {
      await clock.advance(done <= 10 ? 3000 : 10);
      report.update(done, 1000, done);
      if (lines.length > at.length) at.push(done);
    }
    // The first window; then time (every 10 s) while it is slow; then every 5 %.
    expect(at.slice(0, 4)).toEqual([1, 5, 9, 50]);
    expect(at.slice(4, 8)).toEqual([100, 150, 200, 250]);
    expect(at[at.length - 1]).toBe(1000);
    expect(lines[3]).toMatchObject({
      msg: 'backfill progress',
      windows: 50,
      total: 1000,
      percent: 5,
      requests: 50,
    });
    report.end();
    expect(lines.length).toBe(at.length);
  });

  it('writes times as a person reads them', () => {
    expect([formatSeconds(12.4), formatSeconds(95), formatSeconds(7500), formatSeconds(-3)]).toEqual([
      '12s',
      '1m35s',
      '2h05m',
      '0s',
    ]);
  });
});
