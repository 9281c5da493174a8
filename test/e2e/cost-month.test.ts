/**
 * The cost rules, dashboard and alerts over a real month on a real Prometheus (issue 24). A model of the exporter
 * writes 33 days of its exposition for two accounts (one scrape a minute, timestamps, OpenMetrics), with what a
 * month brings: a process restart (counters reset), an API outage followed by a catch-up in 10-minute windows, the
 * exporter down for hours, a resource that appears mid-month. `promtool tsdb create-blocks-from openmetrics`
 * turns it into blocks, `prometheus` serves them, and every query of the cdn-cost dashboard and every cost alert
 * expression runs at chosen times of March 2026. The answers are compared with what the test computes from the
 * model's own windows: volume exactly, the 95th percentile within the bound the docs state.
 *
 * Recording rules do not backfill from raw data: their expressions are evaluated inline instead, each use of a
 * recorded series replaced by its rule's expression (over a range: a subquery at the rule group's interval, whose
 * steps fall on whole minutes as the group's evaluations would).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderAll } from '../../grafana/dashboards-src/index.js';
import { mulberry32 } from '../../src/simulator/random.js';
import { type Prometheus, startPrometheus } from '../helpers/prometheus.js';
import { findTool } from '../helpers/tools.js';

const ROOT = join(import.meta.dirname, '..', '..');
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const MONTH_START = Date.UTC(2026, 2, 1);
const MONTH_SECONDS = 31 * 86_400;
const DATA_FROM = Date.UTC(2026, 1, 27);
const DATA_TO = Date.UTC(2026, 3, 1);
/** metrics.delay: a window is read this long after its end; scrapes happen 30 s into each minute. */
const DELAY = 5 * MIN;
const SCRAPE_OFFSET = 30_000;
const LABELS = 'job="cdn-exporter",instance="exporter:9877"';

interface Window {
  start: number;
  end: number;
  /** Per resource: average bandwidth over the window, bit/s, and whole bytes as the exporter counts them. */
  bits: Map<string, number>;
  bytes: Map<string, number>;
  /** The scrape that first shows it. */
  seenAt: number;
}

interface AccountModel {
  name: string;
  /** In the order the exporter shows them. */
  windows: Window[];
  /** Every 5-minute period with the account's true average (bit/s): what the CDN bills. */
  periods: Array<{ start: number; bits: number }>;
  /** Scrape times with no exposition (the exporter down). */
  down: Array<[number, number]>;
  /** Process starts (counters from 0): the scrape times at which a new process serves. */
  restarts: number[];
  commitBytes: number;
  commitBits: number;
}

const nextScrape = (t: number) => Math.ceil((t - SCRAPE_OFFSET) / MIN) * MIN + SCRAPE_OFFSET;

/**
 * One account's windows. `outage`: the API answers nothing in [from, to) (no window is read); `down`: no scrape
 * and no process in [from, to). After either, the backlog is read in 10-minute windows, four per minute.
 */
