/**
 * The README and the docs/ pages against the code they document: the README's two opening commands; in
 * docs/metrics.md every metric family the exporter can expose (with its type and labels); in docs/configuration.md
 * every configuration key with its default, flag, command and environment variable; in docs/operations.md every
 * dashboard panel; anywhere, no metric name, npm script or repository path that does not exist, and no example
 * configuration the loader refuses. The names come from the code (the family factories, the self metrics,
 * check-config's output, usage()), not from a list kept here. Links and anchors: links.test.ts.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createAuthMetrics } from '../../src/auth/metrics.js';
import { COMMANDS, checkConfigReport, loadConfig, usage } from '../../src/config/index.js';
import { createDvrFamilies } from '../../src/dvr/metrics.js';
import { createRecordingFamilies } from '../../src/recordings/metrics.js';
import { createRemoteWriteMetrics } from '../../src/remote-write/metrics.js';
import { CommitMetrics } from '../../src/server/commit-metrics.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { createSettledMetrics } from '../../src/settled/metrics.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Family } from '../../src/store/types.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { codeBlocks, proseLines, ROOT, readDoc, section, tableRow } from '../helpers/markdown.js';

const README = readDoc('README.md');
const METRICS = readDoc('docs/metrics.md');
const CONFIGURATION = readDoc('docs/configuration.md');
const OPERATIONS = readDoc('docs/operations.md');
/** Every page a user reads: the README and docs/ (docs/_incoming holds fragments not yet merged). */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].map((path) => ({ path, text: readDoc(path) }));

/** Names of the first catalogue, replaced by base units; the docs may name them only as "was ...". */
const RENAMED = ['cdn_metrics_skipped_minutes_total', 'cdn_recording_storage_days'];

interface FamilyDoc {
  name: string;
  type: string;
  labels: readonly string[];
}

/** Every Family object reachable from a factory's result (they nest: edge.window.requests, ...). */
function familiesIn(value: unknown, out: Family[] = []): Family[] {
  if (value === null || typeof value !== 'object') return out;
  if ('spec' in value && typeof (value as Family).slot === 'function') {
    out.push(value as Family);
    return out;
  }
  for (const v of Object.values(value)) familiesIn(v, out);
  return out;
}

/** Every family the exporter can expose: the store's with every option on, and the self metrics. */
function exposedFamilies(): FamilyDoc[] {
  const store = new SeriesStore();
  const built = [
    createTrafficFamilies(store, { breakdown: 'resource', windowGauges: true, revisit: true }),
    createDvrFamilies(store),
    createRecordingFamilies(store),
  ];
  const out: FamilyDoc[] = familiesIn(built).map((f) => ({
    name: f.spec.name,
    type: f.spec.type,
    labels: f.spec.labelNames,
  }));
  const registry = new Registry();
  createSelfMetrics(registry, { version: 'test', defaultMetrics: false });
  createAuthMetrics(registry);
  createRemoteWriteMetrics(registry);
  createSettledMetrics(registry);
  // Registered on first use: an account with both kinds of commit makes both families.
  new CommitMetrics(registry).set('x', { monthlyTransferBytes: 1, bandwidthP95BitsPerSecond: 1 });
  for (const m of registry.getMetricsAsArray()) {
    const metric = m as unknown as { name: string; type: string; labelNames?: readonly string[] };
    out.push({ name: metric.name, type: metric.type, labels: metric.labelNames ?? [] });
  }
  return out;
}

describe('README opening', () => {
  it('opens with the demo and the test commands, in that order, as its first code block', () => {
    const first = codeBlocks(README)[0]!;
    expect(first.body.trim().split('\n')).toEqual(['npm ci && npm run demo', 'npm ci && npm test']);
    expect(README.indexOf('```')).toBeLessThan(README.indexOf('\n## '));
  });

  it('says where the demo listens, and that is the default listen address', () => {
    const intro = README.slice(0, README.indexOf('\n## '));
    expect(intro).toContain('http://localhost:9877/');
    expect(intro).toContain('/metrics');
    expect(usage()).toContain('(default :9877)');
  });
});

