/**
 * What a few key panels show, computed by Prometheus' own engine: the panel's query (from the generated
 * dashboard, variables filled in) runs through `promtool test rules` as a promql_expr_test over known series.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { OTHER_TEXT, RESOURCES_PER_ACCOUNT } from '../../grafana/dashboards-src/common.js';
import { renderAll } from '../../grafana/dashboards-src/index.js';
import { findTool } from '../helpers/tools.js';

interface Panel {
  title?: string;
  description?: string;
  targets?: { refId?: string; expr?: string }[];
}

const PANELS = new Map<string, Panel[]>(
  renderAll().map((g) => [g.file.replace(/\.json$/, ''), (JSON.parse(g.text) as { panels: Panel[] }).panels]),
);

/** The query of a panel, variables replaced: `.*` for All, 20m for the rate range, unless given. */
function query(uid: string, title: string, refId = 'A', vars: Record<string, string> = {}): string {
  const panel = PANELS.get(uid)?.find((p) => p.title === title);
  const expr = panel?.targets?.find((t) => t.refId === refId)?.expr;
  if (!expr) throw new Error(`no query ${refId} in panel "${title}" of ${uid}`);
  const values: Record<string, string> = {
    window_range: '20m',
    __rate_interval: '2m',
    __range: '1h',
    ...vars,
  };
  return expr.replace(/\$\{?(\w+)\}?/g, (_m, name: string) => values[name] ?? '.*');
}

/** The series selector of a dashboard's `label_values(selector, label)` variable, variables replaced as in `query`. */
function variableSelector(uid: string, name: string): string {
  const d = renderAll().find((g) => g.file === `${uid}.json`);
  const list = (JSON.parse(d!.text) as { templating: { list: { name: string; definition?: string }[] } })
    .templating.list;
  const inner = /^label_values\((.*),\s*\w+\)$/s.exec(list.find((v) => v.name === name)?.definition ?? '');
  if (!inner) throw new Error(`no label_values variable ${name} in ${uid}`);
  return inner[1]!.replace(/\$\{?(\w+)\}?/g, '.*');
}

/** Five-minute steps of `per` each, flat in between, scraped every minute: how the traffic counters move. */
function steps(per: number, windows = 8): string {
  return Array.from({ length: windows }, (_, i) => `${i * per}+0x4`).join(' ');
}

/**
 * A settled counter as remote_write writes it, on a 1-minute grid: a sample only at each 5-minute window's end
 * (its running total), none in between (`_`).
 */
function settledSteps(per: number, windows = 8): string {
  return Array.from({ length: windows }, (_, i) => `${i * per} _x4`).join(' ');
}

/**
 * Three accounts as the exporter exposes them (breakdown: resource): acme folds 14,900 resources under
 * `__other__` (whose info has empty name and cname) and keeps r1 and r2, r1 scraped from two targets; beta folds
 * nothing (no cdn_folded_resources); gamma has only `__other__`.
 */
const RESOURCES_PER_ACCOUNT_SERIES: Record<string, string> = {
  'cdn_resource_info{instance="a:9",account="acme",resource="r1",resource_name="Main",cname="a.example"}':
    '1x10',
  'cdn_resource_info{instance="b:9",account="acme",resource="r1",resource_name="Main",cname="a.example"}':
    '1x10',
  'cdn_resource_info{instance="a:9",account="acme",resource="r2",resource_name="Img",cname="i.example"}':
    '1x10',
  'cdn_resource_info{instance="a:9",account="acme",resource="__other__",resource_name="",cname=""}': '1x10',
  'cdn_folded_resources{instance="a:9",account="acme"}': '14900x10',
  'cdn_folded_resources{instance="b:9",account="acme"}': '14900x10',
  'cdn_resource_info{instance="a:9",account="beta",resource="b1",resource_name="Web",cname="b.example"}':
    '1x10',
  'cdn_resource_info{instance="a:9",account="gamma",resource="__other__",resource_name="",cname=""}': '1x10',
  'cdn_folded_resources{instance="a:9",account="gamma"}': '3x10',
};

interface Case {
  name: string;
  series: Record<string, string>;
  expr: string;
  at: string;
  expect: { labels: string; value: number }[];
}

