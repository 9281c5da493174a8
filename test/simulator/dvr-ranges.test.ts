/**
 * The DVR ranges one host keeps (src/simulator/dvr-ranges.ts), read at chosen Unix seconds: the model its header
 * states (the newest range grows up to now while alive; a break every `breakEverySec` ends a range and a new one
 * starts after the pause; only `[now - window, now)` is kept, a straddling range trimmed; a dead stream stops
 * growing and a revived one starts a new range) and what deletions leave. Ranges are half-open, whole seconds.
 */
import { describe, expect, it } from 'vitest';
import {
  HostTimeline,
  type SecRange,
  subtract,
  type TimelineOptions,
} from '../../src/simulator/dvr-ranges.js';

const r = (from: number, to: number): SecRange => ({ from, to });

describe('HostTimeline without breaks', () => {
  it('grows one range from the start up to now, and keeps only the window, trimming the range that straddles it', () => {
    const t = new HostTimeline({ startSec: 1000, window: 3600 });
    expect(t.ranges(1000)).toEqual([]);
    expect(t.ranges(1600)).toEqual([r(1000, 1600)]);
    expect(t.ranges(4600)).toEqual([r(1000, 4600)]);
    expect(t.ranges(5000)).toEqual([r(1400, 5000)]);
    expect(t.isAlive()).toBe(true);
  });

  it('stops growing when the stream dies, starts a new range when it comes back, and drops what left the window', () => {
    const t = new HostTimeline({ startSec: 0, window: 600 });
    t.setAlive(false, 100);
    expect(t.isAlive()).toBe(false);
    expect(t.ranges(400)).toEqual([r(0, 100)]);
    t.setAlive(true, 400);
    expect(t.ranges(450)).toEqual([r(0, 100), r(400, 450)]);
    // At 650 the window is [50, 650): the first range is trimmed to it; at 700 it is gone.
    expect(t.ranges(650)).toEqual([r(50, 100), r(400, 650)]);
    expect(t.ranges(700)).toEqual([r(400, 700)]);
    // Saying what already is changes nothing.
    t.setAlive(true, 700);
    expect(t.ranges(710)).toEqual([r(400, 710)]);
  });
});

describe('HostTimeline with breaks', () => {
  const opts: TimelineOptions = {
    startSec: 0,
    window: 3600,
    breakEverySec: 100,
    breakPhaseSec: 30,
    pauseFor: () => 5,
  };

  it('ends a range at each break (every breakEverySec from startSec + phase) and starts the next after the pause', () => {
    const t = new HostTimeline(opts);
    expect(t.ranges(250)).toEqual([r(0, 30), r(35, 130), r(135, 230), r(235, 250)]);
    // During a pause nothing grows.
    expect(t.ranges(232)).toEqual([r(0, 30), r(35, 130), r(135, 230)]);
  });

  it('keeps a pause between 1 second and breakEverySec - 1, whatever pauseFor says', () => {
    const long = new HostTimeline({ ...opts, pauseFor: () => 500 });
    expect(long.ranges(250)).toEqual([r(0, 30), r(129, 130), r(229, 230)]);
    const none = new HostTimeline({ ...opts, pauseFor: () => 0 });
    expect(none.ranges(140)).toEqual([r(0, 30), r(31, 130), r(131, 140)]);
  });

  it('has no breaks for breakEverySec undefined, 0 or 1', () => {
    for (const every of [undefined, 0, 1]) {
      const t = new HostTimeline({ startSec: 0, window: 3600, breakEverySec: every, breakPhaseSec: 0 });
      expect(t.ranges(1000), String(every)).toEqual([r(0, 1000)]);
    }
  });

  it('gives the same ranges whether read every few seconds or once after a long gap (no timers, nothing missed)', () => {
    const stepped: TimelineOptions = {
      startSec: 10_000,
      window: 600,
      breakEverySec: 60,
      breakPhaseSec: 17,
      pauseFor: (k) => 3 + (k % 7),
    };
    const often = new HostTimeline(stepped);
    const once = new HostTimeline(stepped);
    const end = 10_000 + 5 * 3600 + 23;
    for (let now = 10_000; now < end; now += 7) often.ranges(now);
    const want = often.ranges(end);
    expect(once.ranges(end)).toEqual(want);
    // Within the window, at most one break a minute: 10 or 11 ranges, none longer than 60 s.
    expect(want.length).toBeGreaterThanOrEqual(10);
    expect(want.length).toBeLessThanOrEqual(11);
    for (const x of want) {
      expect(x.from).toBeGreaterThanOrEqual(end - 600);
      expect(x.to - x.from).toBeLessThanOrEqual(60);
    }
    // A year later, read once: still only the window's ranges.
    const later = end + 365 * 86_400;
    const year = once.ranges(later);
    expect(year.every((x) => x.from >= later - 600 && x.to <= later)).toBe(true);
    expect(year.length).toBeLessThanOrEqual(11);
  });
});

describe('HostTimeline deletions', () => {
  it('deleteSlice cuts a hole; recording goes on after it', () => {
    const t = new HostTimeline({ startSec: 0, window: 3600 });
    t.deleteSlice(20, 40, 100);
    expect(t.ranges(100)).toEqual([r(0, 20), r(40, 100)]);
    expect(t.ranges(150)).toEqual([r(0, 20), r(40, 150)]);
  });

  it('deleteSlice that reaches now restarts the recording at now; an empty or reversed slice changes nothing', () => {
    const t = new HostTimeline({ startSec: 0, window: 3600 });
    t.deleteSlice(80, 10_000, 150);
    expect(t.ranges(150)).toEqual([r(0, 80)]);
    expect(t.ranges(200)).toEqual([r(0, 80), r(150, 200)]);
    t.deleteSlice(50, 50, 200);
    t.deleteSlice(60, 10, 200);
    expect(t.ranges(200)).toEqual([r(0, 80), r(150, 200)]);
  });

  it('deleteAll empties the ranges: a live stream records again from now, a dead one stays empty', () => {
    const live = new HostTimeline({ startSec: 0, window: 3600 });
    live.deleteAll(300);
    expect(live.ranges(300)).toEqual([]);
    expect(live.ranges(360)).toEqual([r(300, 360)]);
    const dead = new HostTimeline({ startSec: 0, window: 3600 });
    dead.setAlive(false, 100);
    dead.deleteAll(300);
    expect(dead.ranges(900)).toEqual([]);
  });
});

describe('subtract', () => {
  it('leaves zero, one or two pieces of a half-open range', () => {
    expect(subtract(r(10, 20), 0, 10)).toEqual([r(10, 20)]);
    expect(subtract(r(10, 20), 20, 30)).toEqual([r(10, 20)]);
    expect(subtract(r(10, 20), 5, 15)).toEqual([r(15, 20)]);
    expect(subtract(r(10, 20), 15, 25)).toEqual([r(10, 15)]);
    expect(subtract(r(10, 20), 12, 14)).toEqual([r(10, 12), r(14, 20)]);
    expect(subtract(r(10, 20), 10, 20)).toEqual([]);
    expect(subtract(r(10, 20), 0, 30)).toEqual([]);
  });
});
