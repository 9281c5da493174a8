/**
 * The login schedule over generated lifetimes, answer delays and failures (issue 31): a LoginToken on a fake clock
 * against a fake login server that issues tokens of the drawn lifetime, answers after the drawn delay, or fails
 * (5xx, 429, a network failure, a refused password). Requests are probes that call `get()` as a request does when
 * it is sent: at drawn times and at the last millisecond and the first instant past each token's expiry.
 *
 * The invariant: no request ever carries a token expired at its send time (the server's own expiry, counted from
 * when the login reached it, here at once: the least margin a real network gives); whenever the limit allows a
 * renewal in time (lifetime > 3 s + the answer time, and > twice a slow answer: one login at a time) and the
 * renewal's answer takes no more than the margin kept, the token is renewed before it expires; no 60 s ever holds
 * more than 20 logins (never two closer than 3 s); and a lifetime too short for that limit is reported (result
 * `too_short`, a log line once per change, `get()`'s reason `lifetime-too-short`).
 *
 * Budget: LOGIN_SCHEDULE_RUNS draws per property (default 300), seed LOGIN_SCHEDULE_SEED; a failing draw prints its
 * seed and shrunk scenario.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LoginOutcome } from '../../src/auth/login.js';
import { LoginError } from '../../src/auth/login-error.js';
import type { LoginResult } from '../../src/auth/login-token.js';
import { mulberry32 } from '../../src/simulator/random.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { testLoginToken } from '../helpers/login-token.js';

const RUNS = Number(process.env.LOGIN_SCHEDULE_RUNS ?? 300);
const SEED = process.env.LOGIN_SCHEDULE_SEED === undefined ? 3131 : Number(process.env.LOGIN_SCHEDULE_SEED);
const SECOND = 1000;
const DAY = 86_400_000;
/**
 * The spec, written out here rather than read from the code under test: the API's documented limit (20 logins a
 * minute: docs/upstream-api.md, "Login") and what the schedule promises (src/auth/login-token.ts's contract).
 */
const LOGINS_PER_MINUTE = 20;
const LOGIN_LIMIT_WINDOW_MS = 60_000;
const MIN_GAP_MS = LOGIN_LIMIT_WINDOW_MS / LOGINS_PER_MINUTE;
/** Too short: a renewal sent 3 s after the login (not before its answer) and answered as fast comes too late. */
const lifetimeTooShort = (lifetimeMs: number, answerMs: number) =>
  lifetimeMs <= Math.max(MIN_GAP_MS, answerMs) + answerMs;
/** Renewal: at 85 % of the lifetime, or sooner to leave twice the answer time, never sooner than 3 s. */
const renewalDelay = (lifetimeMs: number, answerMs: number) =>
  Math.max(MIN_GAP_MS, Math.min(Math.floor(lifetimeMs * 0.85), lifetimeMs - 2 * answerMs));
/** api.timeout's default: no login answer is awaited longer (a later one is a failure). */
const ANSWER_DEADLINE_MS = 30_000;

type Kind = 'ok' | '5xx' | '429' | 'network' | 'refused';
interface Answer {
  kind: Kind;
  delayMs: number;
  lifetimeMs: number;
}
interface Scenario {
  answers: Answer[];
  /** Each step moves the clock by this fraction of the run's lifetime (squared: many short steps, a few long). */
  steps: Array<{ fraction: number; refresh: boolean }>;
  lifetimeMs: number;
  seed: number;
}

/** Lifetimes from 1 ms to a week, spread evenly over the orders of magnitude, and the edges named. */
const lifetime = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .double({ min: 0, max: Math.log10(7 * DAY), noNaN: true })
      .map((e) => Math.max(1, Math.round(10 ** e))),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      MIN_GAP_MS - 1,
      MIN_GAP_MS,
      MIN_GAP_MS + 1,
      MIN_GAP_MS + 2,
      20 * SECOND,
      60 * SECOND,
      21_599_000,
    ),
  },
);
/** Answer delays: mostly fast, up to api.timeout. */
const delay = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 50 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 2 * SECOND }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: ANSWER_DEADLINE_MS }) },
);