const CASES: Case[] = [
  {
    name: 'cache hit ratio weighs resources by their bytes, not by their own ratios',
    series: {
      'cdn_edge_transferred_bytes_total{account="acme",resource="r1"}': '0+1e8x40',
      'cdn_edge_cache_hit_bytes_total{account="acme",resource="r1"}': '0+9e7x40',
      'cdn_edge_transferred_bytes_total{account="acme",resource="r2"}': '0+3e8x40',
      'cdn_edge_cache_hit_bytes_total{account="acme",resource="r2"}': '0+1.5e8x40',
    },
    // (0.9e8 + 1.5e8) / (1e8 + 3e8) = 0.6; the mean of 90% and 50% would be 70%.
    expr: query('cdn-traffic', 'Cache hit ratio (bytes)'),
    at: '30m',
    expect: [{ labels: '{}', value: 0.6 }],
  },
  {
    name: 'the resource variable narrows the cache hit ratio to one resource',
    series: {
      'cdn_edge_transferred_bytes_total{account="acme",resource="r1"}': '0+1e8x40',
      'cdn_edge_cache_hit_bytes_total{account="acme",resource="r1"}': '0+9e7x40',
      'cdn_edge_transferred_bytes_total{account="acme",resource="r2"}': '0+3e8x40',
      'cdn_edge_cache_hit_bytes_total{account="acme",resource="r2"}': '0+1.5e8x40',
    },
    expr: query('cdn-traffic', 'Cache hit ratio (bytes)', 'A', { resource: 'r1' }),
    at: '30m',
    expect: [{ labels: '{}', value: 0.9 }],
  },
  {
    name: 'edge 5xx ratio over counters that step once per window',
    series: {
      'cdn_edge_requests_total{account="acme",resource="r1"}': steps(6000),
      'cdn_edge_responses_by_class_total{account="acme",resource="r1",class="5xx"}': steps(300),
      'cdn_edge_responses_by_class_total{account="acme",resource="r1",class="2xx"}': steps(5700),
      'cdn_edge_requests_total{account="acme",resource="r2"}': steps(4000),
      'cdn_edge_responses_by_class_total{account="acme",resource="r2",class="5xx"}': steps(700),
      'cdn_edge_responses_by_class_total{account="acme",resource="r2",class="2xx"}': steps(3300),
    },
    // (300 + 700) / (6000 + 4000) per window, whatever the phase of the steps in the range.
    expr: query('cdn-traffic', 'Edge 5xx ratio'),
    at: '33m',
    expect: [{ labels: '{}', value: 0.1 }],
  },
  {
    name: 'edge requests/s by class reads the class family, one series per class',
    series: {
      'cdn_edge_responses_by_class_total{account="acme",resource="r1",class="2xx"}': '0+600x40',
      'cdn_edge_responses_by_class_total{account="acme",resource="r2",class="2xx"}': '0+600x40',
      'cdn_edge_responses_by_class_total{account="acme",resource="r1",class="5xx"}': '0+60x40',
    },
    expr: query('cdn-traffic', 'Edge requests/s by status class'),
    at: '30m',
    expect: [
      { labels: '{class="2xx"}', value: 20 },
      { labels: '{class="5xx"}', value: 1 },
    ],
  },
  {
    // Both jobs in one Prometheus (remote_write on): the scraped counter at 20/s; the settled one has a sample only
    // at each 5-minute window's end, and more requests (its final numbers, 24/s). Their sum would be 44.
    name: 'the job variable reads the scraped series alone, never the sum of both jobs',
    series: {
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="r1"}': '0+1200x40',
      'cdn_edge_requests_total{job="cdn-exporter-settled",account="acme",resource="r1"}': settledSteps(7200),
    },
    expr: query('cdn-traffic', 'Edge requests', 'A', { job: 'cdn-exporter' }),
    at: '33m',
    expect: [{ labels: '{}', value: 20 }],
  },
  {
    name: 'the job variable reads the settled series alone: 5-minute samples at window ends fill the rate range',
    series: {
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="r1"}': '0+1200x40',
      'cdn_edge_requests_total{job="cdn-exporter-settled",account="acme",resource="r1"}': settledSteps(7200),
    },
    expr: query('cdn-traffic', 'Edge requests', 'A', { job: 'cdn-exporter-settled' }),
    at: '33m',
    expect: [{ labels: '{}', value: 24 }],
  },
  {
    name: 'late traffic share is the scraped job’s revisits over its own requests',
    series: {
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="r1"}': '0+1200x40',
      'cdn_metrics_revisit_edge_requests_total{job="cdn-exporter",account="acme"}': '0+120x40',
      'cdn_edge_requests_total{job="cdn-exporter-settled",account="acme",resource="r1"}': settledSteps(7200),
    },
    expr: query('cdn-traffic', 'Late traffic share per account', 'A', { job: 'cdn-exporter' }),
    at: '33m',
    expect: [{ labels: '{job="cdn-exporter",account="acme"}', value: 0.1 }],
  },
  {
    name: 'late traffic share is empty on the settled job, not scraped revisits over settled requests',
    series: {
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="r1"}': '0+1200x40',
      'cdn_metrics_revisit_edge_requests_total{job="cdn-exporter",account="acme"}': '0+120x40',
      'cdn_edge_requests_total{job="cdn-exporter-settled",account="acme",resource="r1"}': settledSteps(7200),
    },
    expr: query('cdn-traffic', 'Late traffic share per account', 'A', { job: 'cdn-exporter-settled' }),
    at: '33m',
    expect: [],
  },
  {
    // limits.top_resources: the folded resources are one row named "other resources", ranked by their total.
    name: 'top resources by edge traffic: __other__ is one row, "other resources", where its bytes put it',
    series: {
      'cdn_edge_transferred_bytes_total{account="acme",resource="r1"}': '0+3e8x60',
      'cdn_edge_transferred_bytes_total{account="acme",resource="r2"}': '0+1e8x60',
      'cdn_edge_transferred_bytes_total{account="acme",resource="__other__"}': '0+2e8x60',
    },
    expr: query('cdn-traffic', 'Top resources by edge traffic'),
    at: '60m',
    expect: [
      { labels: '{account="acme",resource="r1"}', value: 1.8e10 },
      { labels: '{account="acme",resource="other resources"}', value: 1.2e10 },
      { labels: '{account="acme",resource="r2"}', value: 6e9 },
    ],
  },
  {
    name: 'top resources by edge 5xx: a column query names __other__ as the rank does, so the rows merge',
    series: {
      'cdn_edge_requests_total{account="acme",resource="r1"}': '0+100x60',
      'cdn_edge_responses_by_class_total{account="acme",resource="r1",class="5xx"}': '0+1x60',
      'cdn_edge_requests_total{account="acme",resource="__other__"}': '0+1000x60',
      'cdn_edge_responses_by_class_total{account="acme",resource="__other__",class="5xx"}': '0+50x60',
    },
    expr: query('cdn-traffic', 'Top resources by edge 5xx', 'C'),
    at: '60m',
    expect: [
      { labels: '{account="acme",resource="r1"}', value: 6000 },
      { labels: '{account="acme",resource="other resources"}', value: 60000 },
    ],
  },
  {
    name: 'top resources by volume (cost): __other__ is named "other resources"',
    series: {
      'cdn_resource:edge_transferred_bytes:increase1h{account="acme",resource="r1"}': '5e9x60',
      'cdn_resource:edge_transferred_bytes:increase1h{account="acme",resource="__other__"}': '7e9x60',
    },
    // A range of 3m holds four of these 1-minute samples (both ends included).
    expr: query('cdn-cost', 'Top resources by volume', 'A', { __range: '3m' }),
    at: '60m',
    expect: [
      { labels: '{account="acme",resource="r1"}', value: 2e10 },
      { labels: '{account="acme",resource="other resources"}', value: 2.8e10 },
    ],
  },
  {
    name: 'the resource variable lists resources, not __other__ (its All still counts it)',
    series: {
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="r1"}': '0+100x10',
      'cdn_edge_requests_total{job="cdn-exporter",account="acme",resource="__other__"}': '0+100x10',
    },
    expr: `group by (resource) (${variableSelector('cdn-traffic', 'resource')})`,
    at: '5m',
    expect: [{ labels: '{resource="r1"}', value: 1 }],
  },
  {
    name: 'the resources table lists resources with series of their own, not __other__',
    series: {
      'cdn_resource_info{account="acme",resource="r1",resource_name="Main",cname="cdn.example"}': '1x10',
      'cdn_resource_info{account="acme",resource="__other__",resource_name="",cname=""}': '1x10',
    },
    expr: query('cdn-traffic', 'Resources'),
    at: '5m',
    expect: [{ labels: '{account="acme",resource="r1",resource_name="Main",cname="cdn.example"}', value: 1 }],
  },
  {
    name: 'resources per account: own series count each resource once, __other__ not among them',
    series: RESOURCES_PER_ACCOUNT_SERIES,
    expr: query('cdn-traffic', RESOURCES_PER_ACCOUNT, 'A'),
    at: '5m',
    expect: [
      // r1 on two scrape targets (a shard moving) is one resource; __other__'s info is not a resource.
      { labels: '{account="acme"}', value: 2 },
      { labels: '{account="beta"}', value: 1 },
      // A full cap met it first: everything folded, nothing of its own.
      { labels: '{account="gamma"}', value: 0 },
    ],
  },
  {
    name: 'resources per account: the other resources are N of cdn_folded_resources, 0 where nothing folds',
    series: RESOURCES_PER_ACCOUNT_SERIES,
    expr: query('cdn-traffic', RESOURCES_PER_ACCOUNT, 'B'),
    at: '5m',
    expect: [
      { labels: '{account="acme"}', value: 14900 },
      // No top_resources and no full cap: the gauge is absent, and nothing is folded.
      { labels: '{account="beta"}', value: 0 },
      { labels: '{account="gamma"}', value: 3 },
    ],
  },
  {
    name: 'a stream is down only when no host has it',
    series: {
      'cdn_dvr_stream_alive{account="acme",stream="live/a",host="h1"}': '0x10',
      'cdn_dvr_stream_alive{account="acme",stream="live/a",host="h2"}': '0x10',
      'cdn_dvr_stream_alive{account="acme",stream="live/b",host="h1"}': '0x10',
      'cdn_dvr_stream_alive{account="acme",stream="live/b",host="h2"}': '1x10',
      'cdn_dvr_stream_alive{account="acme",stream="live/c",host="h1"}': '1x10',
    },
    expr: query('cdn-dvr', 'Streams down'),
    at: '5m',
    expect: [{ labels: '{}', value: 1 }],
  },
  {
    name: 'settings by status counts the state set',
    series: {
      'cdn_recording_status{account="acme",id="r1",status="progress"}': '1x10',
      'cdn_recording_status{account="acme",id="r1",status="error"}': '0x10',
      'cdn_recording_status{account="acme",id="r2",status="progress"}': '0x10',
      'cdn_recording_status{account="acme",id="r2",status="error"}': '1x10',
      'cdn_recording_status{account="acme",id="r3",status="progress"}': '1x10',
      'cdn_recording_status{account="acme",id="r3",status="error"}': '0x10',
    },
    expr: query('cdn-recordings', 'Settings by status'),
    at: '5m',
    expect: [
      { labels: '{status="progress"}', value: 2 },
      { labels: '{status="error"}', value: 1 },
    ],
  },
  {
    name: 'recordings in error lists the failed setting with its source',
    series: {
      'cdn_recording_status{account="acme",id="r1",status="error"}': '0x10',
      'cdn_recording_status{account="acme",id="r2",status="error"}': '1x10',
      'cdn_recording_info{account="acme",id="r1",resource_id="9",stream_type="long",launch_type="button",source_domain="a.example",source_path="/one.m3u8"}':
        '1x10',
      'cdn_recording_info{account="acme",id="r2",resource_id="9",stream_type="short",launch_type="schedule",source_domain="b.example",source_path="/two.m3u8"}':
        '1x10',
    },
    expr: query('cdn-recordings', 'Recordings in error'),
    at: '5m',
    expect: [
      {
        labels:
          '{account="acme",id="r2",status="error",resource_id="9",stream_type="short",launch_type="schedule",source_domain="b.example",source_path="/two.m3u8"}',
        value: 1,
      },
    ],
  },
];

