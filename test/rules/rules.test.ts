/**
 * rules/cdn-exporter.rules.yml: promtool accepts it, its unit tests (rules/tests/*.yml) pass, every alert has a
 * test where it fires and one where it stays silent, and every alert keeps the project's conventions (severity,
 * summary, description with label values, runbook link into docs/alerts.md (test/docs/links.test.ts checks that
 * its heading exists), catalogue names, no range below two windows over window-stepped counters).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { RUNBOOK_URL } from '../../src/server/landing.js';
import { labelsOf, MIN_WINDOW_RANGE_SECONDS, WINDOW_STEPPED } from '../helpers/metric-catalogue.js';
import { durationSeconds, ranges, selectors } from '../helpers/promql.js';
import { findTool } from '../helpers/tools.js';

const ROOT = join(import.meta.dirname, '..', '..');
const RULES = join(ROOT, 'rules', 'cdn-exporter.rules.yml');
const TESTS_DIR = join(ROOT, 'rules', 'tests');
const TEST_FILES = readdirSync(TESTS_DIR)
  .filter((f) => f.endsWith('.yml'))
  .map((f) => join(TESTS_DIR, f));
const RUNBOOK_BASE = `${RUNBOOK_URL}#`;

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: (AlertRule | { record: string; expr: string })[] }[];
}
interface TestFile {
  tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
}

const ruleFile = parse(readFileSync(RULES, 'utf8')) as RuleFile;
const alerts = ruleFile.groups.flatMap((g) => g.rules).filter((r): r is AlertRule => 'alert' in r);

function run(tool: string, args: string[]): string {
  try {
    return execFileSync(tool, args, { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    throw new Error(`${tool} ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

describe('promtool', () => {
  const promtool = findTool('promtool');

  it.skipIf(!promtool)('check rules accepts the rule file', () => {
    const rules = ruleFile.groups.flatMap((g) => g.rules).length;
    expect(run(promtool!, ['check', 'rules', RULES])).toContain(`SUCCESS: ${rules} rules found`);
  });

  it.skipIf(!promtool)(
    'test rules passes every unit test file',
    () => {
      expect(TEST_FILES.length).toBeGreaterThan(0);
      const out = run(promtool!, ['test', 'rules', ...TEST_FILES]);
      expect(out).not.toContain('FAILED');
      expect(out.match(/SUCCESS/g)?.length).toBe(TEST_FILES.length);
      // promtool evaluates every group at each test's evaluation_interval, the month-long cost rules included (every
      // 5 minutes in Prometheus, every minute here): about half a minute of CPU in all, more on a busy machine.
    },
    180_000,
  );
});

describe('unit test coverage', () => {
  const cases = TEST_FILES.flatMap((f) =>
    (parse(readFileSync(f, 'utf8')) as TestFile).tests.flatMap((t) => t.alert_rule_test ?? []),
  );

  it.each(alerts.map((a) => [a.alert] as const))('%s has a firing case and a silent case', (name) => {
    const mine = cases.filter((c) => c.alertname === name);
    expect(
      mine.some((c) => (c.exp_alerts ?? []).length > 0),
      'no case where it fires',
    ).toBe(true);
    expect(
      mine.some((c) => (c.exp_alerts ?? []).length === 0),
      'no case where it stays silent',
    ).toBe(true);
  });

  it('tests only alerts that exist', () => {
    const names = new Set(alerts.map((a) => a.alert));
    expect(cases.map((c) => c.alertname).filter((n) => !names.has(n))).toEqual([]);
  });
});

describe('alert conventions', () => {
  it('has unique alert names', () => {
    expect(new Set(alerts.map((a) => a.alert)).size).toBe(alerts.length);
  });

  it.each(alerts.map((a) => [a.alert, a] as const))('%s', (name, a) => {
    expect(['critical', 'warning', 'info']).toContain(a.labels?.severity);
    expect(a.annotations?.summary).toMatch(/\S/);
    // Absent-type alerts have no series, hence no labels to show.
    if (!a.expr.includes('absent(')) expect(a.annotations?.description).toMatch(/\{\{ \$labels\.\w+ \}\}/);
    expect(a.annotations?.runbook_url).toBe(`${RUNBOOK_BASE}${name.toLowerCase()}`);

    const problems: string[] = [];
    for (const s of selectors(a.expr)) {
      const labels = labelsOf(s.name);
      if (!labels) problems.push(`${s.name} is not in the metric catalogue`);
      else for (const l of s.labels) if (!labels.includes(l)) problems.push(`${s.name} has no label ${l}`);
    }
    for (const r of ranges(a.expr)) {
      if (r.step && durationSeconds(r.step) === undefined)
        problems.push(`unexpected subquery step [:${r.step}]`);
      const seconds = durationSeconds(r.range.split(' ')[0]!);
      if (seconds === undefined) problems.push(`unexpected range [${r.range}]`);
      else if (WINDOW_STEPPED.has(r.metric) && seconds < MIN_WINDOW_RANGE_SECONDS) {
        problems.push(`[${r.range}] over ${r.metric}, which steps once per window`);
      }
    }
    expect(problems).toEqual([]);
  });
});
