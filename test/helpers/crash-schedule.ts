/**
 * A fault schedule run in process: the simulator and the exporter's real components on one FakeClock, a scraper
 * that reads the counters as Prometheus does (a drop is a reset, nothing else is), and crashes. A crash keeps the
 * state file exactly as it is on disk at that moment (a temporary file of a write under way included), stops the
 * exporter, puts those bytes back (whatever the stop wrote is undone: a SIGKILL writes nothing), and starts the
 * next exporter from them on the same clock.
 *
 * `runSchedule` returns what does not hold of the invariant (see `compare`): for every
 * traffic counter series, what the scraper has seen equals the simulator's final truth over the minutes counted
 * (from where the walk began to the last cursor scraped), hence no minute counted twice or missed, and no minute
 * skipped (the schedules draw no rejected window, so a counted skip is a failure too).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { floorMinute, MINUTE } from '../../src/clock.js';
import type { FaultRates } from '../../src/simulator/faults.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import type { TrafficPipeline } from '../../src/traffic/pipeline.js';
import { parseExposition } from './exposition.js';
import { FakeClock } from './fake-clock.js';
import { mostInOneSecond, truthOver } from './ground-truth.js';
import { quiet, requestsLanded, type Stack, startStack } from './stack.js';

export type Step =
  /** Fake time moves on this many seconds, then the scraper scrapes. */
  | { kind: 'advance'; seconds: number }
  /** New fault rates on every API (metrics, DVR, recordings, inventory, login). */
  | { kind: 'faults'; rates: FaultRates }
  /** The late-data lag from now on (at most delay + revisit: later data is lost by design). */
  | { kind: 'lag'; seconds: number }
  /** Minutes not reported yet, `aheadMinutes` from now, are corrected down by `factor` (0..1). */
  | { kind: 'correct'; aheadMinutes: number; minutes: number; factor: number }
  /** Every login token is revoked: the next requests get 401 until the login renews it. */
  | { kind: 'revoke' }
  /**
   * With `discovery`: the account `extra` turns active or inactive in the inventory (the exporter stops it at the
   * next listing, and starts it again when it is back). Turning it inactive waits until a scrape has shown it:
   * before that its walk may begin again from lookback, which no scraper can tell from a loss.
   */
  | { kind: 'inventory'; active: boolean }
  /**
   * The process is killed: when the step is quiet, right after the clock moved (windows in flight), or while a
   * scrape is being served (its state written or not, its bytes never received).
   */
  | { kind: 'crash'; when: 'quiet' | 'busy' | 'scraping' };

export interface Schedule {
  /** The simulator's seed (traffic and fault order). */
  seed: number;
  lookbackMinutes: number;
  windowMinutes: number;
  revisitMinutes: number;
  /** Log in with a username and password (tokens of `tokenLifetimeSeconds`) instead of a fixed token. */
  login: boolean;
  tokenLifetimeSeconds: number;
  requestsPerSecond: number;
  /**
   * With `login`: the accounts come from the inventory (`accounts_discovery`, every minute): `demo` and `extra`,
   * which `inventory` steps turn on and off. Without: `demo` alone, configured.
   */
  discovery?: boolean;
  steps: Step[];
}

export interface Outcome {
  /** What does not hold; empty: the invariant holds. */
  problems: string[];
  simulatedMs: number;
  crashes: number;
  /** Requests the simulator answered with an injected fault. */
  faults: number;
  /** Counter values compared with the truth. */
  checked: number;
  /** The most API requests (login aside) the simulator received in any one second of its clock. */
  peakPerSecond: number;
}

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
/** The account `inventory` steps turn on and off (with `discovery`). */
const EXTRA = 'extra';
const DELAY_MINUTES = 0;

function pipelineOf(stack: Stack): TrafficPipeline {
  return (stack.exporter as unknown as { traffic: TrafficPipeline }).traffic;
}

/** What Prometheus makes of the scrapes: per counter series, the sum of its increases, a drop being a reset. */
export class DropIsReset {
  private readonly last = new Map<string, number>();
  private readonly sum = new Map<string, number>();
  /** Per account, the cursor of the newest scrape. */
  readonly cursors = new Map<string, number>();
  scrapes = 0;

  record(text: string): void {
    this.scrapes++;
    for (const s of parseExposition(text)) {
      if (s.name === 'cdn_metrics_window_end_timestamp_seconds')
        this.cursors.set(s.labels.account!, s.value * 1000);
      if (!s.name.endsWith('_total') || !s.name.startsWith('cdn_')) continue;
      const key = `${s.name}${JSON.stringify(s.labels)}`;
      const prev = this.last.get(key) ?? 0;
      this.sum.set(key, (this.sum.get(key) ?? 0) + (s.value >= prev ? s.value - prev : s.value));
      this.last.set(key, s.value);
    }
  }

  value(name: string, labels: Record<string, string>): number {
    return this.sum.get(`${name}${JSON.stringify(labels)}`) ?? 0;
  }

