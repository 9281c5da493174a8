/**
 * Bounded series, exact sums (issue 35), as a user checks them: the simulator's exact truth against what a scraper
 * sees of an exporter with `limits.top_resources: N`, in generated schedules (fast-check, shrunk to the smallest
 * failure): a random N, resources whose traffic appears, grows, shrinks and vanishes minute by minute (the
 * simulator's model scaled per resource and minute, the truth with it), windows of 1 to 5 minutes, revisits of late
 * data on or off, a few faults, and crashes at any step (quiet, busy, or while a scrape is served), each next
 * process starting from the state file as it was on disk then.
 *
 * The invariant, at every scrape: for every counter family and status key, the sum over the account's series of what
 * a scraper has seen rise (a drop read as a reset, as Prometheus does) equals the truth over the minutes the cursor
 * says are counted; no counter series is ever seen lower than before (`__other__` included, and a resource that
 * drops out of the top N and comes back); no gauge family (and not cdn_resource_info) has more than N + 1 series for
 * the account; and when one window was counted since the last scrape, the counters of at most N + 1 resources moved
 * (those of a resource out of the top N stay at their last value).
 *
 * A failing draw prints its seed and shrunk schedule; `TOP_DRAW='<the draw as printed>'` runs it first. CI runs
 * TOP_RUNS draws (default 6, fixed seed TOP_SEED); `TOP_RUNS=100 npx vitest run test/scenarios/top-resources.test.ts`
 * runs more.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import type { FaultRates } from '../../src/simulator/faults.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { MinuteTraffic } from '../../src/simulator/traffic-model.js';
import { crashStack, DropIsReset } from '../helpers/crash-schedule.js';
import { parseExposition } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { truthOver } from '../helpers/ground-truth.js';
import { quiet, requestsLanded, type Stack, startStack } from '../helpers/stack.js';

const RUNS = Number(process.env.TOP_RUNS ?? 6);
const SEED = process.env.TOP_SEED === undefined ? 3535 : Number(process.env.TOP_SEED);
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const ACCOUNT = 'acme';
const T0_MINUTE = T0 / MINUTE;

/** A resource's traffic from `minute` (after T0) on is `factor` times the model's: 0 is absent, 40 a surge. */
interface Segment {
  minute: number;
  factor: number;
}

type Step =
  | { kind: 'advance'; seconds: number }
  /** Every request fails (503) for this long, then the drawn faults again: windows and revisits pile up. */
  | { kind: 'outage'; seconds: number }
  | { kind: 'crash'; when: 'quiet' | 'busy' | 'scraping' };

interface Draw {
  seed: number;
  top: number;
  /** limits.top_resources_period: short ones make the top N change often. */
  period: string;
  windowMinutes: number;
  lookbackMinutes: number;
  revisitMinutes: number;
  lagSeconds: number;
  faults: FaultRates;
  /** Per resource, its traffic over time. */
  shapes: Segment[][];
  /** Each resource's traffic also jumps every 5 minutes (x0, x1, x4 or x16): the top N changes all the time. */
  jumpy: boolean;
  steps: Step[];
}