describe('metric reference (docs/metrics.md)', () => {
  const families = exposedFamilies();

  it('finds the families it checks (the factories and the registry)', () => {
    // A guard against a walker that finds nothing and so passes everything below.
    expect(families.length).toBeGreaterThan(50);
    expect(families.map((f) => f.name)).toEqual(
      expect.arrayContaining(['cdn_up', 'cdn_edge_responses_total', 'cdn_dvr_coverage_ratio']),
    );
  });

  it('has a table row for every family, with its type and every label', () => {
    const problems: string[] = [];
    for (const f of families) {
      const cells = tableRow(METRICS, f.name);
      if (!cells) {
        problems.push(`${f.name}: no row`);
        continue;
      }
      if (!cells.includes(f.type)) problems.push(`${f.name}: type is ${f.type}, row says ${cells[2]}`);
      const labelCell = cells[3]!.split(',').map((s) => s.trim());
      for (const l of f.labels) if (!labelCell.includes(l)) problems.push(`${f.name}: label ${l} missing`);
      for (const l of labelCell)
        if (l !== '' && !f.labels.includes(l)) problems.push(`${f.name}: no label ${l}`);
    }
    expect(problems).toEqual([]);
  });

  it.each(PAGES)(
    '$path names no cdn_ family that does not exist (the renamed ones only as "was")',
    ({ text }) => {
      const known = new Set(families.map((f) => f.name));
      const histograms = families.filter((f) => f.type === 'histogram').map((f) => f.name);
      // OpenMetrics' start sample of a counter (`cdn_edge_requests_created`), named without `_total`.
      const created = new Set(
        families.filter((f) => f.type === 'counter').map((f) => `${f.name.replace(/_total$/, '')}_created`),
      );
      const unknown = new Set<string>();
      for (const line of text.split('\n')) {
        // A recording rule's name (`cdn_resource:edge_...`) is a level, not a family: not followed by `:`.
        for (const m of line.matchAll(/\bcdn_[a-z0-9_]+(?![a-z0-9_:])/g)) {
          const name = m[0];
          if (name.endsWith('_')) continue; // a pattern such as cdn_origin_* or cdn_*_window_*
          if (created.has(name)) continue;
          if (known.has(name)) continue;
          if (histograms.some((h) => [`${h}_bucket`, `${h}_sum`, `${h}_count`].includes(name))) continue;
          if (RENAMED.includes(name) && line.includes(`was \`${name}\``)) continue;
          unknown.add(name);
        }
      }
      expect([...unknown]).toEqual([]);
    },
  );

  it('states both renames to base units and the added window gauge', () => {
    for (const old of RENAMED) expect(METRICS).toContain(`was \`${old}\``);
    expect(METRICS).toMatch(/one was added,\s+\*\*`cdn_metrics_window_seconds`\*\*/);
  });
});