/** A fake login server: answers as scripted (then `ok` with the run's lifetime and no delay), records everything. */
function fakeServer(clock: FakeClock, script: readonly Answer[], fallback: Answer) {
  const sends: number[] = [];
  const answers: Array<Answer & { sentAt: number; answeredAt: number }> = [];
  /** The server's expiry of each token it issued. */
  const expiry = new Map<string, number>();
  const send = async (_user: string, _password: string, signal: AbortSignal): Promise<LoginOutcome> => {
    const i = sends.length;
    const sentAt = clock.now();
    sends.push(sentAt);
    const a = script[i] ?? fallback;
    if (a.delayMs > 0) await clock.sleep(a.delayMs, signal);
    answers.push({ ...a, sentAt, answeredAt: clock.now() });
    switch (a.kind) {
      case 'ok': {
        const token = `tok${i}`;
        expiry.set(token, sentAt + a.lifetimeMs);
        return { ok: true, token, lifetimeMs: a.lifetimeMs, lifetimeAssumed: false };
      }
      case '5xx':
        return { ok: false, result: 'error', status: 503, detail: 'server error (503)' };
      case '429':
        return {
          ok: false,
          result: 'error',
          status: 429,
          retryAfterMs: 10 * SECOND,
          detail: 'too many (429)',
        };
      case 'network':
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      case 'refused':
        return { ok: false, result: 'refused', status: 401, detail: 'login refused (401)' };
    }
  };
  return { send, sends, answers, expiry };
}

/** What a run saw. */
interface Run {
  sends: number[];
  answers: Array<Answer & { sentAt: number; answeredAt: number }>;
  results: LoginResult[];
  problems: string[];
  /** Probes that got a token / a LoginError, and the LoginErrors' reasons with the time they were thrown. */
  served: number;
  refused: Array<{ at: number; reason: string }>;
  firstTokenAt: number | undefined;
  shortLines: number;
}

async function run(s: Scenario): Promise<Run> {
  const clock = new FakeClock();
  const start = clock.now();
  const server = fakeServer(clock, s.answers, { kind: 'ok', delayMs: 0, lifetimeMs: s.lifetimeMs });
  const results: LoginResult[] = [];
  const { log, lines } = captureLog();
  const source = testLoginToken({
    clock,
    log,
    send: server.send,
    random: mulberry32(s.seed),
    onLogin: (r) => results.push(r),
  });
  const out: Run = {
    sends: server.sends,
    answers: server.answers,
    results,
    problems: [],
    served: 0,
    refused: [],
    firstTokenAt: undefined,
    shortLines: 0,
  };
  const probe = () => {
    const t = clock.now();
    let token: string;
    try {
      token = source.get();
    } catch (e) {
      if (!(e instanceof LoginError)) throw e;
      out.refused.push({ at: t, reason: e.reason });
      return;
    }
    out.served++;
    out.firstTokenAt ??= t;
    const expires = server.expiry.get(token);
    if (expires === undefined || t >= expires)
      out.problems.push(
        `a request at +${t - start} ms carried ${token}, expired at +${(expires ?? 0) - start} ms`,
      );
  };
  const ctl = new AbortController();
  const loop = source.run(ctl.signal);
  const moveTo = async (target: number) => {
    // The last millisecond of the token in use and the first instant past it are probed on the way.
    for (let edge = 0; edge < 8; edge++) {
      const expiresAt = source.status.expiresAt;
      if (expiresAt === undefined || expiresAt - 1 <= clock.now() || expiresAt > target) break;
      await clock.advance(expiresAt - 1 - clock.now());
      probe();
      await clock.advance(1);
      probe();
    }
    await clock.advance(target - clock.now());
    probe();
  };
  for (const step of s.steps) {
    await moveTo(clock.now() + 1 + Math.floor(step.fraction ** 2 * s.lifetimeMs));
    if (step.refresh) {
      try {
        source.refresh();
      } catch (e) {
        if (!(e instanceof LoginError)) throw e;
      }
      await clock.advance(0);
      probe();
    }
  }
  // Every run covers a few lifetimes past the slowest answer, and a few minutes of the login limit (short
  // lifetimes renewed as often as it allows), whatever its steps drew.
  const horizon = start + 4 * s.lifetimeMs + ANSWER_DEADLINE_MS + 3 * LOGIN_LIMIT_WINDOW_MS;
  for (let extra = 0; extra < 300 && clock.now() < horizon; extra++)
    await moveTo(Math.min(horizon, clock.now() + Math.ceil(s.lifetimeMs / 3)));
  ctl.abort();
  await clock.advance(0);
  await loop;
  out.shortLines = lines.filter((l) => l.includes('token lifetime too short')).length;
  return out;
}

/** What the login of `a` must be counted as. */
function expectedResult(a: Answer): LoginResult {
  if (a.kind === 'refused') return 'refused';
  if (a.kind !== 'ok') return 'error';
  return lifetimeTooShort(a.lifetimeMs, a.delayMs) ? 'too_short' : 'ok';
}