const draws: fc.Arbitrary<Draw> = fc
  .record({
    seed: fc.integer({ min: 1, max: 1_000_000 }),
    top: fc.integer({ min: 1, max: 5 }),
    period: fc.constantFrom('20m', '20m', '2h', '1d'),
    jumpy: fc.boolean(),
    windowMinutes: fc.constantFrom(1, 2, 5),
    lookbackMinutes: fc.integer({ min: 10, max: 40 }),
    revisitMinutes: fc.constantFrom(0, 0, 2, 4),
    faults: fc.constantFrom<FaultRates>({}, { '500': 0.1 }, { '429': 0.05, reset: 0.05 }),
    shapes: fc.array(
      fc.array(
        fc.record({ minute: fc.integer({ min: -60, max: 300 }), factor: fc.constantFrom(0, 1, 3, 10, 40) }),
        { maxLength: 8 },
      ),
      { minLength: 2, maxLength: 9 },
    ),
    steps: fc.array(
      fc.oneof(
        {
          weight: 5,
          arbitrary: fc.record({
            kind: fc.constant('advance' as const),
            seconds: fc.integer({ min: 20, max: 1800 }),
          }),
        },
        {
          weight: 2,
          arbitrary: fc.record({
            kind: fc.constant('outage' as const),
            seconds: fc.integer({ min: 60, max: 900 }),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({
            kind: fc.constant('crash' as const),
            when: fc.constantFrom('quiet' as const, 'busy' as const, 'scraping' as const),
          }),
        },
      ),
      { minLength: 2, maxLength: Number(process.env.TOP_STEPS ?? 12) },
    ),
  })
  // Late data only with revisits (without them a minute read early would stay short for good, by design).
  .chain((d) =>
    fc.integer({ min: 0, max: d.revisitMinutes * 60 }).map((lagSeconds) => ({
      ...d,
      lagSeconds,
      shapes: d.shapes.map((s) => [...s].sort((a, b) => a.minute - b.minute)),
    })),
  );

const resourceId = (i: number) => `r${String(i + 1).padStart(2, '0')}`;

/** The model's minute of a resource, scaled by its shape (counts, bytes, hit bytes; medians unchanged). */
function scaled(t: MinuteTraffic, factor: number): MinuteTraffic {
  const side = (s: MinuteTraffic['edge']) => ({
    ...s,
    codes: Object.fromEntries(Object.entries(s.codes).map(([k, v]) => [k, v * factor])),
    unlisted: Object.fromEntries(
      Object.entries(s.unlisted).map(([k, v]) => [k, v * factor]),
    ) as typeof s.unlisted,
    bytes: s.bytes * factor,
    hitBytes: s.hitBytes * factor,
  });
  return { edge: side(t.edge), origin: side(t.origin) };
}

const JUMPS = [0, 1, 4, 16];

function factorAt(d: Draw, r: number, minuteMs: number): number {
  const minute = minuteMs / MINUTE - T0_MINUTE;
  let f = 1;
  for (const seg of d.shapes[r] ?? []) if (minute >= seg.minute) f = seg.factor;
  if (!d.jumpy) return f;
  const x = Math.imul(d.seed ^ (r * 7919 + Math.floor(minute / 5) * 104_729), 2_654_435_761) >>> 0;
  return f * JUMPS[x % JUMPS.length]!;
}

/** Family and key of a counter sample, without the resource: what `sum by (account, code)` groups. */
function groupOf(name: string, labels: Record<string, string>): string {
  return `${name}|${labels.code ?? labels.class ?? ''}`;
}

/** The truth of every family and key, summed over the account's resources, over [from, to). */
function truthSums(sim: Simulator, ids: readonly string[], from: number, to: number): Map<string, number> {
  const out = new Map<string, number>();
  const add = (k: string, v: number) => out.set(k, (out.get(k) ?? 0) + v);
  for (const id of ids) {
    const t = truthOver(sim, ACCOUNT, id, [[from, to]]);
    if (!t) continue;
    for (const side of ['edge', 'origin'] as const) {
      const s = t[side];
      for (const [code, n] of Object.entries(s.codes)) add(`cdn_${side}_responses_total|${code}`, n);
      for (const [cls, n] of Object.entries(s.classes)) add(`cdn_${side}_responses_by_class_total|${cls}`, n);
      add(`cdn_${side}_requests_total|`, s.requests);
      add(`cdn_${side}_transferred_bytes_total|`, s.bytes);
    }
    add('cdn_edge_cache_hit_bytes_total|', t.edge.hitBytes);
  }
  return out;
}

async function run(d: Draw): Promise<string[]> {
  const problems: string[] = [];
  const clock = new FakeClock(T0);
  const dir = mkdtempSync(join(tmpdir(), 'cdn-top-'));
  const ids = d.shapes.map((_, i) => resourceId(i));
  const sim = await startSimulator({
    seed: d.seed,
    clock,
    slowMs: 30,
    lagSeconds: d.lagSeconds,
    accounts: [
      {
        name: ACCOUNT,
        token: 'acme-token',
        resources: ids.map((id) => ({ id, name: `site ${id}`, cname: `${id}.cdn.example` })),
        streams: [],
        recordings: [],
      },
    ],
  });
  const original = sim.model.minute.bind(sim.model);
  sim.model.minute = (account, resource, minuteMs) =>
    scaled(original(account, resource, minuteMs), factorAt(d, ids.indexOf(resource), minuteMs));
  sim.setFaults(d.faults);
  const config = {
    state_file: join(dir, 'state.json'),
    api: { token: 'acme-token', requests_per_second: 20, concurrency: 2, timeout: '2s' },
    accounts: [{ name: ACCOUNT }],
    metrics: {
      window: `${d.windowMinutes}m`,
      delay: '0m',
      lookback: `${d.lookbackMinutes}m`,
      revisit: `${d.revisitMinutes}m`,
    },
    limits: { top_resources: d.top, top_resources_period: d.period },
  };
  const seen = new DropIsReset();
  const last = new Map<string, number>();
  let lastWindows: number | undefined;
  let freshAt = clock.now();
  let stack: Stack | undefined;
  const savedCursor = (): boolean => {
    try {
      return JSON.parse(readFileSync(config.state_file, 'utf8')).cursors?.[ACCOUNT] !== undefined;
    } catch {
      return false;
    }
  };
  const start = async () => {
    if (!seen.cursors.has(ACCOUNT) && !savedCursor()) freshAt = clock.now();
    stack = await startStack({ clock, simulator: sim, config });
  };
  const firstWindow = () =>
    Math.min(
      ...sim.requestLog
        .filter((e) => e.api === 'metrics' && e.time >= freshAt && e.query.start)
        .map((e) => Date.parse(`${e.query.start![0]}Z`)),
    );
  /** One scrape, and the invariant on what it shows; `exact`: the sums must be the truth, else at most it. */
  const scrape = async (exact: boolean) => {
    const res = await fetch(`${stack!.url}/metrics`);
    const text = await res.text();
    if (res.status !== 200) return;
    seen.record(text);
    const all = parseExposition(text).filter((s) => s.labels.account === ACCOUNT);
    const samples = all.filter((s) => s.name.endsWith('_total') && s.labels.resource !== undefined);
    const moved = new Set<string>();
    for (const s of samples) {
      const key = `${s.name}${JSON.stringify(s.labels)}`;
      const before = last.get(key);
      if (before !== undefined && s.value < before)
        problems.push(`${key} went back from ${before} to ${s.value} at ${clock.now() - T0} ms`);
      if (s.value !== (before ?? 0)) moved.add(s.labels.resource!);
      last.set(key, s.value);
    }
    const gauges = new Map<string, Set<string>>();
    for (const s of all) {
      if (s.name.endsWith('_total') || s.labels.resource === undefined) continue;
      const key = `${s.name}|${s.labels.size_range ?? ''}`;
      const set = gauges.get(key) ?? new Set();
      set.add(s.labels.resource);
      gauges.set(key, set);
    }
    for (const [name, set] of gauges)
      if (set.size > d.top + 1) problems.push(`${name}: ${set.size} resources, above N + 1 = ${d.top + 1}`);
    const windows = all.find((s) => s.name === 'cdn_metrics_windows_total')?.value;
    if (
      lastWindows !== undefined &&
      windows === lastWindows + 1 &&
      d.lagSeconds === 0 &&
      moved.size > d.top + 1
    )
      problems.push(`one window moved the counters of ${moved.size} resources, above N + 1 = ${d.top + 1}`);
    lastWindows = windows;
    const cursor = seen.cursors.get(ACCOUNT);
    if (cursor === undefined) return;
    const truth = truthSums(sim, ids, firstWindow(), cursor);
    const got = new Map<string, number>();
    for (const [key] of last) {
      const name = key.slice(0, key.indexOf('{'));
      const labels = JSON.parse(key.slice(name.length)) as Record<string, string>;
      const g = groupOf(name, labels);
      got.set(g, (got.get(g) ?? 0) + seen.value(name, labels));
    }
    for (const [g, want] of truth) {
      const have = got.get(g) ?? 0;
      if (exact ? have !== want : have > want)
        problems.push(`${g}: seen ${have}, truth ${want} at cursor ${new Date(cursor).toISOString()}`);
    }
  };
  try {
    await start();
    for (const step of d.steps) {
      if (problems.length > 0) break;
      if (step.kind === 'advance' || step.kind === 'outage') {
        if (step.kind === 'outage') sim.setFaults({ '503': 1 });
        await clock.advance(step.seconds * 1000, () => requestsLanded(stack!));
        await quiet(stack!);
        if (step.kind === 'outage') sim.setFaults(d.faults);
        await scrape(d.lagSeconds === 0);
        continue;
      }
      // The ranking's file (state.ranking.json) is put back with the state file.
      await crashStack(stack!, dir, step.when, 'state');
      await start();
    }
    // The books close: no faults, no lag; on until every minute read early has been revisited.
    sim.setFaults({});
    sim.setLag(0);
    for (let i = 0; i < 20 && problems.length === 0; i++) {
      await clock.advance(60_000, () => requestsLanded(stack!));
      await quiet(stack!);
      await scrape(i >= d.revisitMinutes + d.windowMinutes + 3);
    }
    if (seen.cursors.get(ACCOUNT) === undefined) problems.push('nothing counted');
    return problems;
  } finally {
    await stack?.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('top_resources against the simulator’s truth', () => {
  it('generated shapes, N and crashes: sums exact at every scrape, counters never back, at most N + 1 series', async () => {
    await fc.assert(
      fc.asyncProperty(draws, async (d) => {
        const problems = await run(d);
        expect(problems.slice(0, 5)).toEqual([]);
      }),
      // TOP_DRAW: a failing draw as printed (JSON), run first.
      {
        numRuns: RUNS,
        seed: SEED,
        examples: process.env.TOP_DRAW ? [[JSON.parse(process.env.TOP_DRAW) as Draw]] : [],
      },
    );
  }, 600_000);
});
