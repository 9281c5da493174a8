/**
 * Stops at every step of a traffic window's life (issue 31, item 1), run in process on a FakeClock: two accounts
 * and the simulator, faults on the metrics API, and a process stopped again and again, each time with a window
 * held at one step of its life (Life), by a graceful stop (Exporter.stop then the server's close, as SIGTERM does
 * (src/commands.ts): the state file as they leave it, nothing written after, as the process then exits) or a kill
 * (the state file as it was at that moment: a SIGKILL writes nothing). A graceful stop lets what is held go on
 * within its grace, or not (its bounds then cut it), and may be scraped during its grace. The next process starts
 * from the state file.
 *
 * Whether a held answer comes within a stop's grace or after it is cut depends on real time (the simulator's slow
 * answer, the stop's bounds); what must hold does not: either way is a stop that happens.
 *
 * A window is held with the exporter's real parts only delayed, through a typed view of its private parts (as
 * test/helpers/stack.ts reads them): the simulator holds the answer (`requested`: a `slow` fault), the traffic
 * parser holds the body before and after reading it (`answered`, `parsed`), the applier holds its turn between two
 * slices of counting (`handed-over`: none of its records counted yet; `counting`: some), and the state file holds a
 * scrape's write while it is under way (`scraped`). `counted` stops with a window counted and no scrape since;
 * `committed` once a scrape showing it was written and received.
 *
 * What must hold (`problems` lists what does not):
 * - every scrape is one moment: each traffic counter it shows is the simulator's truth from where the account's
 *   walk began to the cursor the same scrape shows (`cdn_metrics_window_end_timestamp_seconds`; none shown: none
 *   counted), and no minute is skipped;
 * - no counter ever goes down from one scrape to the next, across processes (Prometheus would take it for a
 *   reset and count the new value again);
 * - after every stop, the state file the next process reads is one moment too: its counters are the truth up to
 *   its cursors;
 * - at the end, the summed increases (a drop taken as a reset, as Prometheus does) are the truth up to the last
 *   cursor scraped: nothing counted twice, nothing lost.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { Exporter } from '../../src/exporter/exporter.js';
import { silentLogger } from '../../src/log.js';
import { closeServer } from '../../src/main.js';
import type { FaultRates } from '../../src/simulator/faults.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import type { TrafficBodyParser } from '../../src/traffic/client.js';
import { DropIsReset } from './crash-schedule.js';
import { parseExposition } from './exposition.js';
import { FakeClock, settle } from './fake-clock.js';
import { truthOver } from './ground-truth.js';
import { configFrom, serveExporter, waitFor } from './stack.js';

/** The steps of a window's life, in order. */
export const LIFE = [
  'requested',
  'answered',
  'parsed',
  'handed-over',
  'counting',
  'counted',
  'scraped',
  'committed',
] as const;
export type Life = (typeof LIFE)[number];

export interface LifeEvent {
  /** Fake seconds run first, a scrape every SCRAPE_EVERY_S of them. */
  runSeconds: number;
  /** The step a window is held at when the process is stopped. */
  at: Life;
  how: 'graceful' | 'kill';
  /** Graceful: what is held goes on within the grace (else the stop cuts it at its bounds). */
  goesOn: boolean;
  /** Graceful: a scrape comes while the stop is under way. */
  scrapeInGrace: boolean;
}

export interface LifeSchedule {
  /** The simulator's seed (traffic and fault order). */
  seed: number;
  lookbackMinutes: number;
  windowMinutes: number;
  /** api.concurrency: windows in flight per account during a catch-up. */
  concurrency: number;
  /** Fault rates on the metrics API throughout (`slow` and `trickle` aside: `requested` uses `slow`). */
  faults: FaultRates;
  events: LifeEvent[];
}

