/**
 * Every dashboard query is valid PromQL: the expressions, with the dashboard variables replaced by typical values,
 * go into a throw-away rule file that `promtool check rules` parses.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { renderAll } from '../../grafana/dashboards-src/index.js';
import { findTool } from '../helpers/tools.js';

const SUBSTITUTES: Record<string, string> = {
  window_range: '20m',
  __rate_interval: '2m',
  __range: '6h',
  __range_s: '21600',
  __interval: '1m',
};

function substitute(expr: string): string {
  return expr.replace(/\$\{?(\w+)\}?/g, (_m, name: string) => SUBSTITUTES[name] ?? '.*');
}

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
}

const queries = renderAll().flatMap((g) => {
  const d = JSON.parse(g.text) as { panels: Panel[]; templating: { list: { definition?: string }[] } };
  const fromPanels = d.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `${g.file}: ${p.title}`, expr: t.expr ?? '' })),
  );
  const fromVariables = d.templating.list.flatMap((v) => {
    const m = /^label_values\((.*),\s*\w+\)$/.exec(v.definition ?? '');
    return m ? [{ where: `${g.file}: variable`, expr: m[1]! }] : [];
  });
  return [...fromPanels, ...fromVariables];
});

describe('dashboard queries', () => {
  const promtool = findTool('promtool');
  const dir = mkdtempSync(join(tmpdir(), 'cdn-dash-queries-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are many', () => {
    expect(queries.length).toBeGreaterThan(50);
  });

  it.skipIf(!promtool)('parse with promtool', () => {
    const rules = queries.map((q, i) => ({ record: `dashboard:query:${i}`, expr: substitute(q.expr) }));
    const file = join(dir, 'queries.rules.yml');
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard-queries', rules }] }));
    let output = '';
    try {
      output = execFileSync(promtool!, ['check', 'rules', file], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      // promtool names the failing rule by index; map it back to the panel.
      const text = `${err.stdout ?? ''}${err.stderr ?? ''}`;
      const where = [...text.matchAll(/dashboard:query:(\d+)/g)].map((m) => queries[Number(m[1])]?.where);
      throw new Error(`promtool check rules failed:\n${text}\n${where.join('\n')}`);
    }
    expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
  });
});
