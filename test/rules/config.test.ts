/** examples/prometheus.yml is a valid Prometheus configuration that scrapes the exporter and loads the rules. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findTool } from '../helpers/tools.js';

const ROOT = join(import.meta.dirname, '..', '..');
const CONFIG = join(ROOT, 'examples', 'prometheus.yml');

interface PromConfig {
  global?: { scrape_interval?: string };
  rule_files?: string[];
  scrape_configs?: { job_name: string; scrape_interval?: string; static_configs?: { targets: string[] }[] }[];
}

describe('examples/prometheus.yml', () => {
  const promtool = findTool('promtool');

  it('scrapes the exporter every 30s as job cdn-exporter and loads the rule file', () => {
    const cfg = parse(readFileSync(CONFIG, 'utf8')) as PromConfig;
    const job = cfg.scrape_configs?.find((j) => j.job_name === 'cdn-exporter');
    expect(job?.static_configs?.flatMap((s) => s.targets)).toEqual(['127.0.0.1:9877']);
    expect(job?.scrape_interval ?? cfg.global?.scrape_interval).toBe('30s');
    expect(cfg.rule_files).toEqual(['../rules/cdn-exporter.rules.yml']);
  });

  it.skipIf(!promtool)('passes promtool check config (rule file included)', () => {
    let out: string;
    try {
      out = execFileSync(promtool!, ['check', 'config', CONFIG], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string };
      throw new Error(`promtool check config failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
    }
    expect(out).toContain('SUCCESS: 1 rule files found');
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
  });
});