describe('configuration reference (docs/configuration.md)', () => {
  /** Dotted keys of check-config's output (arrays as `[]`), for a file with inline tokens and one with files. */
  function printedKeys(): Set<string> {
    const files = [
      {
        api: { base_url: 'https://cdn.example', token: 'a' },
        accounts: [{ name: 'x', token: 'b', dvr_streams: ['s'], recordings: true }],
        state_file: '/tmp/state.json',
      },
      {
        api: { base_url: 'https://cdn.example', token_file: '/run/t' },
        accounts: [{ name: 'x', token_file: '/run/u' }],
      },
      {
        api: { base_url: 'https://cdn.example', username: 'u', password_file: '/run/p' },
        accounts: [
          { name: 'x', username: 'v', password: 'w' },
          { name: 'y', username: 'v', password_file: '/run/q' },
        ],
      },
      {
        api: { base_url: 'https://cdn.example', username: 'u', password: 'p' },
        accounts: [{ name: 'x' }],
        accounts_discovery: {
          enabled: true,
          exclude: 'test-.*',
          commit: { monthly_transfer: '1PB', bandwidth_p95: '1Gbps' },
        },
      },
      {
        api: { base_url: 'https://cdn.example', token: 'a' },
        accounts: [{ name: 'x', commit: { monthly_transfer: '50TB', bandwidth_p95: '2Gbps' } }],
      },
      {
        api: { base_url: 'https://cdn.example', token: 'a' },
        accounts: [{ name: 'x' }],
        state_file: '/tmp/state.json',
        remote_write: {
          url: 'https://mimir.example/api/v1/push',
          basic_auth: { username: 'u', password: 'p' },
          tls: { ca_file: '/c', cert_file: '/c', key_file: '/k', server_name: 's' },
        },
      },
      {
        api: { base_url: 'https://cdn.example', token: 'a' },
        accounts: [{ name: 'x' }],
        state_file: '/tmp/state.json',
        remote_write: { url: 'https://mimir.example/api/v1/push', bearer_token_file: '/b' },
      },
      {
        api: { base_url: 'https://cdn.example', token: 'a' },
        accounts: [{ name: 'x' }],
        state_file: '/tmp/state.json',
        remote_write: {
          url: 'https://mimir.example/api/v1/push',
          basic_auth: { username: 'u', password_file: '/p' },
        },
      },
    ];
    const keys = new Set<string>();
    const walk = (v: unknown, path: string) => {
      if (Array.isArray(v)) {
        keys.add(path);
        for (const item of v) if (item !== null && typeof item === 'object') walk(item, `${path}[]`);
        return;
      }
      // Mappings of the user's own names (labels, headers) are one key each.
      if (v !== null && typeof v === 'object' && !/^remote_write\.(external_labels|headers)$/.test(path)) {
        for (const [k, child] of Object.entries(v)) walk(child, path ? `${path}.${k}` : k);
        return;
      }
      keys.add(path);
    };
    for (const file of files) {
      const text = JSON.stringify(file);
      const config = loadConfig({ file: 'c.yml', env: {}, readFile: () => text });
      walk(parse(checkConfigReport(config)), '');
    }
    return keys;
  }

  const documented = section(CONFIGURATION, '## Keys')
    .filter((l) => l.startsWith('| `'))
    .map((l) => /^\| `([^`]+)`/.exec(l)![1]!);

  it('documents every key check-config prints, and only those', () => {
    const keys = printedKeys();
    expect(keys.size).toBeGreaterThan(20);
    expect([...keys].filter((k) => !documented.includes(k))).toEqual([]);
    expect(documented.filter((k) => !keys.has(k))).toEqual([]);
  });

  it('gives the defaults check-config prints for an empty configuration', () => {
    const text = JSON.stringify({
      api: { base_url: 'https://cdn.example', token: 'a' },
      accounts: [{ name: 'x' }],
    });
    const printed = parse(
      checkConfigReport(loadConfig({ file: 'c.yml', env: {}, readFile: () => text })),
    ) as Record<string, Record<string, unknown>>;
    const problems: string[] = [];
    for (const [sectionName, values] of Object.entries(printed)) {
      if (sectionName === 'accounts' || typeof values !== 'object') continue;
      // One level of nesting (`server.auth_failure_limit.burst`) is a key of its own in the table.
      const leaves = Object.entries(values).flatMap(([key, value]) =>
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? Object.entries(value).map(([k, v]) => [`${key}.${k}`, v] as const)
          : [[key, value] as const],
      );
      for (const [key, value] of leaves) {
        if (key === 'base_url' || key === 'token') continue;
        const cells = tableRow(CONFIGURATION, `${sectionName}.${key}`);
        const shown = Array.isArray(value) ? '`[]`' : `\`${String(value)}\``;
        if (!cells?.[3]?.startsWith(shown))
          problems.push(`${sectionName}.${key}: default ${shown}, row says ${cells?.[3]}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('shows example configurations (README, docs/) that the real loader accepts', () => {
    const examples = PAGES.flatMap(({ text }) => codeBlocks(text)).filter(
      (b) => b.lang === 'yaml' && /^(#.*\n)*api:/m.test(b.body),
    );
    expect(examples.length).toBeGreaterThan(0);
    for (const { body } of examples) {
      expect(() => loadConfig({ file: 'example.yml', env: {}, readFile: () => body })).not.toThrow();
    }
  });

  it('documents every flag and command of the command line', () => {
    const flags = [...usage().matchAll(/(--[a-z][a-z.-]+)/g)].map((m) => m[1]!);
    expect(flags.length).toBeGreaterThan(4);
    const flagRows = section(CONFIGURATION, '## Flags').join('\n');
    expect(flags.filter((f) => !flagRows.includes(`\`${f}`))).toEqual([]);
    expect(COMMANDS.filter((c) => !flagRows.includes(`| \`${c}\``))).toEqual([]);
  });

  it('documents every environment variable usage() names', () => {
    const text = usage().slice(usage().indexOf('Environment:'));
    const names = [...text.matchAll(/\b([A-Z][A-Z_]{3,})\b/g)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(['CDN_API_URL', 'SHARD']));
    const env = section(CONFIGURATION, '## Environment').join('\n');
    expect([...new Set(names)].filter((n) => !env.includes(`| \`${n}\``))).toEqual([]);
  });
});