  /** Every series of `name` the scraper saw, with its summed increases. */
  series(name: string): Array<[Record<string, string>, number]> {
    const out: Array<[Record<string, string>, number]> = [];
    for (const [key, v] of this.sum) {
      if (key.startsWith(`${name}{`))
        out.push([JSON.parse(key.slice(name.length)) as Record<string, string>, v]);
    }
    return out;
  }
}

/** The state folder's files whose names start with `prefix`, byte for byte (a temporary file of a write included). */
function onDisk(dir: string, prefix: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(dir))
    if (name.startsWith(prefix)) out.set(name, readFileSync(join(dir, name)));
  return out;
}

function putBack(dir: string, files: Map<string, Buffer>, prefix: string): void {
  for (const name of readdirSync(dir)) if (name.startsWith(prefix)) unlinkSync(join(dir, name));
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
}

/**
 * Stops `stack` as a SIGKILL would leave it: the files of its state folder `dir` whose names start with `prefix`
 * are put back as they were on disk at that moment, whatever the stop wrote after. `when`: once nothing is under way
 * (`quiet`), at once (`busy`), or while it serves a scrape whose bytes never reach the scraper (`scraping`). The
 * caller starts it again.
 */
export async function crashStack(
  stack: Stack,
  dir: string,
  when: 'quiet' | 'busy' | 'scraping',
  prefix = 'state.json',
): Promise<void> {
  let cut: Promise<unknown> | undefined;
  if (when === 'quiet') await quiet(stack);
  if (when === 'scraping') {
    cut = fetch(`${stack.url}/metrics`).then(
      (r) => r.arrayBuffer(),
      () => undefined,
    );
    await new Promise((r) => setImmediate(r));
  }
  const files = onDisk(dir, prefix);
  await stack.stop();
  await cut;
  putBack(dir, files, prefix);
}

