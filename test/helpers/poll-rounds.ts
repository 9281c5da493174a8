/**
 * Driving the DVR and recordings poll loops of a stack on a FakeClock, one round at a time, and reading the
 * simulator's own answers as ground truth.
 *
 * A round ends when the exporter reports its result (cdn_up); the stepper sees that by wrapping
 * `exporter.self.setPollResult`, so a test waits for exactly the round it caused, not for a value it expects.
 */
import { expect } from 'vitest';
import type { SimAccount } from '../../src/simulator/types.js';
import { demoWorld } from '../../src/simulator/world.js';
import type { Scrape } from './exposition.js';
import type { FakeClock } from './fake-clock.js';
import type { Stack } from './stack.js';

export interface PollRound {
  api: string;
  account: string;
  ok: boolean;
  at: number;
}

export type RoundKey = readonly [api: string, account: string];

export class RoundStepper {
  readonly rounds: PollRound[] = [];
  private readonly waiters = new Set<() => void>();

  /** Call right after startStack resolves: the first rounds (at start) cannot have reported yet. */
  constructor(
    private readonly stack: Stack,
    readonly clock: FakeClock,
  ) {
    const self = stack.exporter.self;
    const original = self.setPollResult.bind(self);
    self.setPollResult = (api, account, ok, at) => {
      this.rounds.push({ api, account, ok, at });
      original(api, account, ok, at);
      for (const w of this.waiters) w();
    };
  }

  /** The round of (api, account) that reported at the clock's current time. */
  round(api: string, account: string): PollRound | undefined {
    const now = this.clock.now();
    return this.rounds.findLast((r) => r.api === api && r.account === account && r.at === now);
  }

  /**
   * Waits until every key has reported a round at the clock's now, then scrapes current text. The bound is real
   * time against a hang, generous: rounds are real HTTP on loopback, slow on a loaded machine.
   */
  async settled(keys: readonly RoundKey[], timeoutMs = 20_000): Promise<Scrape> {
    const done = () => keys.every(([api, account]) => this.round(api, account) !== undefined);
    if (!done()) {
      const what = `poll rounds ${keys.map((k) => k.join('/')).join(', ')} at ${new Date(this.clock.now()).toISOString()}`;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.waiters.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        const check = () => {
          if (!done()) return;
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        };
        this.waiters.add(check);
      });
    }
    await this.stack.exporter.store.refresh();
    return this.stack.scrape();
  }

  /** Moves the clock by `ms` (one poll interval, usually) and waits for the rounds it starts. */
  async step(ms: number, keys: readonly RoundKey[]): Promise<Scrape> {
    await this.clock.advance(ms);
    return this.settled(keys);
  }
}

/**
 * The demo world with DVR streams whose shape the tests rely on: `live/main` records without breaks (one range
 * per host, so a deleted slice is the only gap), `news/hd` is dead, `sport/4k` breaks every 10 minutes.
 */
export function e2eWorld(): SimAccount[] {
  const world = demoWorld();
  world[0]!.streams = [
    { name: 'live/main', hosts: ['dvr-1.demo.example', 'dvr-2.demo.example'], window: 3600 },
    { name: 'news/hd', hosts: ['dvr-1.demo.example'], alive: false },
    {
      name: 'sport/4k',
      hosts: ['dvr-2.demo.example', 'dvr-3.demo.example'],
      window: 7200,
      breakEverySec: 600,
    },
  ];
  return world;
}

export interface RawDvrEntry {
  stream_name: string;
  host: string;
  is_alive: boolean;
  dvr: { enabled: boolean; window: number; ranges: { from: number; duration: number }[] };
}

/** The simulator's own GET answer for a stream (raw JSON, read without the exporter's parser). */
export async function simEntries(
  simUrl: string,
  account: string,
  stream: string,
  token: string,
): Promise<RawDvrEntry[]> {
  const path = stream.split('/').map(encodeURIComponent).join('/');
  const res = await fetch(`${simUrl}/app/dvr-net/v1/${account}/streams/${path}`, {
    headers: { 'CDN-AUTH-TOKEN': token },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: RawDvrEntry[] };
  return body.data;
}

export interface ExpectedHealth {
  ranges: number;
  recorded: number;
  first?: number;
  last?: number;
  gap: number;
  largestGap: number;
  coverage: number;
}

/**
 * What the DVR gauges must say for a host, computed straight from the simulator's ranges. The simulator keeps
 * only `[now - window, now)` and never lets two ranges touch, so coverage is recorded / window.
 */
export function expectedHealth(entry: RawDvrEntry, nowSec: number): ExpectedHealth {
  const ranges = [...entry.dvr.ranges].sort((a, b) => a.from - b.from);
  let recorded = 0;
  let largestGap = 0;
  for (let i = 0; i < ranges.length; i++) {
    const r = ranges[i]!;
    expect(r.from).toBeGreaterThanOrEqual(nowSec - entry.dvr.window);
    expect(r.from + r.duration).toBeLessThanOrEqual(nowSec);
    recorded += r.duration;
    if (i > 0) {
      const prev = ranges[i - 1]!;
      largestGap = Math.max(largestGap, r.from - (prev.from + prev.duration));
    }
  }
  const first = ranges[0]?.from;
  const lastRange = ranges.at(-1);
  const last = lastRange ? lastRange.from + lastRange.duration : undefined;
  return {
    ranges: ranges.length,
    recorded,
    first,
    last,
    gap: first === undefined || last === undefined ? 0 : last - first - recorded,
    largestGap,
    coverage: recorded / entry.dvr.window,
  };
}

/** The DVR gauges the exporter shows for one host. */
export function shownHealth(scrape: Scrape, account: string, stream: string, host: string) {
  const l = { account, stream, host };
  return {
    ranges: scrape.value('cdn_dvr_ranges', l),
    recorded: scrape.value('cdn_dvr_recorded_seconds', l),
    first: scrape.value('cdn_dvr_first_timestamp_seconds', l),
    last: scrape.value('cdn_dvr_last_timestamp_seconds', l),
    gap: scrape.value('cdn_dvr_gap_seconds', l),
    largestGap: scrape.value('cdn_dvr_largest_gap_seconds', l),
    coverage: scrape.value('cdn_dvr_coverage_ratio', l),
  };
}