export interface LifeOutcome {
  problems: string[];
  /** Stops made, and at which step each found its window. */
  stops: Array<{ at: Life; how: LifeEvent['how']; goesOn: boolean; reached: boolean }>;
  scrapes: number;
  /** Counter values compared with the truth, over every scrape and state file. */
  checked: number;
}

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const ACCOUNTS = ['north', 'south'] as const;
/** Resources per account: more records than one slice of the applier counts (4), so `counting` is a step. */
const RESOURCES = 12;
const SCRAPE_EVERY_S = 30;
/** Fake time moved at a time while a step is awaited. */
const STEP_MS = 5000;
/** How long the simulator holds a `slow` answer (real time): a request at the API, no answer yet. */
const SLOW_MS = 1000;
/** Grace of a stop whose held window goes on: long enough for a busy machine (the stop returns when done). */
const LONG_GRACE_MS = 30_000;
/** Grace of a stop that cuts what is held: its bound is what is tested, not its length. */
const SHORT_GRACE_MS = 50;
const REAL_WAIT_MS = 30_000;

function world(): SimAccount[] {
  return ACCOUNTS.map((name, a) => ({
    name,
    token: `${name}-token`,
    resources: Array.from({ length: RESOURCES }, (_, i) => ({
      id: String(1000 * (a + 1) + i),
      name: `r${i}`,
      cname: `r${i}.${name}.example`,
    })),
    streams: [],
    recordings: [],
  }));
}

/** The label names after `account` of each traffic counter family, in the state file's order. */
const COUNTER_LABELS: Record<string, readonly string[]> = {};
for (const side of ['edge', 'origin'] as const) {
  COUNTER_LABELS[`cdn_${side}_responses_total`] = ['resource', 'code'];
  COUNTER_LABELS[`cdn_${side}_responses_by_class_total`] = ['resource', 'class'];
  COUNTER_LABELS[`cdn_${side}_requests_total`] = ['resource'];
  COUNTER_LABELS[`cdn_${side}_transferred_bytes_total`] = ['resource'];
}
COUNTER_LABELS.cdn_edge_cache_hit_bytes_total = ['resource'];
const SKIPPED = 'cdn_metrics_skipped_seconds_total';

const keyOf = (name: string, account: string, values: readonly string[]) =>
  `${name}\u0000${account}\u0000${values.join('\u0000')}`;

/** The exporter's parts the holds reach (private fields: a typed view, not public API). */
interface Inside {
  parser: { traffic: TrafficBodyParser };
  upstreams: { underWay(): number };
  traffic?: {
    applier: {
      sliceMs: number;
      yieldToLoop: () => Promise<void>;
      readonly pending: number;
      readonly queue: ReadonlyArray<{ next: number; window?: unknown }>;
    };
    /** Traffic's ledger (src/traffic/counting-ledger.ts): where each account's counted windows end. */
    readonly lock?: { countedOf?(account: string): number | undefined };
  };
  cursors: {
    durable: ReadonlyMap<string, number>;
    file?: { writeOnce: (asked: unknown) => Promise<void> };
  };
}

/** One held point: the first window to reach `armed` waits there until `goOn` or `cut`. */
class Hold {
  armed: Life | undefined;
  hit: Life | undefined;
  private resume: (() => void) | undefined;
  private fail: ((err: Error) => void) | undefined;

  /** Called where a window passes `point`: waits there if that is the armed point and none waits yet. */
  at(point: Life): Promise<void> | undefined {
    if (this.armed !== point || this.hit !== undefined) return undefined;
    this.hit = point;
    return new Promise<void>((resolve, reject) => {
      this.resume = resolve;
      this.fail = reject;
    });
  }

  goOn(): void {
    this.resume?.();
  }

  /**
   * The stop cut it. A parse fails (the walker, stopped, gives the window up); the applier's turn and the state
   * file's write stay held for good: the process has exited, nothing of it may happen later.
   */
  cut(): void {
    if (this.hit === 'answered' || this.hit === 'parsed')
      this.fail?.(Object.assign(new Error('stopped'), { name: 'AbortError' }));
  }
}