function model(
  name: string,
  seed: number,
  resources: Array<{ id: string; from: number; base: number }>,
  o: {
    outage?: [number, number];
    down?: [number, number];
    restart?: number;
    commitBytes: number;
    commitBits: number;
  },
): AccountModel {
  const rnd = mulberry32(seed);
  const fives: Array<{ start: number; bits: Map<string, number> }> = [];
  for (let start = DATA_FROM; start < DATA_TO; start += 5 * MIN) {
    const hour = (start % DAY) / HOUR;
    const bits = new Map<string, number>();
    for (const r of resources) {
      if (start < r.from) continue;
      const daily = 1 + 0.6 * Math.sin(((hour - 9) / 24) * 2 * Math.PI);
      bits.set(r.id, Math.round(r.base * daily * (0.7 + 0.6 * rnd()) * (rnd() < 0.01 ? 3 : 1)));
    }
    fives.push({ start, bits });
  }
  const blocked = [o.outage, o.down].filter((x): x is [number, number] => x !== undefined);
  const windows: Window[] = [];
  let backlog: typeof fives = [];
  let catchUpAt = 0;
  let perScrape = 0;
  /** Windows due while a catch-up is still being counted wait for it (the cursor advances in order). */
  let notBefore = 0;
  const push = (parts: typeof fives, seenAt: number) => {
    const start = parts[0]!.start;
    const end = start + parts.length * 5 * MIN;
    const seconds = (end - start) / 1000;
    const bits = new Map<string, number>();
    for (const id of new Set(parts.flatMap((p) => [...p.bits.keys()]))) {
      // The API's bandwidth of a longer window is the average over it.
      bits.set(id, parts.reduce((a, p) => a + (p.bits.get(id) ?? 0), 0) / parts.length);
    }
    const bytes = new Map([...bits].map(([id, b]) => [id, Math.round((b * seconds) / 8)]));
    windows.push({ start, end, bits, bytes, seenAt });
  };
  for (const f of fives) {
    const due = nextScrape(f.start + 5 * MIN + DELAY);
    if (due >= DATA_TO) break;
    const block = blocked.find(([a, b]) => due >= a && due < b);
    if (block) {
      backlog.push(f);
      catchUpAt = nextScrape(block[1]);
      continue;
    }
    if (backlog.length > 0) {
      // Catch-up: 10-minute windows, four counted at each scrape from the end of the block.
      for (let i = 0; i < backlog.length; i += 2) {
        push(backlog.slice(i, i + 2), catchUpAt + Math.floor(perScrape / 4) * MIN);
        perScrape++;
      }
      notBefore = windows[windows.length - 1]!.seenAt;
      backlog = [];
      perScrape = 0;
    }
    push([f], Math.max(due, notBefore));
  }
  windows.sort((x, y) => x.seenAt - y.seenAt);
  const restarts = [DATA_FROM, ...(o.restart ? [o.restart] : []), ...(o.down ? [nextScrape(o.down[1])] : [])];
  return {
    name,
    windows,
    periods: fives.map((f) => ({ start: f.start, bits: [...f.bits.values()].reduce((x, y) => x + y, 0) })),
    down: o.down ? [o.down] : [],
    restarts,
    commitBytes: o.commitBytes,
    commitBits: o.commitBits,
  };
}

const ACME = model(
  'acme',
  1,
  [
    { id: 'a1', from: 0, base: 8e8 },
    { id: 'a2', from: 0, base: 3e8 },
  ],
  {
    restart: Date.UTC(2026, 2, 10, 14, 3, 30),
    // acme's month runs over its volume commit and its p95 commit.
    commitBytes: 250e12,
    commitBits: 1e9,
  },
);
const GLOBEX = model(
  'globex',
  2,
  [
    { id: 'g1', from: 0, base: 5e8 },
    { id: 'g2', from: Date.UTC(2026, 2, 5, 10), base: 2e8 },
  ],
  {
    outage: [Date.UTC(2026, 2, 8, 2), Date.UTC(2026, 2, 8, 10)],
    down: [Date.UTC(2026, 2, 12, 20), Date.UTC(2026, 2, 13, 3)],
    commitBytes: 500e12,
    commitBits: 5e9,
  },
);
const ACCOUNTS = [ACME, GLOBEX];

/** The exposition the model's exporter serves, as OpenMetrics with a timestamp per sample. */
/**
 * Writes the exposition in files of CHUNK_MS each (aligned to the TSDB's 2-hour blocks) and hands each to
 * `convert`: promtool 2.42 reads its whole input once per 2-hour block, so one file of a month would be read
 * about 400 times.
 */
