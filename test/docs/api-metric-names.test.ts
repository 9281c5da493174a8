/**
 * docs/metrics.md's table of the metrics API's metric names (what `metrics.metrics` may list) against the code: every name
 * the configuration accepts is in it exactly once, and each row's families, dashboard panels and alerts are the
 * ones that name really feeds. Families come from the real TrafficMapping asked for that one name; panels and
 * alerts from the committed dashboards' and rules' queries. A row that drifts fails with the row it should be.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { STATUS_CLASSES, STATUS_CODES } from '../../src/api/vocabulary.js';
import { METRIC_NAMES } from '../../src/config/index.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { TrafficMapping } from '../../src/traffic/mapping.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficResponse } from '../../src/traffic/response.js';
import { Scrape } from '../helpers/exposition.js';
import { metricNames } from '../helpers/promql.js';

const ROOT = join(import.meta.dirname, '..', '..');
const METRICS_DOC = readFileSync(join(ROOT, 'docs', 'metrics.md'), 'utf8');
const HEADING = '### API metric names (`metrics.metrics`)';
/** Families every counted window moves, whatever was asked for: not part of a name's row. */
const BOOKKEEPING = /^cdn_(metrics_|resource_info)/;

function sideRecord(): SideRecord {
  return {
    codes: new Map(STATUS_CODES.map((c) => [c, 5])),
    classes: new Map(STATUS_CLASSES.map((c) => [c, 5])),
    requests: 20,
    bandwidthBitsPerSecond: 8000,
    requestTimeSeconds: new Map([['0_250k', 0.01]]),
  };
}

/** The families that get series when the exporter asks the API for `name` alone. */
function familiesFed(name: string): string[] {
  const store = new SeriesStore();
  const p = new TrafficMapping(createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true }), {
    metrics: [name],
    resources: [],
  });
  const response: TrafficResponse = {
    account: 'acme',
    metrics: [name],
    records: [
      {
        resource: '1001',
        resourceName: 'site',
        cname: 'site.cdn.example',
        edge: { ...sideRecord(), hitBytes: 300, hitRatio: 0.5 },
        origin: sideRecord(),
      },
    ],
    issues: [],
    unknownKeys: [],
  };
  const t = Date.UTC(2026, 0, 1);
  p.apply('acme', t, t + 300_000, response, t);
  const scrape = Scrape.of(store.render('text').toString());
  return [...new Set(scrape.samples.map((s) => s.name.replace(/_(bucket|sum|count)$/, '')))]
    .filter((n) => !BOOKKEEPING.test(n))
    .sort();
}

interface Query {
  where: string;
  reads: Set<string>;
}

function panels(): Query[] {
  const out: Query[] = [];
  const walk = (list: Array<Record<string, unknown>>) => {
    for (const panel of list) {
      if (Array.isArray(panel.panels)) walk(panel.panels as Array<Record<string, unknown>>);
      const targets = (panel.targets ?? []) as Array<{ expr?: string }>;
      const reads = new Set(targets.flatMap((t) => metricNames(t.expr ?? '')));
      if (reads.size) out.push({ where: String(panel.title), reads });
    }
  };
  const dir = join(ROOT, 'grafana/dashboards');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    walk(
      (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { panels: Array<Record<string, unknown>> })
        .panels,
    );
  }
  return out;
}

function alerts(): Query[] {
  const rules = parse(readFileSync(join(ROOT, 'rules/cdn-exporter.rules.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
  };
  return rules.groups
    .flatMap((g) => g.rules)
    .filter((r) => r.alert)
    .map((r) => ({ where: r.alert!, reads: new Set(metricNames(r.expr)) }));
}

const PANELS = panels();
const ALERTS = alerts();

const using = (queries: Query[], families: string[]) => [
  ...new Set(queries.filter((q) => families.some((f) => q.reads.has(f))).map((q) => q.where)),
];

/** The row each name should have: names feeding the same families share one. */
function expectedRows(): string[][] {
  const byFamilies = new Map<string, string[]>();
  for (const name of METRIC_NAMES) {
    const key = familiesFed(name).join(' ');
    byFamilies.set(key, [...(byFamilies.get(key) ?? []), name]);
  }
  return [...byFamilies].map(([key, names]) => {
    const families = key.split(' ').filter(Boolean);
    const list = (items: string[], tick: boolean) =>
      items.length ? items.map((i) => (tick ? `\`${i}\`` : i)).join(', ') : '-';
    return [
      list(names, true),
      list(families, true),
      list(using(PANELS, families), false),
      list(using(ALERTS, families), false),
    ];
  });
}

/** The table under HEADING, as rows of cells (header and separator dropped). */
function documentedRows(): string[][] {
  const lines = METRICS_DOC.split('\n');
  const start = lines.indexOf(HEADING);
  expect(start, `docs/metrics.md has no heading ${HEADING}`).toBeGreaterThan(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#/.test(line)) break;
    if (!line.startsWith('|')) continue;
    const cells = line
      .slice(1, -1)
      .split('|')
      .map((c) => c.trim());
    if (/^-+$/.test(cells[0]!) || cells[0] === 'API metric names') continue;
    rows.push(cells);
  }
  return rows;
}

describe('docs/metrics.md: API metric names', () => {
  it('lists every name metrics.metrics accepts, once', () => {
    const listed = documentedRows().flatMap((r) => [...r[0]!.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]!));
    expect([...listed].sort()).toEqual([...METRIC_NAMES].sort());
  });

  it('says for each name the families, panels and alerts it feeds', () => {
    const expected = expectedRows();
    const table = (rows: string[][]) => rows.map((r) => `| ${r.join(' | ')} |`).join('\n');
    expect(table(documentedRows()), `the table should read:\n${table(expected)}`).toBe(table(expected));
  });

  it('a status code feeds the exact-code family only, a class the class family only', () => {
    expect(familiesFed('edge_status_404')).toEqual(['cdn_edge_responses_total', 'cdn_edge_window_responses']);
    expect(familiesFed('origin_status_5xx')).toEqual([
      'cdn_origin_responses_by_class_total',
      'cdn_origin_window_responses_by_class',
    ]);
  });
});
