/**
 * End to end on a real Prometheus: simulator -> exporter -> Prometheus (1 s scrapes, the shipped alert rules) ->
 * every query the shipped dashboards and rules send. Each must parse, and every panel of all four dashboards must
 * show data (bar the named few of MAY_BE_EMPTY), as a user opening Grafana after a minute of running would see.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import {
  type Dashboard,
  interpolate,
  loadDashboards,
  type PanelQuery,
  regexOf,
} from '../helpers/dashboards.js';
import { type Prometheus, type QueryAnswer, startPrometheus } from '../helpers/prometheus.js';
import { type Stack, startStack, waitFor } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';

const RULES_FILE = fileURLToPath(new URL('../../rules/cdn-exporter.rules.yml', import.meta.url));
const JOB = 'cdn-exporter';

/** Grafana's built-in variables, as a 1 s scrape interval and a 5-minute time range would set them. */
const BUILTINS: Record<string, string> = {
  window_range: '20m',
  __rate_interval: '1m',
  __range: '5m',
  __range_s: '300',
  __range_ms: '300000',
  __interval: '1s',
  __interval_ms: '1000',
};

/** Every query-variable as `.*`, Grafana's value for "All" with allValue `.*`. */
const ALL: Record<string, string> = { ...BUILTINS, account: '.*', resource: '.*', stream: '.*', job: '.*' };

/**
 * Panels that may legitimately show nothing in a clean run of a minute or two, keyed `dashboard-uid/panel title`,
 * each with the reason. Empty today: panels that count rare events (429s, API errors, skipped minutes) show 0
 * rather than "No data", and nothing needs more history than a rate range of 20 minutes can extrapolate.
 */
const MAY_BE_EMPTY: Record<string, string> = {
  'cdn-cost/Volume per hour':
    'one point an hour, recorded in minute 0; its exactness is checked over a month in test/e2e/cost-month.test.ts',
  'cdn-traffic/Late traffic share per account':
    'metrics.revisit is off here, and a catch-up would not make revisits anyway (its minutes are final at their ' +
    'first read); the late share is checked against the simulator in test/scenarios/revisit.test.ts',
};

/**
 * The demo's world (both accounts, all DVR streams, recordings in every status), traffic windows of 1 minute
 * with no delay, a login, account discovery, and a catch-up of 3 hours throttled to a few requests per second so that it takes longer than
 * Prometheus needs to start: Prometheus sees the counters step and every rate has a value at once.
 */
const STACK_CONFIG = {
  // The api logs in (the Logins panels need a login) and discovery runs (it finds the two listed accounts).
  api: {
    requests_per_second: 4,
    concurrency: 2,
    token: undefined,
    username: DEMO_USER,
    password: DEMO_PASSWORD,
  },
  accounts_discovery: { enabled: true, interval: '30s' },
  metrics: { window: '1m', delay: '0m', lookback: '3h' },
  dvr: { interval: '5s' },
  recordings: { interval: '5s' },
  accounts: [
    { name: 'demo', dvr_streams: ['live/main', 'news/hd', 'sport/4k'], recordings: true },
    { name: 'acme', token: 'acme-token', dvr_streams: ['tv/channel1'], recordings: true },
  ],
};

interface Outcome {
  query: PanelQuery;
  expr: string;
  answer: QueryAnswer;
}

const key = (q: { dashboard: string; panel: string }) => `${q.dashboard}/${q.panel}`;

/** A panel has data when some target returns a sample with a number (Grafana shows NaN as no value). */
function hasData(a: QueryAnswer): boolean {
  return a.result.some((s) => Number.isFinite(Number(s.value[1])));
}

/** The panels, bar the allow-listed, none of whose targets returned a number. */
function emptyPanels(outcomes: Outcome[]): string[] {
  const withData = new Set(outcomes.filter((o) => hasData(o.answer)).map((o) => key(o.query)));
  return [
    ...new Set(outcomes.map((o) => key(o.query)).filter((k) => !withData.has(k) && !(k in MAY_BE_EMPTY))),
  ];
}

const prometheusBin = findTool('prometheus');
const promtoolBin = findTool('promtool');