describe('commands and paths, in the README and docs/', () => {
  it('every npm script they run exists', () => {
    const scripts = (JSON.parse(readDoc('package.json')) as { scripts: Record<string, string> }).scripts;
    const used = PAGES.flatMap(({ text }) => [...text.matchAll(/npm run ([a-z:]+)/g)].map((m) => m[1]!));
    expect(used.length).toBeGreaterThan(3);
    expect(used.filter((s) => !(s in scripts))).toEqual([]);
  });

  it.each(PAGES)('every repository path $path names in backticks exists', ({ text }) => {
    const paths = new Set<string>();
    for (const line of proseLines(text)) {
      for (const m of line.matchAll(
        /`((?:src|test|docs|rules|grafana|helm|deploy|examples|scripts|bench|\.ci)\/[^`*\s:]*)`/g,
      )) {
        paths.add(m[1]!);
      }
    }
    // Globs (rules/tests/*.yml) do not match the pattern above; folders end in / and exist as such.
    expect([...paths].filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});

/**
 * The panel names of a docs/operations.md row, expanded: `A, B` and `A / B` are two panels; `X / by Y` is `X` and X's words
 * up to its last "by" followed by Y; `Name (edge, origin)` is `Edge name` and `Origin name`.
 */
function panelNames(cell: string): string[] {
  const sides = /^(.+) \(edge, origin\)$/.exec(cell.trim());
  if (sides) {
    const rest = sides[1]!.charAt(0).toLowerCase() + sides[1]!.slice(1);
    return [`Edge ${rest}`, `Origin ${rest}`];
  }
  return cell.split(',').flatMap((part) => {
    const [first, ...others] = part.split(' / ').map((t) => t.trim());
    return [
      first!,
      ...others.map((o) => (o.startsWith('by ') ? `${first!.slice(0, first!.lastIndexOf(' by '))} ${o}` : o)),
    ];
  });
}

describe('dashboard sections (docs/operations.md)', () => {
  const files = ['cdn-traffic', 'cdn-dvr', 'cdn-recordings', 'cdn-exporter'];

  it.each(files)('%s: the table names exactly the panels the dashboard has', (uid) => {
    const dash = JSON.parse(readDoc(`grafana/dashboards/${uid}.json`)) as {
      title: string;
      panels: Array<{ type: string; title: string }>;
    };
    const heading = `### ${dash.title} (\`${uid}\`)`;
    const table = section(OPERATIONS, heading)
      .join('\n')
      .split('\n\n')
      .map((block) => block.trim())
      .find((block) => block.startsWith('|'));
    expect(table, `a panel table under ${heading}`).toBeDefined();
    const documented = table!
      .split('\n')
      .slice(2)
      .flatMap((row) => panelNames(row.split('|')[1]!));
    const panels = dash.panels.filter((p) => p.type !== 'row').map((p) => p.title);
    expect([...documented].sort()).toEqual([...panels].sort());
  });
});