const CHUNK_MS = 12 * HOUR;
function writeOpenMetrics(file: string, convert: () => void): void {
  const scrapesOf = (from: number) => {
    const out: number[] = [];
    for (let t = nextScrape(from); t < Math.min(from + CHUNK_MS, DATA_TO); t += MIN) out.push(t);
    return out;
  };
  const served = (a: AccountModel, t: number) => !a.down.some(([x, y]) => t >= x && t < y);
  const processStart = (a: AccountModel, t: number) => Math.max(...a.restarts.filter((r) => r <= t));
  type Series = { labels: string; at: (t: number) => number | undefined };
  const families: Array<{ name: string; type: string; sample: string; series: Series[] }> = [];
  const counters: Series[] = [];
  const gauges: Series[] = [];
  const ends: Series[] = [];
  const commitBytes: Series[] = [];
  const commitBits: Series[] = [];
  for (const a of ACCOUNTS) {
    const ids = [...new Set(a.windows.flatMap((w) => [...w.bits.keys()]))].sort();
    for (const id of ids) {
      let next = 0;
      let sum: number | undefined;
      let process = -1;
      counters.push({
        labels: `${LABELS},account="${a.name}",resource="${id}"`,
        at: (t) => {
          const from = processStart(a, t);
          if (from !== process) {
            process = from;
            sum = undefined;
          }
          for (; next < a.windows.length && a.windows[next]!.seenAt <= t; next++) {
            const w = a.windows[next]!;
            if (w.seenAt >= from && w.bytes.has(id)) sum = (sum ?? 0) + w.bytes.get(id)!;
          }
          return sum;
        },
      });
      const newest = cursorOf(a);
      gauges.push({
        labels: `${LABELS},account="${a.name}",resource="${id}"`,
        at: (t) => {
          const bits = newest(t)?.bits.get(id);
          return bits === undefined ? undefined : bits / 8;
        },
      });
    }
    const newest = cursorOf(a);
    ends.push({
      labels: `${LABELS},account="${a.name}"`,
      at: (t) => newest(t)?.end && newest(t)!.end / 1000,
    });
    commitBytes.push({ labels: `${LABELS},account="${a.name}"`, at: () => a.commitBytes });
    commitBits.push({ labels: `${LABELS},account="${a.name}"`, at: () => a.commitBits });
  }
  families.push(
    {
      name: 'cdn_edge_transferred_bytes',
      type: 'counter',
      sample: 'cdn_edge_transferred_bytes_total',
      series: counters,
    },
    {
      name: 'cdn_edge_bandwidth_bytes_per_second',
      type: 'gauge',
      sample: 'cdn_edge_bandwidth_bytes_per_second',
      series: gauges,
    },
    {
      name: 'cdn_metrics_window_end_timestamp_seconds',
      type: 'gauge',
      sample: 'cdn_metrics_window_end_timestamp_seconds',
      series: ends,
    },
    {
      name: 'cdn_commit_transfer_bytes',
      type: 'gauge',
      sample: 'cdn_commit_transfer_bytes',
      series: commitBytes,
    },
    {
      name: 'cdn_commit_bandwidth_bits_per_second',
      type: 'gauge',
      sample: 'cdn_commit_bandwidth_bits_per_second',
      series: commitBits,
    },
  );
  const accountOf = (labels: string) => ACCOUNTS.find((a) => labels.includes(`account="${a.name}"`))!;
  for (let from = DATA_FROM; from < DATA_TO; from += CHUNK_MS) {
    const scrapes = scrapesOf(from);
    const lines: string[] = [];
    for (const f of families) {
      lines.push(`# TYPE ${f.name} ${f.type}`);
      for (const s of f.series) {
        const a = accountOf(s.labels);
        for (const t of scrapes) {
          if (!served(a, t)) continue;
          const v = s.at(t);
          if (v !== undefined) lines.push(`${f.sample}{${s.labels}} ${v} ${t / 1000}`);
        }
      }
    }
    lines.push('# EOF\n');
    writeFileSync(file, lines.join('\n'));
    convert();
  }
}

/** newestWindow for increasing times, in one pass. */
function cursorOf(a: AccountModel): (t: number) => Window | undefined {
  let next = 0;
  let newest: Window | undefined;
  return (t) => {
    for (; next < a.windows.length && a.windows[next]!.seenAt <= t; next++) newest = a.windows[next];
    return newest;
  };
}

/** The newest window a scrape at `t` shows (the cursor of the serving process; none before its first). */
function newestWindow(a: AccountModel, t: number): Window | undefined {
  let newest: Window | undefined;
  for (const w of a.windows) {
    if (w.seenAt > t) break;
    newest = w;
  }
  return newest;
}

// ---- Truth, from the model's windows -------------------------------------------------------------------------