/** The checks every run passes, whatever it drew. */
function checkAlways(r: Run): string[] {
  const problems = [...r.problems];
  for (let i = 1; i < r.sends.length; i++) {
    if (r.sends[i]! - r.sends[i - 1]! < MIN_GAP_MS)
      problems.push(`logins ${i - 1} and ${i} only ${r.sends[i]! - r.sends[i - 1]!} ms apart`);
  }
  for (let i = 0; i + LOGINS_PER_MINUTE < r.sends.length; i++) {
    if (r.sends[i + LOGINS_PER_MINUTE]! - r.sends[i]! < LOGIN_LIMIT_WINDOW_MS)
      problems.push(`${LOGINS_PER_MINUTE + 1} logins within 60 s from login ${i}`);
  }
  // Every answer is counted once, by its result; a lifetime too short for the limit is said.
  r.results.forEach((res, i) => {
    const want = expectedResult(r.answers[i]!);
    if (res !== want) problems.push(`login ${i} counted ${res}, expected ${want}`);
  });
  // Once per change: a run of too-short answers (expired on arrival or not) has its one line.
  let changes = 0;
  r.results.forEach((res, i) => {
    if (res !== 'too_short') return;
    const dead = (a: Answer) => a.delayMs >= a.lifetimeMs;
    const prev = i > 0 ? r.results[i - 1] : undefined;
    if (prev !== 'too_short' || dead(r.answers[i - 1]!) !== dead(r.answers[i]!)) changes++;
  });
  if (changes > 0 && r.shortLines === 0) problems.push('a lifetime too short was not logged');
  if (r.shortLines > changes) problems.push(`${r.shortLines} too-short lines for ${changes} changes`);
  // Down for want of a token: the reason is the short lifetime exactly when the last answer was one.
  for (const { at, reason } of r.refused) {
    const last = r.answers.filter((a) => a.answeredAt <= at).at(-1);
    const short = last !== undefined && expectedResult(last) === 'too_short';
    if (short !== (reason === 'lifetime-too-short'))
      problems.push(
        `no token at ${at}: reason ${reason}, last answer ${last ? expectedResult(last) : 'none'}`,
      );
  }
  // The renewal is sent when its schedule says, before the token expires whenever the limit allows one.
  r.answers.forEach((a, i) => {
    const next = r.sends[i + 1];
    if (a.kind !== 'ok' || a.delayMs >= a.lifetimeMs || next === undefined) return;
    // Due before its answer arrived (a slow answer to a short lifetime): as soon as it arrives.
    const due = Math.max(a.answeredAt, a.sentAt + renewalDelay(a.lifetimeMs, a.delayMs));
    if (next > due)
      problems.push(`token ${i} renewed at +${next - a.sentAt} ms, due at +${due - a.sentAt} ms`);
    if (a.lifetimeMs > MIN_GAP_MS && !(due < a.sentAt + a.lifetimeMs))
      problems.push(`token ${i} of ${a.lifetimeMs} ms: renewal due only at its expiry or later`);
  });
  return problems;
}

/** What the draws of a property covered (printed, and checked where the invariant needs it). */
class Figures {
  draws = 0;
  logins = 0;
  probes = 0;
  readonly counts = {
    'a lifetime too short, usable a moment': 0,
    'a token expired on arrival': 0,
    'a failed login (5xx, 429, network)': 0,
    'a refused login': 0,
    '20 logins within a minute': 0,
    'a request refused for want of a valid token': 0,
  };
  add(r: Run): void {
    this.draws++;
    this.logins += r.sends.length;
    this.probes += r.served + r.refused.length;
    const c = this.counts;
    const short = r.answers.filter((a) => a.kind === 'ok' && lifetimeTooShort(a.lifetimeMs, a.delayMs));
    if (short.some((a) => a.delayMs < a.lifetimeMs)) c['a lifetime too short, usable a moment']++;
    if (short.some((a) => a.delayMs >= a.lifetimeMs)) c['a token expired on arrival']++;
    if (r.answers.some((a) => a.kind === '5xx' || a.kind === '429' || a.kind === 'network'))
      c['a failed login (5xx, 429, network)']++;
    if (r.answers.some((a) => a.kind === 'refused')) c['a refused login']++;
    const full = r.sends.some(
      (t, i) => i + 19 < r.sends.length && r.sends[i + 19]! - t < LOGIN_LIMIT_WINDOW_MS,
    );
    if (full) c['20 logins within a minute']++;
    if (r.refused.length > 0) c['a request refused for want of a valid token']++;
  }
  print(what: string): void {
    const parts = Object.entries(this.counts).map(([k, n]) => `${k}: ${n}`);
    console.log(
      `login schedule (${what}): ${this.draws} draws, ${this.logins} logins, ${this.probes} requests; draws with ${parts.join(', ')}`,
    );
  }
}