export async function runSchedule(s: Schedule): Promise<Outcome> {
  const clock = new FakeClock(T0);
  const dir = mkdtempSync(join(tmpdir(), 'cdn-schedule-'));
  const discovery = s.discovery === true && s.login;
  const sim: Simulator = await startSimulator({
    seed: s.seed,
    clock,
    slowMs: 30,
    trickleMs: 5,
    tokenLifetimeMs: s.tokenLifetimeSeconds * 1000,
    ...(discovery
      ? { accounts: [...demoWorld(), { ...demoWorld()[1]!, name: EXTRA, token: 'extra-token' }] }
      : {}),
  });
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, 'demo-password\n');
  const config = {
    state_file: join(dir, 'state.json'),
    api: {
      requests_per_second: s.requestsPerSecond,
      concurrency: 2,
      timeout: '2s',
      ...(s.login ? { token: undefined, username: DEMO_USER, password_file: passwordFile } : {}),
    },
    metrics: {
      lookback: `${s.lookbackMinutes}m`,
      delay: `${DELAY_MINUTES}m`,
      window: `${s.windowMinutes}m`,
      revisit: `${s.revisitMinutes}m`,
    },
    dvr: { interval: '1m' },
    recordings: { interval: '1m' },
    ...(discovery
      ? { accounts_discovery: { enabled: true, interval: '1m', include: `demo|${EXTRA}` }, accounts: [] }
      : {}),
  };
  const seen = new DropIsReset();
  const accounts = discovery ? ['demo', EXTRA] : ['demo'];
  // Where each account's walk last began afresh (from lookback, when it was first polled): at a start that found no
  // cursor of it and no scrape had shown it. Its first window is then the earliest it asked for since.
  const freshAt = new Map(accounts.map((a) => [a, clock.now()]));
  const savedCursor = (account: string): string | undefined => {
    try {
      return (JSON.parse(readFileSync(config.state_file, 'utf8')) as { cursors?: Record<string, string> })
        .cursors?.[account];
    } catch {
      return undefined;
    }
  };
  let crashes = 0;
  let stack: Stack | undefined;
  const start = async () => {
    for (const account of accounts)
      if (!seen.cursors.has(account) && savedCursor(account) === undefined) freshAt.set(account, clock.now());
    stack = await startStack({ clock, simulator: sim, config });
  };
  const scrape = async () => {
    const res = await fetch(`${stack!.url}/metrics`);
    const text = await res.text();
    if (res.status === 200) seen.record(text);
  };
  const crash = async (when: 'quiet' | 'busy' | 'scraping') => {
    crashes++;
    await crashStack(stack!, dir, when);
    await start();
  };
  const problems: string[] = [];
  try {
    await start();
    for (const step of s.steps) {
      switch (step.kind) {
        case 'advance':
          // From sleeper to sleeper, each once the requests under way have landed (as in real time, where the
          // trip is milliseconds): the API's count of arrivals per second is then the gate's count of sends.
          await clock.advance(step.seconds * 1000, () => requestsLanded(stack!));
          await quiet(stack!);
          await scrape();
          break;
        case 'faults':
          sim.setFaults(step.rates);
          break;
        case 'lag':
          sim.setLag(step.seconds);
          break;
        case 'correct': {
          const from = floorMinute(clock.now()) + step.aheadMinutes * MINUTE;
          sim.correctDown('demo', from, from + step.minutes * MINUTE, step.factor);
          break;
        }
        case 'revoke':
          if (s.login) sim.revokeTokens(DEMO_USER);
          break;
        case 'inventory':
          if (discovery && (step.active || seen.cursors.has(EXTRA)))
            sim.setAccountStatus(EXTRA, step.active ? 'active' : 'inactive');
          break;
        case 'crash':
          await crash(step.when);
          break;
      }
    }
    // The books close: no faults, no lag; on until every minute read too early has been revisited.
    sim.setFaults({});
    sim.setLag(0);
    if (discovery) sim.setAccountStatus(EXTRA, 'active');
    // Windows counted from here on are complete at their first read; those counted before are revisited within
    // delay + revisit (+ a window, + a retry or two).
    const closedAt = clock.now();
    const early = () =>
      [...pipelineOf(stack!).revisitQueues.values()]
        .flatMap((q) => q.pending)
        .filter((w) => w.countedAt < closedAt);
    const settled = closedAt + (DELAY_MINUTES + s.revisitMinutes + s.windowMinutes + 2) * MINUTE;
    for (let i = 0; i < 200 && (clock.now() < settled || early().length > 0); i++) {
      await clock.advance(30_000);
      await quiet(stack!);
      await scrape();
    }
    if (early().length > 0)
      problems.push(
        `revisits still pending after the close: ${early()
          .map((w) => `${new Date(w.start).toISOString()}..${new Date(w.end).toISOString()}`)
          .join(', ')}`,
      );
    await scrape();
    const firstOf = (account: string) =>
      Math.min(
        ...sim.requestLog
          .filter(
            (e) => e.api === 'metrics' && e.query.account?.[0] === account && e.time >= freshAt.get(account)!,
          )
          .map((e) => Date.parse(`${e.query.start![0]}Z`)),
      );
    const first = firstOf('demo');
    const cursor = seen.cursors.get('demo');
    if (cursor === undefined || !(cursor > first)) {
      problems.push(`nothing counted (first ${first}, cursor ${cursor})`);
      return { problems, simulatedMs: clock.now() - T0, crashes, faults: 0, checked: 0, peakPerSecond: 0 };
    }
    let checked = compare(sim, seen, 'demo', first, cursor, problems);
    // `extra` only once a scrape has shown it (it may have been off all along).
    const extraCursor = seen.cursors.get(EXTRA);
    if (discovery && extraCursor !== undefined)
      checked += compare(sim, seen, EXTRA, firstOf(EXTRA), extraCursor, problems);
    const faults = sim.requestLog.filter((e) => e.fault !== undefined).length;
    // Every process, the ones killed included, shares one budget: the API counts their requests together.
    const peakPerSecond = mostInOneSecond(sim.requestLog.filter((e) => e.api !== 'oauth').map((e) => e.time));
    if (peakPerSecond > s.requestsPerSecond)
      problems.push(
        `${peakPerSecond} requests in one second, above requests_per_second ${s.requestsPerSecond}`,
      );
    return { problems, simulatedMs: clock.now() - T0, crashes, faults, checked, peakPerSecond };
  } finally {
    await stack?.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The invariant, series by series; returns how many values were compared. */
function compare(
  sim: Simulator,
  seen: DropIsReset,
  account: string,
  first: number,
  cursor: number,
  problems: string[],
): number {
  let checked = 0;
  const expect = (what: string, got: number, want: number) => {
    checked++;
    if (got !== want)
      problems.push(
        `${account} ${what}: seen ${got}, truth ${want} (${got - want > 0 ? '+' : ''}${got - want})`,
      );
  };
  for (const r of sim.accounts.find((a) => a.name === account)!.resources) {
    const truth = truthOver(sim, account, r.id, [[first, cursor]])!;
    const l = { account, resource: r.id };
    for (const side of ['edge', 'origin'] as const) {
      const t = truth[side];
      for (const [code, n] of Object.entries(t.codes))
        expect(`${side} ${r.id} ${code}`, seen.value(`cdn_${side}_responses_total`, { ...l, code }), n);
      for (const [cls, n] of Object.entries(t.classes))
        expect(
          `${side} ${r.id} ${cls}`,
          seen.value(`cdn_${side}_responses_by_class_total`, { ...l, class: cls }),
          n,
        );
      expect(`${side} ${r.id} requests`, seen.value(`cdn_${side}_requests_total`, l), t.requests);
      expect(`${side} ${r.id} bytes`, seen.value(`cdn_${side}_transferred_bytes_total`, l), t.bytes);
    }
    expect(`edge ${r.id} hit bytes`, seen.value('cdn_edge_cache_hit_bytes_total', l), truth.edge.hitBytes);
  }
  for (const [labels, v] of seen.series('cdn_metrics_skipped_seconds_total'))
    if (labels.account === account) expect(`skipped seconds ${labels.reason}`, v, 0);
  return checked;
}