/** The evaluation minute that first sees a scrape at `t`: the next whole minute. */
const stepOf = (seenAt: number) => Math.ceil(seenAt / MIN) * MIN;
const inMonth = (w: Window, t: number) => stepOf(w.seenAt) >= MONTH_START && stepOf(w.seenAt) <= t;

function truthVolume(a: AccountModel, t: number): number {
  let sum = 0;
  for (const w of a.windows) if (inMonth(w, t)) for (const b of w.bytes.values()) sum += b;
  return sum;
}

/** Every true 5-minute average of the month that ended by `t`: the billing figure's population. */
function truthFiveMinute(a: AccountModel, t: number): number[] {
  return a.periods.filter((p) => p.start >= MONTH_START && p.start + 5 * MIN <= t).map((p) => p.bits);
}

/** Minutes (evaluation steps) of the month up to `t` in which a new window was seen. */
function truthSeenSteps(a: AccountModel, t: number): number {
  return new Set(a.windows.filter((w) => inMonth(w, t)).map((w) => stepOf(w.seenAt))).size;
}

function nearestRank(values: number[], q: number): { sorted: number[]; rank: number } {
  const sorted = [...values].sort((x, y) => x - y);
  return { sorted, rank: Math.ceil(q * sorted.length) };
}

// ---- Inline evaluation of recording rules ---------------------------------------------------------------------

interface RuleFile {
  groups: Array<{
    name: string;
    interval?: string;
    rules: Array<{ record?: string; alert?: string; expr: string }>;
  }>;
}
const RULES = parse(readFileSync(join(ROOT, 'rules', 'cdn-exporter.rules.yml'), 'utf8')) as RuleFile;
const RECORDED = new Map(
  RULES.groups.flatMap((g) =>
    g.rules.filter((r) => r.record).map((r) => [r.record!, { expr: r.expr, step: g.interval ?? '1m' }]),
  ),
);
const ALERTS = new Map(
  RULES.groups.flatMap((g) => g.rules.filter((r) => r.alert).map((r) => [r.alert!, r.expr])),
);

/** `expr` with every recorded series replaced by its rule's expression (a subquery where a range was taken). */
function inline(expr: string): string {
  const names = [...RECORDED.keys()].sort((a, b) => b.length - a.length);
  let out = expr;
  for (const name of names) {
    const escaped = name.replace(/[:]/g, '\\:');
    const re = new RegExp(`(?<![\\w:])${escaped}(?![\\w:])(\\{[^}]*\\})?(\\[([^\\]]+)\\])?`, 'g');
    out = out.replace(re, (_m, matchers: string | undefined, _r, range: string | undefined) => {
      // Matchers that select everything (All) are dropped; others cannot apply to an expression.
      if (matchers && matchers.replace(/\s/g, '') !== '{account=~".*"}')
        throw new Error(`matchers ${matchers} on ${name}`);
      const rule = RECORDED.get(name)!;
      const body = `(${inline(rule.expr.trim())})`;
      return range ? `${body}[${range}:${rule.step}]` : body;
    });
  }
  return out;
}

interface PanelTarget {
  title: string;
  refId: string;
  expr: string;
}
const COST = JSON.parse(renderAll().find((d) => d.file === 'cdn-cost.json')!.text) as {
  panels: Array<{ title?: string; type: string; targets?: Array<{ refId: string; expr: string }> }>;
};
const TARGETS: PanelTarget[] = COST.panels.flatMap((p) =>
  (p.targets ?? []).map((t) => ({ title: p.title ?? '', refId: t.refId, expr: t.expr })),
);

function dashboardQuery(expr: string, t: number): string {
  const range = (t - MONTH_START) / 1000;
  return inline(
    expr
      .replace(/\$__range_s\b/g, String(range))
      .replace(/\$__range\b/g, `${range}s`)
      .replace(/\$account\b/g, '.*'),
  );
}

// ---- The test --------------------------------------------------------------------------------------------------

const prometheusBin = findTool('prometheus');
const promtoolBin = findTool('promtool');
const T_MID = Date.UTC(2026, 2, 16, 12, 0);
const T_END = Date.UTC(2026, 2, 31, 23, 0);

