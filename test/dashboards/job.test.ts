/**
 * The scraped and the settled series (issue 32, docs/remote-write.md): both carry the same traffic families, the
 * settled ones under their own job (`remote_write.job`, default cdn-exporter-settled), so a dashboard that reads
 * those families must pick one job at a time or it counts the traffic twice. Checked on the generated JSON: the
 * traffic dashboard's `job` variable (one job, the scraped one by default, described), every selector of a
 * settled family with `job=~"$job"` (its account and resource variables too), the panels that read only
 * scraped families saying so, and the dashboards without the variable reading no settled family.
 */
import { describe, expect, it } from 'vitest';
import { renderAll } from '../../grafana/dashboards-src/index.js';
import { SCRAPED_JOB, SETTLED_FAMILIES, SETTLED_JOB } from '../../grafana/dashboards-src/traffic.js';
import { labelsOf } from '../helpers/metric-catalogue.js';

interface Target {
  expr?: string;
}
interface PanelJson {
  type: string;
  title?: string;
  description?: string;
  targets?: Target[];
}
interface VariableJson {
  type: string;
  name: string;
  definition?: string;
  description?: string;
  multi?: boolean;
  includeAll?: boolean;
  sort?: number;
  current?: { value: string | string[] };
}
interface DashboardJson {
  uid: string;
  description?: string;
  templating: { list: VariableJson[] };
  panels: PanelJson[];
}

const DASHBOARDS = renderAll().map((g) => JSON.parse(g.text) as DashboardJson);
const JOB_MATCHER = 'job=~"$job"';
const SETTLED = new Set(SETTLED_FAMILIES);

/** Every use of a settled family in `expr`: its name and its matchers ('' for a bare name). */
function settledUses(expr: string): { name: string; matchers: string }[] {
  const out: { name: string; matchers: string }[] = [];
  for (const m of expr.matchAll(/(?<![\w:$])([a-zA-Z_:][\w:]*)(\s*\{([^}]*)\})?/g)) {
    if (SETTLED.has(m[1]!)) out.push({ name: m[1]!, matchers: m[3] ?? '' });
  }
  return out;
}

function exprs(p: PanelJson): string[] {
  return (p.targets ?? []).map((t) => t.expr ?? '');
}

it('the settled families are catalogue metrics, as the exporter names them', () => {
  expect(SETTLED_FAMILIES.length).toBe(14);
  for (const f of SETTLED_FAMILIES) expect(labelsOf(f), f).toContain('account');
});

it('the check itself finds a settled family without the job matcher, bare or with other matchers', () => {
  const miss = (e: string) => settledUses(e).filter((u) => !u.matchers.includes(JOB_MATCHER));
  expect(miss('sum(rate(cdn_edge_requests_total{job=~"$job",account=~"$account"}[$window_range]))')).toEqual(
    [],
  );
  expect(miss('sum(rate(cdn_edge_requests_total{account=~"$account"}[5m]))')).toHaveLength(1);
  expect(miss('sum(cdn_origin_bandwidth_bytes_per_second)')).toHaveLength(1);
  expect(miss('cdn_metrics_revisit_edge_requests_total{account="a"}')).toEqual([]);
});

describe('cdn-traffic: the job variable', () => {
  const d = DASHBOARDS.find((x) => x.uid === 'cdn-traffic')!;
  const job = d.templating.list.find((v) => v.name === 'job')!;

  it('lists the jobs with traffic counters, one at a time, the scraped one first and by default', () => {
    expect(job.type).toBe('query');
    expect(job.definition).toBe('label_values(cdn_edge_requests_total, job)');
    expect(job.multi).toBe(false);
    expect(job.includeAll).toBe(false);
    // Alphabetical: a job sorts before its own name with "-settled" appended.
    expect(job.sort).toBe(1);
    expect([SETTLED_JOB, SCRAPED_JOB].sort()[0]).toBe(SCRAPED_JOB);
    expect(job.current?.value).toBe(SCRAPED_JOB);
    // Before the variables that read by it.
    const names = d.templating.list.map((v) => v.name);
    expect(names.indexOf('job')).toBeLessThan(names.indexOf('account'));
  });

  it('says which series is which, on the variable and on the dashboard', () => {
    for (const text of [job.description ?? '', d.description ?? '']) {
      expect(text).toMatch(/scraped/);
      expect(text).toMatch(/settled/);
      expect(text).toMatch(/when it was read/);
      expect(text).toMatch(/at the minutes it happened, with (its )?final numbers/);
      expect(text).toMatch(/remote_write/);
    }
  });

  it('narrows the account and resource variables to the job', () => {
    for (const name of ['account', 'resource']) {
      const v = d.templating.list.find((x) => x.name === name)!;
      expect(v.definition, name).toContain(JOB_MATCHER);
    }
  });

  it.each(d.panels.filter((p) => p.type !== 'row').map((p) => [p.title ?? '?', p] as const))(
    'panel %s: every settled family read on $job, or the panel says it reads the scraped job',
    (_t, p) => {
      const uses = exprs(p).flatMap(settledUses);
      expect(uses.filter((u) => !u.matchers.includes(JOB_MATCHER))).toEqual([]);
      // A panel that has no settled family on $job reads exporter-only series: it says where they come from.
      if (uses.length === 0 || exprs(p).some((e) => /cdn_metrics_|cdn_resource_info/.test(e))) {
        expect(p.description).toMatch(/[Ss]craped job/);
      }
    },
  );
});

describe.each(DASHBOARDS.map((d) => [d.uid, d] as const))('%s', (_uid, d) => {
  it('has the job variable exactly when its panels read settled families', () => {
    const reads = d.panels.some((p) => exprs(p).some((e) => settledUses(e).length > 0));
    const job = d.templating.list.find((v) => v.name === 'job');
    // The exporter dashboard's own job variable (its targets, multi-select) is another one: it reads no traffic.
    expect(reads).toBe(job?.definition === 'label_values(cdn_edge_requests_total, job)');
  });
});

it('cdn-cost: reads the recording rules, and says they are on the scraped job', () => {
  const d = DASHBOARDS.find((x) => x.uid === 'cdn-cost')!;
  expect(d.description).toMatch(/scraped job/);
  expect(d.description).toMatch(/settled series .*remote_write.* not in/);
});
