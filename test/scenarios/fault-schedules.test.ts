/**
 * Generated fault schedules (fast-check): each draw is a simulated stretch of hours to days of one exporter and the
 * simulator on a FakeClock (test/helpers/crash-schedule.ts), with faults on every API (5xx, 429 with Retry-After,
 * 504, resets, cut and garbage bodies, slow answers), late data and downward corrections, revoked login tokens
 * and short token lifetimes, accounts leaving and coming back to the inventory (account discovery), and crashes at
 * any step (quiet, busy, or while a scrape is served), each next process starting from the state file as it was
 * on disk at that moment.
 *
 * The invariant: for every traffic counter series, what a scraper that treats a drop as a reset has seen equals
 * the simulator's final truth over the minutes the cursor says are counted (so no minute counted twice or missed),
 * no minute is skipped (no schedule draws a rejected window), and the API never got more than requests_per_second
 * in any second, across processes.
 *
 * A failing draw prints its seed and shrunk schedule; add it to REGRESSIONS under a name. CI runs a fixed budget
 * (SCHEDULE_RUNS, default 10); `npm run soak -- --runs N` runs N and prints the figures.
 *
 * A second property draws stops at the steps of a window's life (test/helpers/window-life.ts, issue 31): graceful
 * stops, whose held window goes on within the grace or is cut, and kills, among faults; every scrape and every
 * state file a restart reads must be one moment (the counters the truth up to the cursor shown with them). Its
 * budget is the same SCHEDULE_RUNS (and SCHEDULE_SEED); to soak it: `SCHEDULE_RUNS=N npx vitest run
 * test/scenarios/fault-schedules.test.ts -t "window’s life"`.
 */
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, type FaultRates } from '../../src/simulator/faults.js';
import { type Outcome, runSchedule, type Schedule, type Step } from '../helpers/crash-schedule.js';
import { LIFE, type LifeSchedule, runLifeSchedule } from '../helpers/window-life.js';

const RUNS = Number(process.env.SCHEDULE_RUNS ?? 10);
const SEED = process.env.SCHEDULE_SEED === undefined ? 2121 : Number(process.env.SCHEDULE_SEED);
/** Where the soak script reads the figures (a JSON line per draw). */
const FIGURES = process.env.SCHEDULE_FIGURES;

/**
 * Kinds drawn: all but `trickle`, whose body never ends while the fake clock waits for it (its timeout is the
 * clock's); test/cli/big-answers.test.ts covers it in real time.
 */
const KINDS = FAULT_KINDS.filter((k) => k !== 'trickle');

/** Up to half of the requests faulted, spread over a drawn subset of kinds. */
const rates: fc.Arbitrary<FaultRates> = fc
  .subarray([...KINDS], { minLength: 1, maxLength: 6 })
  .chain((kinds) =>
    fc.tuple(
      fc.constant(kinds),
      fc.array(fc.integer({ min: 1, max: 10 }), { minLength: kinds.length, maxLength: kinds.length }),
      fc.integer({ min: 5, max: 50 }),
    ),
  )
  .map(([kinds, weights, percent]) => {
    const total = weights.reduce((a, b) => a + b, 0) || 1;
    const out: FaultRates = {};
    kinds.forEach((k, i) => {
      out[k] = Math.floor((percent / 100) * (weights[i]! / total) * 1000) / 1000;
    });
    return out;
  });

function stepOf(revisitMinutes: number): fc.Arbitrary<Step> {
  return fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        // Mostly a scrape interval or a few, sometimes a long outage of the scraper (a catch-up after it).
        seconds: fc.oneof(
          { weight: 8, arbitrary: fc.integer({ min: 5, max: 120 }) },
          { weight: 1, arbitrary: fc.integer({ min: 120, max: 4 * 3600 }) },
        ),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('faults' as const), rates }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('lag' as const),
        seconds: fc.integer({ min: 0, max: revisitMinutes * 60 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('correct' as const),
        aheadMinutes: fc.integer({ min: 1, max: 30 }),
        minutes: fc.integer({ min: 1, max: 30 }),
        factor: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'revoke' as const }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('inventory' as const), active: fc.boolean() }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('crash' as const),
        when: fc.constantFrom('quiet' as const, 'busy' as const, 'scraping' as const),
      }),
    },
  );
}

