/**
 * Every link into the project's documentation leads somewhere. Relative Markdown links (the README, docs/, the
 * folder indexes, the chart's README) name files that exist, and their #anchor a heading of the target. Every URL
 * of a file of this project on GitHub, wherever it is written (the rules' runbook_url, the dashboards and their
 * sources, the chart's values and copies, src/ pages and comments, docs/), and every link of the landing page,
 * names a file that exists and a heading that exists. Each alert of rules/ has its runbook section in
 * docs/alerts.md. Anchors follow GitHub's slugs (test/helpers/markdown.ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DOC_LINKS, PROJECT_URL, RUNBOOK_URL } from '../../src/server/landing.js';
import { anchors, proseLines, ROOT, readDoc } from '../helpers/markdown.js';

/** Not the project's text: installed, built, or fragments docs/_incoming holds until they are merged. */
const SKIP = new Set(['node_modules', 'dist', '.git', '_incoming']);
const TEXT = /\.(md|ts|mjs|js|json|ya?ml|tpl|txt)$/;

/** Repository paths (relative to ROOT) of the project's text files. */
function textFiles(dir = ''): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const path = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return textFiles(path);
    return TEXT.test(e.name) ? [path] : [];
  });
}

const FILES = textFiles();
const MARKDOWN = FILES.filter((f) => f.endsWith('.md'));

const headingCache = new Map<string, Set<string>>();
function headingsOf(path: string): Set<string> {
  let set = headingCache.get(path);
  if (!set) {
    set = anchors(readDoc(path));
    headingCache.set(path, set);
  }
  return set;
}

/** What is wrong with a link to repository path `path` and `anchor` (undefined: nothing). */
function problem(path: string, anchor: string | undefined): string | undefined {
  if (relative(ROOT, join(ROOT, path)).startsWith('..')) return 'outside the repository';
  if (!existsSync(join(ROOT, path))) return 'no such file';
  if (!anchor) return undefined;
  if (statSync(join(ROOT, path)).isDirectory() || !path.endsWith('.md'))
    return 'an anchor into a non-Markdown file';
  return headingsOf(path).has(anchor) ? undefined : `no heading #${anchor} in ${path}`;
}

const BLOB = `${PROJECT_URL}/blob/main/`;
const GITHUB_URL = new RegExp(
  `${BLOB.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}([^\\s"'\`)<>#]+)(?:#([\\w-]*))?`,
  'g',
);

/** A URL of one of this project's files on GitHub, as [path, anchor]. */
function repoPath(url: string): [string, string | undefined] | undefined {
  if (!url.startsWith(BLOB)) return undefined;
  const [path, anchor] = url.slice(BLOB.length).split('#');
  return [path!, anchor || undefined];
}

describe('relative links in Markdown', () => {
  it('finds the pages it checks', () => {
    expect(MARKDOWN).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/configuration.md',
        'docs/alerts.md',
        'src/config/README.md',
      ]),
    );
  });

  it.each(MARKDOWN)('%s: every relative link names a file, every #anchor a heading', (file) => {
    const broken: string[] = [];
    for (const line of proseLines(readDoc(file))) {
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [path, anchor] = target.split('#');
        const resolved = path ? normalize(join(dirname(file), path)) : file;
        const why = problem(resolved, anchor || undefined);
        if (why) broken.push(`${target}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("URLs of the project's files on GitHub", () => {
  const found = FILES.flatMap((file) =>
    [...readDoc(file).matchAll(GITHUB_URL)].map((m) => ({ file, path: m[1]!, anchor: m[2] || undefined })),
  );

  it('finds the runbook links of the rules and the chart', () => {
    const files = new Set(found.map((f) => f.file));
    for (const f of ['rules/cdn-exporter.rules.yml', 'helm/cdn-exporter/values.yaml'])
      expect(files).toContain(f);
  });

  it('each names a file that exists, and a heading that exists', () => {
    const broken = found
      .map((f) => ({ ...f, why: problem(f.path, f.anchor) }))
      .filter((f) => f.why)
      .map((f) => `${f.file}: ${f.path}${f.anchor ? `#${f.anchor}` : ''}: ${f.why}`);
    expect(broken).toEqual([]);
  });

  it.each(Object.entries(DOC_LINKS))(
    "the landing page's %s link leads to a heading that exists",
    (_, url) => {
      const target = repoPath(url);
      expect(target, url).toBeDefined();
      expect(problem(...target!)).toBeUndefined();
    },
  );
});

describe('the runbook', () => {
  const rules = parse(readDoc('rules/cdn-exporter.rules.yml')) as {
    groups: { rules: { alert?: string }[] }[];
  };
  const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert);

  it('is docs/alerts.md', () => {
    expect(repoPath(RUNBOOK_URL)).toEqual(['docs/alerts.md', undefined]);
    expect(alerts.length).toBeGreaterThan(10);
  });

  // The rules' runbook_url is RUNBOOK_URL#<the name in lower case> (test/rules), the chart's prefix + the same.
  it.each(alerts.map((a) => a.alert!))('has a section for %s', (name) => {
    expect(
      headingsOf('docs/alerts.md').has(name.toLowerCase()),
      `docs/alerts.md has no heading "${name}"`,
    ).toBe(true);
  });
});