const steps = fc.array(
  fc.record({ fraction: fc.double({ min: 0, max: 1, noNaN: true }), refresh: fc.boolean() }),
  {
    minLength: 20,
    maxLength: 150,
  },
);

describe('the login schedule over generated lifetimes, delays and failures', () => {
  it(`never sends an expired token, never more than 20 logins in 60 s, reports a lifetime too short (${RUNS} draws)`, async () => {
    const answer: fc.Arbitrary<Answer> = fc
      .record({
        kind: fc.oneof(
          { weight: 12, arbitrary: fc.constant<Kind>('ok') },
          { weight: 2, arbitrary: fc.constantFrom<Kind>('5xx', '429', 'network') },
          { weight: 1, arbitrary: fc.constant<Kind>('refused') },
        ),
        delayMs: delay,
        lifetimeMs: lifetime,
        // Some lifetimes near the answer's time (and the 3 s gap): the edge of "too short" for slow answers.
        near: fc.option(
          fc.tuple(fc.double({ min: 0.5, max: 3, noNaN: true }), fc.integer({ min: -3, max: 3 })),
        ),
      })
      .map(({ near, ...a }) =>
        near === null
          ? a
          : {
              ...a,
              lifetimeMs: Math.max(1, Math.round(near[0] * Math.max(a.delayMs, MIN_GAP_MS)) + near[1]),
            },
      );
    const scenario: fc.Arbitrary<Scenario> = fc
      .record({
        answers: fc.array(answer, { maxLength: 40 }),
        steps,
        lifetimeMs: lifetime,
        seed: fc.integer(),
      })
      // Most answers state the run's lifetime: a login server does not change it every time.
      .map((s) => ({
        ...s,
        answers: s.answers.map((a, i) => (i % 3 === 2 ? a : { ...a, lifetimeMs: s.lifetimeMs })),
      }));
    const seen = new Figures();
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        seen.add(r);
        const problems = checkAlways(r);
        if (problems.length > 0) throw new Error(problems.slice(0, 8).join('\n'));
      }),
      { numRuns: RUNS, seed: SEED },
    );
    seen.print('any answers');
    expect(seen.draws).toBeGreaterThanOrEqual(RUNS);
    // The draws reached what the invariant is about: lifetimes too short (usable a moment, and expired on arrival),
    // failures of every kind, runs at the limit, and requests refused for want of a valid token.
    if (RUNS >= 100) {
      for (const [what, n] of Object.entries(seen.counts)) expect(n, `draws with ${what}`).toBeGreaterThan(0);
    }
  }, 600_000);

  it(`renews every token before it expires whenever the limit allows it in time (${RUNS} draws)`, async () => {
    // Every login succeeds; the answers take between half the run's slowest and the slowest (a renewal's answer
    // takes at most twice the one before: the margin the schedule keeps), and the lifetime leaves room for a
    // renewal the limit allows: not too short (lifetimeTooShort) for the slowest answer.
    const scenario: fc.Arbitrary<Scenario> = fc
      .record({
        slowest: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: ANSWER_DEADLINE_MS })),
        lifetimeMs: lifetime,
        delays: fc.array(fc.double({ min: 0.5, max: 1, noNaN: true }), { minLength: 60, maxLength: 60 }),
        steps,
        seed: fc.integer(),
      })
      .filter((s) => !lifetimeTooShort(s.lifetimeMs, s.slowest))
      .map((s) => ({
        lifetimeMs: s.lifetimeMs,
        steps: s.steps,
        seed: s.seed,
        answers: s.delays.map((f) => ({
          kind: 'ok' as const,
          // ceil: twice the least is at least the slowest.
          delayMs: Math.ceil(f * s.slowest),
          lifetimeMs: s.lifetimeMs,
        })),
      }));
    const seen = new Figures();
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await run(s);
        seen.add(r);
        const problems = checkAlways(r);
        if (r.firstTokenAt === undefined) problems.push('never logged in');
        const gaps = r.refused.filter((x) => r.firstTokenAt !== undefined && x.at > r.firstTokenAt);
        if (gaps.length > 0)
          problems.push(`no valid token at ${gaps.length} probes after the first login (${gaps[0]!.reason})`);
        if (r.results.some((x) => x !== 'ok')) problems.push(`results ${[...new Set(r.results)].join(', ')}`);
        if (problems.length > 0) throw new Error(problems.slice(0, 8).join('\n'));
      }),
      { numRuns: RUNS, seed: SEED },
    );
    seen.print('all answers in time');
    expect(seen.draws).toBeGreaterThanOrEqual(RUNS);
  }, 600_000);
});