const schedules: fc.Arbitrary<Schedule> = fc
  .record({
    seed: fc.integer({ min: 1, max: 1_000_000 }),
    // At least the longest window (the configuration refuses less).
    lookbackMinutes: fc.integer({ min: 10, max: 120 }),
    windowMinutes: fc.constantFrom(1, 2, 5, 10),
    revisitMinutes: fc.integer({ min: 1, max: 6 }),
    login: fc.boolean(),
    discovery: fc.boolean(),
    tokenLifetimeSeconds: fc.integer({ min: 20, max: 3600 }),
    requestsPerSecond: fc.integer({ min: 3, max: 50 }),
  })
  .chain((base) =>
    fc
      .tuple(
        rates,
        fc.array(stepOf(base.revisitMinutes), {
          minLength: 3,
          maxLength: Number(process.env.SCHEDULE_STEPS ?? 40),
        }),
      )
      // Faults from the start: the first process meets them too.
      .map(([first, steps]) => ({ ...base, steps: [{ kind: 'faults' as const, rates: first }, ...steps] })),
  );

/** Failing draws found so far, shrunk, each kept under a name: run on every CI run. */
const REGRESSIONS: Array<[string, Schedule]> = [
  [
    // Soak seed 925510217: killed before its first checkpoint, the first process left no state file, so the next
    // one did not know to count its requests: 6 in one second against 5. Fixed: CursorBook.claim.
    'a process killed before its first checkpoint still counts against the next one’s rate',
    {
      seed: 734036,
      lookbackMinutes: 48,
      windowMinutes: 5,
      revisitMinutes: 1,
      login: false,
      tokenLifetimeSeconds: 28,
      requestsPerSecond: 5,
      steps: [
        { kind: 'faults', rates: { reset: 0.05 } },
        { kind: 'crash', when: 'quiet' },
        { kind: 'advance', seconds: 5 },
        { kind: 'advance', seconds: 5 },
        { kind: 'advance', seconds: 5 },
      ],
    },
  ],
  [
    // Soak seed 1657289515: a resource a late second of one minute short, one process, no crash. The gate's
    // p-queue also paced in real time, so a revisit was held while the fake clock ran 24 minutes on, and the
    // harness scraped before its answer was counted. Fixed: the gate paces on its clock only; the harness waits
    // with quiet(stack) (the /metrics text rebuilt, nothing under way).
    'a revisit of a minute read a second early is counted before the last scrape',
    {
      seed: 744135,
      lookbackMinutes: 26,
      windowMinutes: 1,
      revisitMinutes: 6,
      login: true,
      tokenLifetimeSeconds: 3600,
      requestsPerSecond: 4,
      steps: [
        { kind: 'faults', rates: {} },
        { kind: 'lag', seconds: 1 },
        { kind: 'advance', seconds: 5 },
      ],
    },
  ],
  [
    // Seed 77 (the first draws with account discovery): the token revoked before the first listing, no account
    // polled yet. The inventory's 401 renewed nothing, so no account was found until the token's scheduled renewal
    // (51 minutes). Fixed: a refusal of the inventory renews its credential's token, as any API's does.
    'a token revoked before the first listing is renewed by the inventory’s own refusal',
    {
      seed: 27041,
      lookbackMinutes: 15,
      windowMinutes: 2,
      revisitMinutes: 5,
      login: true,
      discovery: true,
      tokenLifetimeSeconds: 3594,
      requestsPerSecond: 16,
      steps: [{ kind: 'faults', rates: { malformed: 0.05 } }, { kind: 'revoke' }],
    },
  ],
  [
    // Soak seed 2612 (draw 59): 41 arrivals in one second against 40. The harness moved its clock from sleeper to
    // sleeper without waiting for requests under way, so one sent before a jump arrived after it, stamped late;
    // the gate's send times were under the rate. Fixed: the clock moves on only when nothing is under way.
    'a request under way while the fake clock jumped arrived a jump late: 41 in one second against 40',
    {
      seed: 16265,
      lookbackMinutes: 103,
      windowMinutes: 5,
      revisitMinutes: 3,
      login: true,
      discovery: false,
      tokenLifetimeSeconds: 3598,
      requestsPerSecond: 40,
      steps: [
        { kind: 'faults', rates: { '504': 0.21 } },
        { kind: 'advance', seconds: 12638 },
        { kind: 'advance', seconds: 82 },
        { kind: 'crash', when: 'quiet' },
        { kind: 'lag', seconds: 0 },
        { kind: 'advance', seconds: 3060 },
        { kind: 'faults', rates: { '504': 0.05 } },
      ],
    },
  ],
];