describe.skipIf(!prometheusBin || !promtoolBin)('cost over March 2026 on a real Prometheus', () => {
  let dir = '';
  let prom: Prometheus | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdn-cost-month-'));
    const file = join(dir, 'part.om.txt');
    writeOpenMetrics(file, () =>
      execFileSync(promtoolBin!, ['tsdb', 'create-blocks-from', 'openmetrics', file, join(dir, 'data')], {
        stdio: 'pipe',
        timeout: 120_000,
      }),
    );
    rmSync(file);
    prom = await startPrometheus({
      bin: prometheusBin!,
      target: '127.0.0.1:9',
      job: 'none',
      ruleFiles: [],
      interval: '1h',
      storagePath: join(dir, 'data'),
      // The blocks are months old: kept, not expired.
      flags: ['--storage.tsdb.retention.time=100y', '--query.max-samples=200000000'],
      readyTimeoutMs: 60_000,
    });
  }, 300_000);

  afterAll(async () => {
    await prom?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function values(expr: string, t: number): Promise<Map<string, number>> {
    const answer = await prom!.query(expr, t / 1000);
    expect(answer.status, `${answer.error}\n${expr}`).toBe('success');
    return new Map(answer.result.map((s) => [s.metric.account ?? '', Number(s.value[1])]));
  }

  const target = (title: string, refId = 'A') =>
    TARGETS.find((q) => q.title === title && q.refId === refId)!.expr;

  it.each([
    ['mid-month', T_MID],
    ['month end', T_END],
  ])(
    '%s: volume exact, projection, commit share, p95 within the bound, share not seen',
    async (_when, t) => {
      const elapsed = (t - MONTH_START) / 1000 + 60;
      const table = 'Month so far per account';
      const volume = await values(dashboardQuery(target(table, 'A'), t), t);
      const share = await values(dashboardQuery(target(table, 'C'), t), t);
      const projected = await values(dashboardQuery(target(table, 'D'), t), t);
      const p95 = await values(dashboardQuery(target(table, 'E'), t), t);
      const notSeen = await values(dashboardQuery(target(table, 'G'), t), t);
      const commits = await values(dashboardQuery(target(table, 'B'), t), t);
      for (const a of ACCOUNTS) {
        const truth = truthVolume(a, t);
        expect(truth).toBeGreaterThan(1e13);
        expect(volume.get(a.name), `${a.name} volume`).toBe(truth);
        expect(commits.get(a.name)).toBe(a.commitBytes);
        expect(share.get(a.name)).toBeCloseTo(truth / a.commitBytes, 12);
        expect(projected.get(a.name)! / ((truth * MONTH_SECONDS) / elapsed)).toBeCloseTo(1, 12);
        const unseen = 1 - (truthSeenSteps(a, t) * 300) / elapsed;
        expect(notSeen.get(a.name)).toBeCloseTo(unseen, 9);

        // The p95 over the windows seen lies between the 95(1-u)th and the (95(1-u)+100u)th percentile of all the
        // month's 5-minute averages, u the share not seen, give or take one rank at each end, and the two windows at
        // the month's start that count in the month they were seen (metrics.delay after their end).
        const all = truthFiveMinute(a, t);
        const { sorted } = nearestRank(all, 0.95);
        const n = sorted.length;
        const u = Math.max(0, unseen);
        const lo = sorted[Math.max(0, Math.ceil(n * 0.95 * (1 - u)) - 1 - 3)]!;
        const hi = sorted[Math.min(n - 1, Math.ceil(n * (0.95 * (1 - u) + u)) - 1 + 3)]!;
        const got = p95.get(a.name)!;
        expect(got, `${a.name} p95`).toBeGreaterThanOrEqual(lo * (1 - 1e-12));
        expect(got, `${a.name} p95`).toBeLessThanOrEqual(hi * (1 + 1e-12));
        if (a === ACME) {
          // Nothing unseen: within one rank of nearest-rank (and the month-edge windows).
          const { rank } = nearestRank(all, 0.95);
          expect(got).toBeGreaterThanOrEqual(sorted[rank - 1 - 3]! * (1 - 1e-12));
          expect(got).toBeLessThanOrEqual(sorted[rank - 1 + 3]! * (1 + 1e-12));
        }
      }
      // acme was seen throughout; globex's outage and downtime (15 hours, less what the catch-ups counted) show.
      expect(notSeen.get('acme')).toBeLessThan(0.001);
      expect(notSeen.get('globex')).toBeGreaterThan(0.015);
    },
    300_000,
  );

  it('the other panels: days left, totals, the hour, the 5-minute line, top resources', async () => {
    const t = T_MID;
    const days = await values(dashboardQuery(target('Days left'), t), t);
    expect(days.get('')).toBeCloseTo(15.5, 9);
    const total = await values(dashboardQuery(target('Volume, all accounts'), t), t);
    expect(total.get('')).toBe(truthVolume(ACME, t) + truthVolume(GLOBEX, t));
    const projected = await values(dashboardQuery(target('Projected, all accounts'), t), t);
    expect(projected.get('')).toBeGreaterThan(total.get('')!);
    // The hour ending at t (minute 0): exactly the bytes first seen in its sixty evaluation minutes.
    const hour = await values(dashboardQuery(target('Volume per hour'), t), t);
    for (const a of ACCOUNTS) expect(hour.get(a.name)).toBe(truthVolume(a, t) - truthVolume(a, t - HOUR));
    // The 5-minute line has a point in the minute after each window is seen, none in between.
    for (const a of ACCOUNTS) {
      const newest = newestWindow(a, t)!;
      const at = stepOf(newest.seenAt);
      const line = await values(dashboardQuery(target('5-minute bandwidth'), at), at);
      expect(line.get(a.name)).toBeCloseTo(
        [...newest.bits.values()].reduce((x, y) => x + y, 0),
        3,
      );
      const between = await values(dashboardQuery(target('5-minute bandwidth'), at + 2 * MIN), at + 2 * MIN);
      expect(between.get(a.name)).toBeUndefined();
    }
    const commitLine = await values(dashboardQuery(target('5-minute bandwidth', 'B'), t), t);
    expect(commitLine.get('acme')).toBe(ACME.commitBits);
    // Top resources: the per-resource hourly estimate ranks them as their true volumes do.
    const answer = await prom!.query(dashboardQuery(target('Top resources by volume'), t), t / 1000);
    expect(answer.status).toBe('success');
    const got = answer.result
      .map((s) => ({ id: s.metric.resource!, v: Number(s.value[1]) }))
      .sort((x, y) => y.v - x.v);
    const truth = ACCOUNTS.flatMap((a) =>
      [...new Set(a.windows.flatMap((w) => [...w.bytes.keys()]))].map((id) => ({
        id,
        v: a.windows.filter((w) => inMonth(w, t)).reduce((s, w) => s + (w.bytes.get(id) ?? 0), 0),
      })),
    ).sort((x, y) => y.v - x.v);
    expect(got.map((g) => g.id)).toEqual(truth.map((x) => x.id));
    // increase() extrapolates within each hour and misses a new series' first value: within 10% over this month.
    for (const g of got)
      expect(Math.abs(g.v / truth.find((x) => x.id === g.id)!.v - 1), g.id).toBeLessThan(0.1);
  }, 300_000);

  it('the alert expressions fire for the accounts over their commit or unseen, and not on the 1st', async () => {
    const firing = async (alert: string, t: number) =>
      [...(await values(inline(ALERTS.get(alert)!), t)).keys()].sort();
    expect(await firing('CdnMonthlyTransferProjectedOverCommit', T_MID)).toEqual(['acme']);
    expect(await firing('CdnBandwidthP95OverCommit', T_MID)).toEqual(['acme']);
    expect(await firing('CdnCostFiguresIncomplete', T_MID)).toEqual(['globex']);
    const first = Date.UTC(2026, 2, 1, 18, 0);
    for (const alert of ALERTS.keys())
      if (alert.startsWith('Cdn') && /Commit|Incomplete/.test(alert))
        expect(await firing(alert, first)).toEqual([]);
    // The projection the alert compares is the dashboard's (elapsed time counted the same way).
    const projected = await values(inline('cdn:edge_transferred_bytes:month_to_date'), T_MID);
    expect(projected.get('acme')).toBe(truthVolume(ACME, T_MID));
  }, 300_000);
});
