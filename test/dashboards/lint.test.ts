/**
 * Rules every generated dashboard keeps: each panel has a unit, a description and the `$datasource` variable;
 * every metric an expression reads is in the metric catalogue (test/helpers/metric-catalogue.ts), with labels it
 * has; no rate()/increase() range is a bare small literal, and the counters that step once per traffic window are
 * never read over less than two windows (docs/metrics.md, "How traffic is counted").
 */
import { describe, expect, it } from 'vitest';
import { renderAll } from '../../grafana/dashboards-src/index.js';
import {
  labelsOf,
  MIN_WINDOW_RANGE_SECONDS,
  REQUEST_STEPPED,
  WINDOW_STEPPED,
} from '../helpers/metric-catalogue.js';
import { durationSeconds, metricNames, ranges, selectors } from '../helpers/promql.js';

interface Target {
  refId?: string;
  expr?: string;
  instant?: boolean;
  datasource?: { type?: string; uid?: string };
}
interface PanelJson {
  id?: number;
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  fieldConfig?: {
    defaults?: { unit?: string };
    overrides?: { properties: { id: string; value: unknown }[] }[];
  };
  targets?: Target[];
}
interface VariableJson {
  type: string;
  name: string;
  query?: unknown;
  definition?: string;
  datasource?: { uid?: string };
  options?: { value: string | string[]; selected?: boolean }[];
  current?: { value: string | string[] };
}
interface DashboardJson {
  uid: string;
  title: string;
  tags?: string[];
  templating: { list: VariableJson[] };
  panels: PanelJson[];
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template.
const DS_UID = '${datasource}';
const DASHBOARDS = renderAll().map((g) => ({ file: g.file, json: JSON.parse(g.text) as DashboardJson }));
const BUILTIN_VARIABLES = new Set(['__range', '__range_s', '__rate_interval', '__interval']);
const COUNTER_SAMPLE = /(_total|_bucket|_count|_sum)$/;

/** Every problem found in one query of a panel; empty when the query keeps the rules. */
function queryProblems(expr: string, instant: boolean, variables: Set<string>): string[] {
  const problems: string[] = [];
  for (const s of selectors(expr)) {
    const labels = labelsOf(s.name);
    if (!labels) {
      problems.push(`${s.name} is not in the metric catalogue`);
      continue;
    }
    for (const l of s.labels) if (!labels.includes(l)) problems.push(`${s.name} has no label ${l}`);
  }
  for (const { metric, range, step } of ranges(expr)) {
    for (const part of [range, step].filter(Boolean) as string[]) {
      const v = /^\$\{?(\w+)\}?$/.exec(part)?.[1];
      if (v === 'window_range') continue;
      if (v === '__rate_interval') {
        if (WINDOW_STEPPED.has(metric))
          problems.push(`${metric} steps per window: $__rate_interval is too short`);
        else if (REQUEST_STEPPED.has(metric))
          problems.push(`${metric} moves about once per window and account: $__rate_interval is too short`);
        continue;
      }
      if (v === '__range') {
        if (!instant) problems.push(`[$__range] in a range query (${metric})`);
        continue;
      }
      const seconds = durationSeconds(part);
      if (seconds === undefined) problems.push(`unexpected range [${range}]`);
      else if (seconds < MIN_WINDOW_RANGE_SECONDS) problems.push(`bare small range [${range}] on ${metric}`);
    }
  }
  for (const m of expr.matchAll(/\b(rate|irate|increase)\s*\(\s*([a-zA-Z_:][\w:]*)/g)) {
    if (!COUNTER_SAMPLE.test(m[2]!)) problems.push(`${m[1]}() over ${m[2]}, which is not a counter`);
  }
  for (const m of expr.matchAll(/\$\{?(\w+)\}?/g)) {
    if (!BUILTIN_VARIABLES.has(m[1]!) && !variables.has(m[1]!)) problems.push(`undefined variable $${m[1]}`);
  }
  return problems;
}

describe('the lint itself', () => {
  const vars = new Set(['window_range', 'account']);
  it('accepts a well-formed query', () => {
    expect(
      queryProblems(
        'sum by (class) (rate(cdn_edge_responses_by_class_total{account=~"$account"}[$window_range]))',
        false,
        vars,
      ),
    ).toEqual([]);
  });
  it.each([
    ['rate(cdn_edge_requests_total[1m])', 'bare small range [1m]'],
    ['rate(cdn_edge_requests_total[$__rate_interval])', 'steps per window'],
    ['rate(cdn_api_requests_total[$__rate_interval])', 'about once per window and account'],
    ['increase(cdn_edge_requests_total[$__range])', '[$__range] in a range query'],
    ['rate(cdn_edge_requests_total[$window_range:1m])', 'bare small range'],
    ['sum(cdn_edge_request_count_total)', 'not in the metric catalogue'],
    ['cdn_dvr_stream_alive{resource="x"}', 'has no label resource'],
    ['rate(cdn_dvr_gap_seconds[$window_range])', 'not a counter'],
    ['cdn_up{account=~"$acount"}', 'undefined variable $acount'],
  ])('rejects %s', (expr, problem) => {
    expect(queryProblems(expr, false, vars).join('; ')).toContain(problem);
  });
  it('finds names past functions, grouping, offsets and numbers', () => {
    expect(
      metricNames(
        'histogram_quantile(0.9, sum by (api, le) (rate(cdn_api_request_duration_seconds_bucket[5m]))) > 1e3 ' +
          'and on (api) group_left (x) up offset 1d or vector(0)',
      ),
    ).toEqual(['cdn_api_request_duration_seconds_bucket', 'up']);
  });
});

describe.each(DASHBOARDS.map((d) => [d.file, d.json] as const))('%s', (_file, d) => {
  const variables = new Set(d.templating.list.map((v) => v.name));
  const panels = d.panels.filter((p) => p.type !== 'row');

  it('has a prometheus datasource variable, the project tag and panels', () => {
    const ds = d.templating.list.find((v) => v.name === 'datasource');
    expect(ds?.type).toBe('datasource');
    expect(ds?.query).toBe('prometheus');
    expect(d.tags).toContain('cdn-exporter');
    expect(panels.length).toBeGreaterThan(3);
  });

  it('has unique panel ids and titles', () => {
    const ids = d.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const titles = panels.map((p) => p.title);
    expect(new Set(titles).size).toBe(titles.length);
  });

  it.each(panels.map((p) => [p.title ?? '?', p] as const))(
    'panel %s: unit, description, datasource',
    (_t, p) => {
      expect(p.description?.length ?? 0).toBeGreaterThan(20);
      expect(p.fieldConfig?.defaults?.unit).toMatch(/\S/);
      for (const o of p.fieldConfig?.overrides ?? []) {
        expect(o.properties.some((prop) => prop.id === 'unit' && typeof prop.value === 'string')).toBe(true);
      }
      expect(p.datasource?.uid).toBe(DS_UID);
      expect(p.targets?.length ?? 0).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource?.uid).toBe(DS_UID);
        expect(t.refId).toMatch(/^[A-Z]$/);
        expect(t.expr).toMatch(/\S/);
      }
    },
  );

  it.each(panels.map((p) => [p.title ?? '?', p] as const))('panel %s: queries keep the contract', (_t, p) => {
    const problems = (p.targets ?? []).flatMap((t) =>
      queryProblems(t.expr ?? '', t.instant === true, variables).map((m) => `${t.refId}: ${m}`),
    );
    expect(problems).toEqual([]);
  });

  it('variables read catalogue metrics from $datasource', () => {
    for (const v of d.templating.list.filter((x) => x.type === 'query')) {
      expect(v.datasource?.uid).toBe(DS_UID);
      const inner = /^label_values\((.*),\s*(\w+)\)$/.exec(v.definition ?? '');
      expect(inner, v.definition).not.toBeNull();
      expect(queryProblems(inner![1]!, false, variables)).toEqual([]);
      expect(labelsOf(metricNames(inner![1]!)[0]!)).toContain(inner![2]);
    }
  });

  it('offers no rate range below two windows, and defaults to 20m', () => {
    const usesWindowRange = panels.some((p) => p.targets?.some((t) => t.expr?.includes('$window_range')));
    const v = d.templating.list.find((x) => x.name === 'window_range');
    expect(v !== undefined).toBe(usesWindowRange);
    if (!v) return;
    const values = (v.options ?? []).map((o) => String(o.value));
    expect(values.length).toBeGreaterThan(0);
    for (const value of values)
      expect(durationSeconds(value)).toBeGreaterThanOrEqual(MIN_WINDOW_RANGE_SECONDS);
    expect(v.current?.value).toBe('20m');
  });
});

it('dashboards have distinct uids and titles', () => {
  expect(new Set(DASHBOARDS.map((d) => d.json.uid)).size).toBe(DASHBOARDS.length);
  expect(new Set(DASHBOARDS.map((d) => d.json.title)).size).toBe(DASHBOARDS.length);
});
