/**
 * Start (created) timestamps as a real Prometheus 2.53 uses them (issue 23). Two Prometheus servers scrape the same
 * exporter every second: one with `--enable-feature=created-timestamp-zero-ingestion` (it asks for the protobuf
 * format and stores a zero at each counter's created timestamp), one without (it asks for OpenMetrics, as today).
 * At the end `increase()` over the whole run is compared with the simulator's truth for
 *   (a) the lookback walked before the first scrape,
 *   (b) a resource that appears mid-run,
 *   (c) a status code a resource answers for the first time mid-run,
 *   (d) the counts across a restart with state_file,
 * and (e) an exporter whose lookback (70 minutes) reaches further back than Prometheus' head accepts.
 *
 * Time. Prometheus stamps samples with its own (real) time; the exporter's created timestamps come from the fake
 * clock it shares with the simulator. That clock starts 10 minutes behind real time and is driven forward one
 * minute-window at a time, never past real time, so every created timestamp is older than the samples after it.
 * A query is evaluated exactly at a scrape's timestamp: increase() then has nothing to extrapolate at the end, and
 * with the zero in place nothing at the start either, so the flagged answer is exact.
 *
 * The proxy between exporter and simulator hides the new resource (b, and another for d) and the status code (c)
 * until they "appear", as an API that lists only what exists; it notes the first window that carried each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { walkers } from '../helpers/ground-truth.js';
import { type Prometheus, startPrometheus } from '../helpers/prometheus.js';
import { decodeProtobuf } from '../helpers/protobuf.js';
import { type Stack, startStack, waitFor } from '../helpers/stack.js';
import { startTamperProxy, type TamperProxy } from '../helpers/tamper-proxy.js';
import { findPrometheusTrixie } from '../helpers/tools.js';

const bin = findPrometheusTrixie();

const TOKEN = 'created-token-23';
const ACCOUNT = 'demo';
/** (a), (d): counted from the first window. (b): appears mid-run. (d): appears right after the restart. */
const OLD = '101';
const NEW = '102';
const AFTER_RESTART = '103';
/** (c): OLD answers this code only from mid-run on. */
const CODE = '404';
const LOOKBACK_MIN = 20;
const FAR_LOOKBACK_MIN = 70;
const PROTOBUF = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited';

function world(): SimAccount[] {
  return [
    {
      name: ACCOUNT,
      token: TOKEN,
      resources: [OLD, NEW, AFTER_RESTART].map((id) => ({ id, name: `r${id}`, cname: `r${id}.example` })),
      streams: [],
      recordings: [],
    },
  ];
}

interface Appearing {
  shown: boolean;
  /** Start of the first traffic window that carried it (ms). */
  firstWindow?: number;
}

interface TrafficRecord {
  resource?: string;
  [key: string]: unknown;
}

/** Hides NEW, AFTER_RESTART and OLD's CODE from traffic answers until shown. */
function hide(proxy: TamperProxy, appearing: Map<string, Appearing>): void {
  proxy.tamper = (req, up) => {
    if (!req.path.startsWith('/app/metrics/v1') || up.status !== 200) return undefined;
    const body = JSON.parse(up.body) as { start: string; data: TrafficRecord[] };
    const start = Date.parse(`${body.start}Z`);
    const seen = (key: string): boolean => {
      const a = appearing.get(key)!;
      if (a.shown) a.firstWindow = Math.min(a.firstWindow ?? start, start);
      return a.shown;
    };
    body.data = body.data.filter((r) => r.resource === OLD || seen(r.resource ?? ''));
    const old = body.data.find((r) => r.resource === OLD);
    if (old && !seen('code')) delete old[`edge_status_${CODE}`];
    return { ...up, body: JSON.stringify(body) };
  };
}