interface Proc {
  exporter: Exporter;
  inside: Inside;
  server: Server;
  url: string;
  hold: Hold;
  /** State file writes under way (not held). */
  writing: () => number;
  /** Per account, where the walk of the counters this process shows began. */
  walkStart: ReadonlyMap<string, number>;
}

function onDisk(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(dir))
    if (name.startsWith('state.json')) out.set(name, readFileSync(join(dir, name)));
  return out;
}

function putBack(dir: string, files: Map<string, Buffer>): void {
  for (const name of readdirSync(dir)) if (name.startsWith('state.json')) unlinkSync(join(dir, name));
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
}

interface SavedFile {
  cursors?: Record<string, string>;
  counters?: { families: string[]; accounts: Record<string, Array<[number, number, number, ...string[]]>> };
}

export async function runLifeSchedule(s: LifeSchedule): Promise<LifeOutcome> {
  const clock = new FakeClock(T0);
  const dir = mkdtempSync(join(tmpdir(), 'cdn-window-life-'));
  const sim: Simulator = await startSimulator({ seed: s.seed, clock, slowMs: SLOW_MS, accounts: world() });
  const stateFile = join(dir, 'state.json');
  const config = {
    state_file: stateFile,
    api: {
      base_url: sim.url,
      token: 'north-token',
      requests_per_second: 50,
      concurrency: s.concurrency,
      timeout: '5s',
    },
    metrics: { lookback: `${s.lookbackMinutes}m`, delay: '0m', window: `${s.windowMinutes}m` },
    accounts: ACCOUNTS.map((name) => ({ name, token: `${name}-token` })),
  };
  const problems: string[] = [];
  const stops: LifeOutcome['stops'] = [];
  const seen = new DropIsReset();
  const last = new Map<string, number>();
  let scrapes = 0;
  let checked = 0;
  const walkStart = new Map<string, number>();
  const truthCache = new Map<string, Map<string, number>>();

  /** Every traffic counter of `account` over [from, to) as the truth has it (absent: 0). */
  const truth = (account: string, from: number, to: number): Map<string, number> => {
    const cacheKey = `${account} ${from} ${to}`;
    const cached = truthCache.get(cacheKey);
    if (cached) return cached;
    const out = new Map<string, number>();
    if (to > from) {
      for (const r of sim.accounts.find((a) => a.name === account)!.resources) {
        const t = truthOver(sim, account, r.id, [[from, to]])!;
        for (const side of ['edge', 'origin'] as const) {
          for (const [code, n] of Object.entries(t[side].codes))
            out.set(keyOf(`cdn_${side}_responses_total`, account, [r.id, code]), n);
          for (const [cls, n] of Object.entries(t[side].classes))
            out.set(keyOf(`cdn_${side}_responses_by_class_total`, account, [r.id, cls]), n);
          out.set(keyOf(`cdn_${side}_requests_total`, account, [r.id]), t[side].requests);
          out.set(keyOf(`cdn_${side}_transferred_bytes_total`, account, [r.id]), t[side].bytes);
        }
        out.set(keyOf('cdn_edge_cache_hit_bytes_total', account, [r.id]), t.edge.hitBytes);
      }
    }
    truthCache.set(cacheKey, out);
    return out;
  };

  /** `values` (key: keyOf) against the truth of each account up to its cursor; problems named after `where`. */
  const compare = (
    where: string,
    values: ReadonlyMap<string, number>,
    cursors: ReadonlyMap<string, number>,
    starts: ReadonlyMap<string, number>,
  ) => {
    let wrong = 0;
    for (const account of ACCOUNTS) {
      const cursor = cursors.get(account);
      const want =
        cursor === undefined ? new Map<string, number>() : truth(account, starts.get(account)!, cursor);
      const keys = new Set([...want.keys()]);
      for (const k of values.keys()) if (k.split('\u0000')[1] === account) keys.add(k);
      for (const k of keys) {
        checked++;
        const got = values.get(k) ?? 0;
        const expected = want.get(k) ?? 0;
        if (got !== expected && wrong++ < 3) {
          const [name, , ...labels] = k.split('\u0000');
          const shown = cursor === undefined ? 'none' : new Date(cursor).toISOString();
          problems.push(
            `${where}: ${account} ${name}{${labels.join(',')}} ${got}, truth up to the cursor (${shown}) ${expected} (${got - expected > 0 ? '+' : ''}${got - expected})`,
          );
        }
      }
    }
  };

  /** A scrape received: one moment, no counter down since the last. */
  const record = (text: string, p: Proc) => {
    scrapes++;
    seen.record(text);
    const values = new Map<string, number>();
    const cursors = new Map<string, number>();
    for (const x of parseExposition(text)) {
      if (x.name === 'cdn_metrics_window_end_timestamp_seconds')
        cursors.set(x.labels.account!, x.value * 1000);
      if (x.name === SKIPPED && x.value !== 0)
        problems.push(`scrape ${scrapes}: ${x.labels.account} skipped ${x.value} s (${x.labels.reason})`);
      const order = COUNTER_LABELS[x.name];
      if (!order) continue;
      const k = keyOf(
        x.name,
        x.labels.account!,
        order.map((l) => x.labels[l]!),
      );
      values.set(k, x.value);
      const before = last.get(k);
      if (before !== undefined && x.value < before)
        problems.push(`scrape ${scrapes}: ${k.replaceAll('\u0000', ' ')} went down, ${before} -> ${x.value}`);
      last.set(k, x.value);
    }
    compare(`scrape ${scrapes}`, values, cursors, p.walkStart);
  };

  /** The state file the next process reads: one moment, its counters the truth up to its cursors. */
  const checkFile = (where: string) => {
    let saved: SavedFile;
    try {
      saved = JSON.parse(readFileSync(stateFile, 'utf8')) as SavedFile;
    } catch {
      return;
    }
    const cursors = new Map(Object.entries(saved.cursors ?? {}).map(([a, c]) => [a, Date.parse(c)]));
    const values = new Map<string, number>();
    const counters = saved.counters;
    for (const [account, rows] of Object.entries(counters?.accounts ?? {})) {
      for (const [fi, value, , ...labels] of rows) {
        const name = counters!.families[fi]!;
        if (name === SKIPPED && value !== 0) problems.push(`${where}: ${account} skipped ${value} s saved`);
        if (COUNTER_LABELS[name]) values.set(keyOf(name, account, labels), value);
      }
    }
    compare(where, values, cursors, walkStart);
  };

  const savedCursor = (account: string): string | undefined => {
    try {
      return (JSON.parse(readFileSync(stateFile, 'utf8')) as SavedFile).cursors?.[account];
    } catch {
      return undefined;
    }
  };

  let p: Proc | undefined;
  const start = async (): Promise<Proc> => {
    // An account the state file has no cursor for walks afresh, from lookback, its counters from 0.
    for (const account of ACCOUNTS)
      if (savedCursor(account) === undefined)
        walkStart.set(account, floorMinute(clock.now() - s.lookbackMinutes * MINUTE));
    const exporter = new Exporter({
      config: configFrom(config),
      log: silentLogger,
      version: '0.0.0-test',
      clock,
      backoff: { baseMs: 20, capMs: 300 },
      authBackoff: { baseMs: 200, capMs: 1000 },
      defaultMetrics: false,
      random: () => 0.5,
    });
    const inside = exporter as unknown as Inside;
    const hold = new Hold();
    const parse = inside.parser.traffic;
    inside.parser.traffic = async (bytes, opts) => {
      await hold.at('answered');
      const answer = await parse(bytes, opts);
      await hold.at('parsed');
      return answer;
    };
    let writing = 0;
    const file = inside.cursors.file!;
    const writeOnce = file.writeOnce.bind(file);
    file.writeOnce = async (asked) => {
      await hold.at('scraped');
      writing++;
      try {
        await writeOnce(asked);
      } finally {
        writing--;
      }
    };
    const { server, url } = await serveExporter(exporter);
    await exporter.start();
    const applier = inside.traffic!.applier;
    // Every window is counted in slices of a few records, with a turn of the event loop between them.
    applier.sliceMs = 0;
    const yieldToLoop = applier.yieldToLoop.bind(applier);
    applier.yieldToLoop = async () => {
      const job = applier.queue[0];
      await hold.at(job?.window !== undefined && job.next > 0 ? 'counting' : 'handed-over');
      await yieldToLoop();
    };
    return { exporter, inside, server, url, hold, writing: () => writing, walkStart: new Map(walkStart) };
  };

  const scrape = async (proc: Proc): Promise<void> => {
    const res = await fetch(`${proc.url}/metrics`);
    const text = await res.text();
    if (res.status === 200) record(text, proc);
  };

  /** Nothing under way in real time: no request, no window to count, the /metrics text rebuilt. */
  const calm = async (proc: Proc): Promise<boolean> => {
    await settle();
    const applier = proc.inside.traffic?.applier;
    return proc.inside.upstreams.underWay() === 0 && (applier?.pending ?? 0) === 0;
  };

  /** Waits (real time, bounded) until `done` or until nothing is under way. */
  const calmOr = async (proc: Proc, done: () => boolean) => {
    await waitFor(async () => done() || (await calm(proc)), REAL_WAIT_MS, 'the exporter to settle');
    if (!done()) await proc.exporter.store.refresh();
  };

  /** Moves the clock on until `done` (at most `maxMs` of it); whether it came. */
  const drive = async (proc: Proc, done: () => boolean, maxMs: number): Promise<boolean> => {
    for (let t = 0; t <= maxMs && !done(); t += STEP_MS) {
      await clock.advance(STEP_MS, () => calmOr(proc, done));
      await calmOr(proc, done);
    }
    return done();
  };

  /** A window counted that the state file does not hold yet (a scrape showing it must write). */
  const countedUnsaved = (proc: Proc) =>
    ACCOUNTS.some(
      (a) =>
        (proc.inside.traffic?.lock?.countedOf?.(a) ?? Number.NEGATIVE_INFINITY) >
        (proc.inside.cursors.durable.get(a) ?? Number.NEGATIVE_INFINITY),
    );

  const stopProc = async (proc: Proc, graceMs: number) => {
    await proc.exporter.stop(graceMs);
    await closeServer(proc.server, 500);
  };

  /** Old writes that were under way end before the disk is put back (a held one never begins). */
  const drained = (proc: Proc) => waitFor(() => proc.writing() === 0, REAL_WAIT_MS, 'writes under way');

  try {
    p = await start();
    await calmOr(p, () => false);
    for (const [i, e] of s.events.entries()) {
      const proc = p;
      for (let t = 0; t < e.runSeconds; t += SCRAPE_EVERY_S) {
        await clock.advance(SCRAPE_EVERY_S * 1000, () => calmOr(proc, () => false));
        await calmOr(proc, () => false);
        await scrape(proc);
      }
      // Hold the next window to reach the step (a window falls due within a window's length of fake time).
      const reach = s.windowMinutes * MINUTE + 2 * MINUTE;
      let reached: boolean;
      let cut: Promise<unknown> | undefined;
      const mark = sim.requestLog.length;
      if (e.at === 'requested') {
        sim.setFaults({ slow: 1 });
        reached = await drive(proc, () => sim.requestLog.slice(mark).some((x) => x.fault === 'slow'), reach);
        sim.setFaults(s.faults);
      } else if (e.at === 'counted' || e.at === 'committed' || e.at === 'scraped') {
        reached = await drive(proc, () => countedUnsaved(proc), reach);
        // The /metrics text shows it (it is rebuilt a turn after a change): a scrape of it must write.
        await proc.exporter.store.refresh();
        if (reached && e.at === 'committed') await scrape(proc);
        if (reached && e.at === 'scraped') {
          proc.hold.armed = 'scraped';
          // Its bytes reach the scraper only if the write is let go on (a graceful stop's grace).
          cut = scrape(proc).catch(() => undefined);
          reached = await waitFor(
            () => proc.hold.hit !== undefined,
            REAL_WAIT_MS,
            'the scrape to write',
          ).then(
            () => true,
            () => false,
          );
        }
      } else {
        proc.hold.armed = e.at;
        reached = await drive(proc, () => proc.hold.hit !== undefined, reach);
      }
      // Not reached: nothing may be held by a window that comes later, during the stop.
      if (!reached) proc.hold.armed = undefined;
      stops.push({ at: e.at, how: e.how, goesOn: e.goesOn, reached });
      const where = `stop ${i + 1} (${e.how}${e.how === 'graceful' ? (e.goesOn ? ', goes on' : ', cut') : ''} at ${e.at}${reached ? '' : ', not reached'})`;
      let files: Map<string, Buffer>;
      if (e.how === 'kill') {
        // What is on disk at this moment is what the next process reads: whatever this one does next is undone.
        files = onDisk(dir);
        const stopping = stopProc(proc, SHORT_GRACE_MS);
        proc.hold.cut();
        await stopping;
      } else {
        const stopping = stopProc(proc, e.goesOn ? LONG_GRACE_MS : SHORT_GRACE_MS);
        if (e.goesOn) proc.hold.goOn();
        else proc.hold.cut();
        const inGrace = e.scrapeInGrace ? scrape(proc).catch(() => undefined) : undefined;
        await stopping;
        // The process exits once its stop and the server's close return: what is on disk then is what the next one
        // reads (a write still under way is cut, as the exit cuts it).
        files = onDisk(dir);
        await inGrace;
      }
      await cut;
      await drained(proc);
      putBack(dir, files);
      sim.setFaults(s.faults);
      checkFile(`state file after ${where}`);
      const before = problems.length;
      p = await start();
      await calmOr(p, () => false);
      await scrape(p);
      for (let j = before; j < problems.length; j++) problems[j] = `${problems[j]} [after ${where}]`;
    }
    // The books close: no faults; on until every account is caught up (its cursor within a window of now).
    sim.setFaults({});
    const proc = p;
    const horizon = () => floorMinute(clock.now());
    const behind = clock.now() - Math.min(...walkStart.values());
    await drive(
      proc,
      () =>
        ACCOUNTS.every(
          (a) => (proc.inside.traffic?.lock?.countedOf?.(a) ?? 0) > horizon() - s.windowMinutes * MINUTE,
        ),
      behind + 2 * s.windowMinutes * MINUTE,
    );
    await scrape(proc);
    for (const account of ACCOUNTS) {
      const cursor = seen.cursors.get(account);
      if (cursor === undefined) {
        problems.push(`${account}: no cursor scraped`);
        continue;
      }
      // What Prometheus makes of every scrape: their increases, a drop counted as a reset.
      const want = truth(account, walkStart.get(account)!, cursor);
      let wrong = 0;
      for (const [k, n] of want) {
        checked++;
        const [name, , ...values] = k.split('\u0000');
        const labels: Record<string, string> = { account };
        COUNTER_LABELS[name!]!.forEach((l, i) => {
          labels[l] = values[i]!;
        });
        const got = seen.value(name!, labels);
        if (got !== n && wrong++ < 3)
          problems.push(`summed increases: ${account} ${name}{${values.join(',')}} ${got}, truth ${n}`);
      }
    }
    return { problems, stops, scrapes, checked };
  } finally {
    if (p) await stopProc(p, SHORT_GRACE_MS);
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