it(`every table that shows the "${OTHER_TEXT}" row says where to read how many resources it stands for`, () => {
  expect(PANELS.get('cdn-traffic')?.map((p) => p.title)).toContain(RESOURCES_PER_ACCOUNT);
  const withRow = [...PANELS].flatMap(([uid, panels]) =>
    panels
      .filter((p) => p.targets?.some((t) => t.expr?.includes(`"resource", "${OTHER_TEXT}"`)))
      .map((p) => ({ where: `${uid}/${p.title}`, description: p.description ?? '' })),
  );
  expect(withRow.map((p) => p.where).sort()).toEqual([
    'cdn-cost/Top resources by volume',
    'cdn-traffic/Top resources by edge 5xx',
    'cdn-traffic/Top resources by edge traffic',
    'cdn-traffic/Top resources by origin 5xx',
  ]);
  for (const p of withRow) expect(p.description, p.where).toContain(`"${RESOURCES_PER_ACCOUNT}"`);
});

describe('panel semantics', () => {
  const promtool = findTool('promtool');
  const dir = mkdtempSync(join(tmpdir(), 'cdn-dash-semantics-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.skipIf(!promtool).each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const file = join(dir, `${CASES.indexOf(c)}.test.yml`);
    const test = {
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: Object.entries(c.series).map(([series, values]) => ({ series, values })),
          // promtool compares floats exactly: round to a millionth (a display never shows more).
          promql_expr_test: [
            { expr: `round((${c.expr}), 0.000001)`, eval_time: c.at, exp_samples: c.expect },
          ],
        },
      ],
    };
    writeFileSync(file, stringify(test));
    let out = '';
    try {
      out = execFileSync(promtool!, ['test', 'rules', file], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      throw new Error(`${c.expr}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    }
    expect(out).toContain('SUCCESS');
  });
});