/**
 * The rule file with its groups' own intervals (the cost groups: 1m, 5m, 1h) taken out, so that every group runs
 * at this Prometheus' 1 s and is evaluated within the test; written to `dir`.
 */
function rulesAtTestInterval(dir: string): string {
  const file = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { interval?: string }[] };
  for (const g of file.groups) delete g.interval;
  const out = join(dir, 'rules.yml');
  writeFileSync(out, stringify(file));
  return out;
}

describe.skipIf(!prometheusBin || !promtoolBin)('on a real Prometheus', () => {
  const dashboards: Dashboard[] = loadDashboards();
  let stack: Stack | undefined;
  let prom: Prometheus | undefined;
  const rulesDir = mkdtempSync(join(tmpdir(), 'cdn-e2e-rules-'));

  const run = (values: Record<string, string>) =>
    Promise.all(
      dashboards.flatMap((d) =>
        d.panels.map(async (query) => {
          const expr = interpolate(query.expr, values);
          return { query, expr, answer: await prom!.query(expr) };
        }),
      ),
    );

  beforeAll(async () => {
    try {
      stack = await startStack({ config: STACK_CONFIG, exporter: { defaultMetrics: true } });
      prom = await startPrometheus({
        bin: prometheusBin!,
        target: new URL(stack.url).host,
        job: JOB,
        ruleFiles: [rulesAtTestInterval(rulesDir)],
      });
      const p = prom;
      await waitFor(async () => (await p.scrapes()) >= 5, 30_000, 'five scrapes of the exporter');
    } catch (err) {
      await prom?.stop();
      await stack?.stop();
      throw err;
    }
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    await stack?.stop();
    rmSync(rulesDir, { recursive: true, force: true });
  }, 20_000);

  it('scrapes the exporter as job cdn-exporter', async () => {
    const up = await prom!.query(`up{job="${JOB}"}`);
    expect(up.result.map((s) => s.value[1])).toEqual(['1']);
  });

  it('finds panels in every dashboard and a reason for every allow-listed empty panel', () => {
    expect(dashboards.map((d) => d.uid).sort()).toEqual([
      'cdn-cost',
      'cdn-dvr',
      'cdn-exporter',
      'cdn-recordings',
      'cdn-traffic',
    ]);
    for (const d of dashboards) expect(d.panels.length, d.uid).toBeGreaterThan(5);
    const panels = new Set(dashboards.flatMap((d) => d.panels.map(key)));
    for (const k of Object.keys(MAY_BE_EMPTY)) expect(panels, `allow-listed ${k} exists`).toContain(k);
  });

  it('every panel query parses, and every panel shows data', async () => {
    // Counters step once per traffic window: rates need two samples a step apart, so wait (bounded) for them,
    // re-asking once a second (each round is ~100 queries).
    let outcomes: Outcome[] = [];
    const until = Date.now() + 60_000;
    for (let round = 0; round < 120 && Date.now() < until; round++) {
      outcomes = await run(ALL);
      if (outcomes.some((o) => o.answer.status !== 'success') || emptyPanels(outcomes).length === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const failed = outcomes
      .filter((o) => o.answer.status !== 'success')
      .map((o) => `${key(o.query)} [${o.query.ref}]: ${o.answer.error}\n  ${o.expr}`);
    expect(failed, 'queries Prometheus refused').toEqual([]);
    expect(emptyPanels(outcomes), 'panels without data').toEqual([]);
  }, 75_000);

  it('the overview stats show traffic the simulator served', async () => {
    const byTitle = async (panel: string) => {
      const q = dashboards
        .flatMap((d) => d.panels)
        .find((p) => p.dashboard === 'cdn-traffic' && p.panel === panel);
      expect(q, panel).toBeDefined();
      const a = await prom!.query(interpolate(q!.expr, ALL));
      expect(a.result, panel).toHaveLength(1);
      return Number(a.result[0]!.value[1]);
    };
    expect(await byTitle('Edge requests')).toBeGreaterThan(0);
    expect(await byTitle('Edge traffic')).toBeGreaterThan(0);
    const hit = await byTitle('Cache hit ratio (bytes)');
    expect(hit).toBeGreaterThan(0);
    expect(hit).toBeLessThanOrEqual(1);
    // window 1m, delay 0m: the newest counted window ended at most a couple of minutes ago.
    const freshness = await byTitle('Data freshness');
    expect(freshness).toBeGreaterThanOrEqual(0);
    expect(freshness).toBeLessThan(180);
  });

  it('every variable query returns values, for All and for one value picked as a user would', async () => {
    const empty: string[] = [];
    for (const d of dashboards) {
      // Left to right, as Grafana resolves chained variables: once with All, once with the first value of each.
      const picked: Record<string, string> = { ...BUILTINS };
      for (const v of d.variables) {
        const all = await prom!.labelValues(v.label, interpolate(v.match, ALL));
        expect(all.status, `${d.uid} $${v.name}: ${all.error}`).toBe('success');
        if (all.values.length === 0) empty.push(`${d.uid} $${v.name} (All)`);
        const one = await prom!.labelValues(v.label, interpolate(v.match, picked));
        expect(one.status, `${d.uid} $${v.name}: ${one.error}`).toBe('success');
        if (one.values.length === 0) empty.push(`${d.uid} $${v.name} given ${JSON.stringify(picked)}`);
        picked[v.name] = regexOf(one.values.slice(0, 1));
      }
    }
    expect(empty).toEqual([]);
  });

  it('every panel query parses with one account, resource and stream selected', async () => {
    // `demo` is the account of the demo world that has every kind of thing (an idle resource, a dead stream,
    // a recording in error); its first resource and stream as Grafana offers them.
    const values = { ...ALL, account: 'demo', job: JOB };
    const resources = await prom!.labelValues('resource', 'cdn_edge_requests_total{account="demo"}');
    const streams = await prom!.labelValues('stream', 'cdn_dvr_stream_alive{account="demo"}');
    expect(resources.values.length).toBeGreaterThan(1);
    expect(streams.values.length).toBeGreaterThan(1);
    const outcomes = await run({
      ...values,
      resource: regexOf(resources.values.slice(0, 2)),
      stream: regexOf(streams.values.slice(0, 2)),
    });
    const failed = outcomes
      .filter((o) => o.answer.status !== 'success')
      .map((o) => `${key(o.query)}: ${o.expr}`);
    expect(failed).toEqual([]);
    // The selection narrows: the DVR tables list only the picked streams.
    const worst = outcomes.find((o) => o.query.dashboard === 'cdn-dvr' && o.query.panel === 'Worst streams');
    const listed = new Set(worst!.answer.result.map((s) => s.metric.stream));
    expect([...listed].sort()).toEqual(streams.values.slice(0, 2).sort());
  });

  it('every alert rule expression parses, and Prometheus evaluates every rule without error', async () => {
    const file = parse(readFileSync(RULES_FILE, 'utf8')) as {
      groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
    };
    const rules = file.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThan(5);
    for (const r of rules) {
      const a = await prom!.query(r.expr);
      expect(a.status, `${r.alert ?? r.record}: ${a.error}`).toBe('success');
    }
    const p = prom!;
    await waitFor(
      async () => {
        const loaded = await p.rules();
        return loaded.length === rules.length && loaded.every((r) => !r.lastEvaluation.startsWith('0001'));
      },
      15_000,
      'Prometheus to evaluate every rule',
    );
    const loaded = await p.rules();
    expect(loaded.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);
  });

  it('promtool check metrics finds nothing in a live scrape', async () => {
    const text = await stack!.text();
    // The scrape carries every family: traffic, DVR, recordings, self metrics, process defaults.
    for (const family of [
      'cdn_edge_requests_total',
      'cdn_dvr_coverage_ratio',
      'cdn_recording_status',
      'cdn_up',
    ]) {
      expect(text).toContain(`\n${family}{`);
    }
    expect(text).toContain('process_cpu_seconds_total');
    const out = spawnSync(promtoolBin!, ['check', 'metrics'], {
      input: text,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(`${out.stdout}${out.stderr}`.trim()).toBe('');
    expect(out.status).toBe(0);
  });
});