async function queryAt<T>(prom: Prometheus, expr: string, time: number): Promise<T[]> {
  const url = `${prom.url}/api/v1/query?${new URLSearchParams({ query: expr, time: (time / 1000).toFixed(3) })}`;
  const body = (await (await fetch(url)).json()) as { status: string; error?: string; data: { result: T[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

async function instant(prom: Prometheus, expr: string, time: number): Promise<number | undefined> {
  const v = (await queryAt<{ value: [number, string] }>(prom, expr, time))[0]?.value[1];
  return v === undefined ? undefined : Number(v);
}

/** The oldest sample Prometheus stored of the series `expr` selects, in the two hours before `time`. */
async function firstSample(prom: Prometheus, expr: string, time: number): Promise<number | undefined> {
  const v = (await queryAt<{ values: [number, string][] }>(prom, `${expr}[2h]`, time))[0]?.values[0]?.[1];
  return v === undefined ? undefined : Number(v);
}

/** The timestamp (ms) of the newest scrape of `job` Prometheus has stored. */
async function lastScrape(prom: Prometheus, job: string): Promise<number> {
  const t = await instant(prom, `timestamp(up{job="${job}"})`, Date.now());
  return Math.round((t ?? 0) * 1000);
}

async function scrapes(prom: Prometheus, job: string): Promise<number> {
  return (await instant(prom, `count_over_time(up{job="${job}"}[1h])`, Date.now())) ?? 0;
}

describe.skipIf(!bin)('created timestamps in a real Prometheus 2.53', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  });

  it('makes increase() count the lookback and every first value with the flag, and shows what is lost without', async () => {
    const real0 = Date.now();
    const clock = new FakeClock(floorMinute(real0) - 10 * MINUTE);
    const sim: Simulator = await startSimulator({ seed: 23, clock, accounts: world() });
    cleanups.push(() => sim.close());
    const proxy = await startTamperProxy(sim.url);
    cleanups.push(() => proxy.close());
    const appearing = new Map<string, Appearing>(
      [NEW, AFTER_RESTART, 'code'].map((k) => [k, { shown: false }]),
    );
    hide(proxy, appearing);
    const dir = mkdtempSync(join(tmpdir(), 'cdn-created-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const config = (lookbackMin: number, stateFile?: string) => ({
      api: { base_url: proxy.url, token: TOKEN, requests_per_second: 100, concurrency: 4 },
      metrics: { window: '1m', delay: '1m', lookback: `${lookbackMin}m` },
      accounts: [{ name: ACCOUNT }],
      ...(stateFile ? { state_file: stateFile } : {}),
    });
    const stateFile = join(dir, 'state.json');

    let stack: Stack = await startStack({ clock, simulator: sim, config: config(LOOKBACK_MIN, stateFile) });
    const port = Number(new URL(stack.url).port);
    const walkStart = floorMinute(clock.now() - LOOKBACK_MIN * MINUTE);
    cleanups.push(() => stack.stop());
    const far = await startStack({ clock, simulator: sim, config: config(FAR_LOOKBACK_MIN) });
    cleanups.push(() => far.stop());
    const farStart = floorMinute(clock.now() - FAR_LOOKBACK_MIN * MINUTE);
    const counted = (s: Stack) => walkers(s.exporter).get(ACCOUNT)?.current.cursor ?? 0;
    const caughtUp = (s: Stack) => counted(s) >= floorMinute(clock.now()) - MINUTE;
    await waitFor(() => caughtUp(stack), 60_000, 'the lookback walked');

    const job = 'cdn-exporter';
    const farJob = 'cdn-exporter-far';
    const proms: Record<'flag' | 'none', Prometheus> = {} as never;
    for (const [name, flags] of [
      ['flag', ['--enable-feature=created-timestamp-zero-ingestion']],
      ['none', []],
    ] as const) {
      const prom = await startPrometheus({
        bin: bin!,
        target: `127.0.0.1:${port}`,
        job,
        ruleFiles: [],
        interval: '1s',
        flags: [...flags],
        extraJobs: [{ job: farJob, target: new URL(far.url).host }],
      });
      cleanups.push(() => prom.stop());
      proms[name] = prom;
    }
    const both = Object.values(proms);
    /** Waits until every Prometheus has scraped `n` more times. */
    const scraped = async (n: number, which = job) => {
      const from = await Promise.all(both.map((p) => scrapes(p, which)));
      await waitFor(
        async () =>
          (await Promise.all(both.map((p, i) => scrapes(p, which).then((c) => c >= from[i]! + n)))).every(
            Boolean,
          ),
        60_000,
        `${n} scrapes of ${which}`,
      );
    };
    /** One more window counted by every running exporter, then scraped. */
    const step = async (stacks: Stack[]) => {
      const target = floorMinute(clock.now()) + MINUTE;
      expect(target, 'the fake clock stays behind real time').toBeLessThan(Date.now() - MINUTE);
      await waitFor(
        async () => {
          if (clock.now() < target) await clock.advance(1000);
          return clock.now() >= target && stacks.every(caughtUp);
        },
        60_000,
        'a window counted',
      );
      await scraped(2);
    };

    await scraped(3);
    // The far exporter's 70 minutes are walked while Prometheus already holds samples: its head is not empty.
    await waitFor(() => caughtUp(far), 60_000, 'the far lookback walked');
    await scraped(3, farJob);
    for (let i = 0; i < 2; i++) await step([stack, far]);
    appearing.get(NEW)!.shown = true;
    appearing.get('code')!.shown = true;
    for (let i = 0; i < 3; i++) await step([stack, far]);

    // What the flagged Prometheus asked for and got: protobuf, each counter with its start.
    const pb = await fetch(`${stack.url}/metrics`, { headers: { accept: PROTOBUF } });
    const families = decodeProtobuf(new Uint8Array(await pb.arrayBuffer()));
    const requests = families.find((f) => f.name === 'cdn_edge_requests_total')!;
    const createdOf = (resource: string) =>
      requests.metrics.find((m) => m.labels.resource === resource)!.created;
    expect(createdOf(OLD)).toBe(walkStart / 1000);
    expect(createdOf(NEW)).toBe(appearing.get(NEW)!.firstWindow! / 1000);

    const truth = (resource: string, from: number, to: number) => sim.truth(ACCOUNT, resource, from, to).edge;
    const figures: string[] = [];
    type Case = { label: string; expr: string; truth: (cursor: number) => number };
    const evaluate = async (cases: Case[], jobName = job) => {
      const out: Record<string, { flag: number; none: number; truth: number; first: number }> = {};
      for (const c of cases) {
        const row = { flag: 0, none: 0, truth: 0, first: 0 };
        for (const [name, prom] of Object.entries(proms) as ['flag' | 'none', Prometheus][]) {
          const at = await lastScrape(prom, jobName);
          const cursor = (await instant(
            prom,
            `cdn_metrics_window_end_timestamp_seconds{job="${jobName}"}`,
            at,
          ))!;
          row[name] = (await instant(prom, `increase(${c.expr}[2h])`, at))!;
          row.truth = c.truth(cursor * 1000);
          if (name === 'none') {
            // The value of the unflagged Prometheus' first scrape: what increase() cannot see without the zero.
            row.first = (await firstSample(prom, c.expr, at)) ?? Number.NaN;
          }
        }
        out[c.label] = row;
        figures.push(
          `${c.label}: truth ${row.truth}, increase() with the flag ${row.flag}, without ${row.none}`,
        );
      }
      return out;
    };
    const sel = (resource: string, extra = '') =>
      `cdn_edge_requests_total{job="${job}",resource="${resource}"${extra}}`;
    const before = await evaluate([
      { label: '(a) lookback', expr: sel(OLD), truth: (c) => truth(OLD, walkStart, c).requests },
      {
        label: '(b) new resource',
        expr: sel(NEW),
        truth: (c) => truth(NEW, appearing.get(NEW)!.firstWindow!, c).requests,
      },
      {
        label: '(c) new status code',
        expr: `cdn_edge_responses_total{job="${job}",resource="${OLD}",code="${CODE}"}`,
        truth: (c) => truth(OLD, appearing.get('code')!.firstWindow!, c).codes[CODE]!,
      },
    ]);

    // (d) A restart with state_file on the same port; AFTER_RESTART appears with the new process.
    const resumed = counted(stack);
    await stack.stop();
    appearing.get(AFTER_RESTART)!.shown = true;
    stack = await startStack({ clock, simulator: sim, config: config(LOOKBACK_MIN, stateFile), port });
    for (let i = 0; i < 3; i++) await step([stack, far]);
    const after = decodeProtobuf(
      new Uint8Array(
        await (await fetch(`${stack.url}/metrics`, { headers: { accept: PROTOBUF } })).arrayBuffer(),
      ),
    ).find((f) => f.name === 'cdn_edge_requests_total')!;
    // The restored counters continue from the checkpoint with the start they had (no new zero under a continued
    // value); a series new after the restart starts at its first window, not at the process start.
    const createdBefore = new Map(requests.metrics.map((m) => [m.labels.resource, m.created]));
    for (const m of after.metrics) {
      const before = createdBefore.get(m.labels.resource);
      if (before !== undefined) expect(m.created).toBe(before);
      else expect(m.created).toBeGreaterThanOrEqual(resumed / 1000);
    }
    expect(after.metrics.find((m) => m.labels.resource === AFTER_RESTART)?.created).toBe(
      appearing.get(AFTER_RESTART)!.firstWindow! / 1000,
    );

    const restart = await evaluate([
      { label: '(d) across the restart', expr: sel(OLD), truth: (c) => truth(OLD, walkStart, c).requests },
      {
        label: '(d) new resource after the restart',
        expr: sel(AFTER_RESTART),
        truth: (c) => truth(AFTER_RESTART, appearing.get(AFTER_RESTART)!.firstWindow!, c).requests,
      },
    ]);
    const farCase = await evaluate(
      [
        {
          label: '(e) lookback of 70 minutes',
          expr: `cdn_edge_requests_total{job="${farJob}",resource="${OLD}"}`,
          truth: (c) => truth(OLD, farStart, c).requests,
        },
      ],
      farJob,
    );
    const createdSeries = await instant(
      proms.none,
      `count({__name__=~"cdn_.+_created",job="${job}"})`,
      Date.now(),
    );
    const createdFlagged = await instant(
      proms.flag,
      `count({__name__=~"cdn_.+_created",job="${job}"})`,
      Date.now(),
    );
    figures.push(
      `series named *_created stored: with the flag ${createdFlagged ?? 0}, without ${createdSeries ?? 0}`,
    );
    console.info(`created timestamps, measured:\n  ${figures.join('\n  ')}`);

    for (const row of [...Object.values(before), ...Object.values(restart)]) {
      // With the flag: exact.
      expect(row.flag).toBeCloseTo(row.truth, 6);
      // Without: the first scraped value is missing (within increase()'s extrapolation of the rest).
      expect(row.first).toBeGreaterThan(0);
      expect(row.none).toBeLessThan(row.truth - row.first / 2);
      expect(Math.abs(row.none - (row.truth - row.first))).toBeLessThan(0.1 * (row.truth - row.first) + 1);
    }
    // Beyond Prometheus' head (about an hour behind its newest sample) the zero is refused: the flag changes nothing.
    const e = farCase['(e) lookback of 70 minutes']!;
    expect(e.flag).toBeLessThan(e.truth - e.first / 2);
    expect(Math.abs(e.flag - e.none)).toBeLessThan(0.1 * e.none + 1);
    // Prometheus 2.53 stores OpenMetrics `_created` samples as series of their own; from protobuf it stores none.
    expect(createdSeries).toBeGreaterThan(0);
    expect(createdFlagged ?? 0).toBe(0);
  }, 300_000);
});