/**
 * Stops at the steps of a window's life among faults on the metrics API: all kinds but `slow` (the `requested` step
 * holds an answer with it) and `trickle` (as above), up to a third of the requests.
 */
const lifeSchedules: fc.Arbitrary<LifeSchedule> = fc.record({
  seed: fc.integer({ min: 1, max: 1_000_000 }),
  lookbackMinutes: fc.integer({ min: 10, max: 60 }),
  windowMinutes: fc.constantFrom(1, 2, 5, 10),
  concurrency: fc.integer({ min: 1, max: 3 }),
  faults: fc.oneof(
    fc.constant({}),
    fc
      .subarray(
        KINDS.filter((k) => k !== 'slow'),
        { minLength: 1, maxLength: 3 },
      )
      .map((kinds): FaultRates => Object.fromEntries(kinds.map((k) => [k, 0.1]))),
  ),
  events: fc.array(
    fc.record({
      // Mostly a scrape or a few, sometimes a long run (a catch-up behind the next stop).
      runSeconds: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 0, max: 120 }) },
        { weight: 1, arbitrary: fc.integer({ min: 120, max: 1200 }) },
      ),
      at: fc.constantFrom(...LIFE),
      how: fc.constantFrom('graceful' as const, 'kill' as const),
      goesOn: fc.boolean(),
      scrapeInGrace: fc.boolean(),
    }),
    { minLength: 1, maxLength: 8 },
  ),
});

function record(out: Outcome, s: Schedule, ms: number): void {
  if (!FIGURES) return;
  const line = {
    ms,
    simulatedMs: out.simulatedMs,
    crashes: out.crashes,
    faultSteps: s.steps.filter((x) => x.kind === 'faults').length,
    faults: out.faults,
    failed: out.problems.length > 0,
    checked: out.checked,
  };
  writeFileSync(FIGURES, `${JSON.stringify(line)}\n`, { flag: 'a' });
}

describe('generated fault schedules', () => {
  it.each(REGRESSIONS)('regression: %s', async (_name, s) => {
    expect((await runSchedule(s)).problems).toEqual([]);
  });

  it(`every counter as a drop-is-reset scraper sees it equals the final truth (${RUNS} draws)`, async () => {
    await fc.assert(
      fc.asyncProperty(schedules, async (s) => {
        const began = Date.now();
        const out = await runSchedule(s);
        record(out, s, Date.now() - began);
        if (out.problems.length > 0) throw new Error(out.problems.slice(0, 12).join('\n'));
        if (out.checked === 0) throw new Error('nothing compared');
      }),
      { numRuns: RUNS, seed: SEED, verbose: 1 },
    );
  }, 3_600_000);
});

describe('generated stops at the steps of a window’s life', () => {
  // "schedules", not "draws": the soak script (scripts/soak.mjs) runs the tests named "draws" and reads their figures.
  it(`every scrape and every state file is one moment, the increases the truth (${RUNS} schedules)`, async () => {
    await fc.assert(
      fc.asyncProperty(lifeSchedules, async (s) => {
        const out = await runLifeSchedule(s);
        if (out.problems.length > 0) throw new Error(out.problems.slice(0, 12).join('\n'));
        if (out.checked === 0) throw new Error('nothing compared');
      }),
      { numRuns: RUNS, seed: SEED, verbose: 1 },
    );
  }, 3_600_000);
});
