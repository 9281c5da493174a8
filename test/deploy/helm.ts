/**
 * The real Helm for the chart tests: Helm 4 (`HELM_BIN`) and Helm 3 (`HELM3_BIN`), which .ci/run fetches with
 * .ci/fetch-helm.sh. Locally a missing one is skipped with one line (test/helpers/tools.ts); under
 * REQUIRE_TOOLS=1 it is a failure. A binary of the wrong major is always a failure: the tests would otherwise
 * check one Helm twice and believe they checked both.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { findTool } from '../helpers/tools.js';
import { CHART, type Layer, type Release, ROOT } from './chart-helpers.js';

export interface Helm {
  bin: string;
  major: 3 | 4;
  /** `helm version`'s version, e.g. v4.1.4. */
  version: string;
}

export interface HelmRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm with `args` to its end (60 s at the most). */
export function runHelm(bin: string, args: string[]): HelmRun {
  const run = spawnSync(bin, args, {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 * 1024 * 1024,
    // No cluster is asked for anything, whatever kubeconfig the developer's shell names.
    env: { ...process.env, KUBECONFIG: '/dev/null' },
  });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function helmOf(tool: 'helm' | 'helm3', major: 3 | 4): Helm | undefined {
  const bin = findTool(tool);
  if (!bin) return undefined;
  const version = runHelm(bin, ['version', '--template', '{{.Version}}']).stdout.trim();
  if (!version.startsWith(`v${major}.`)) {
    throw new Error(
      `${bin} is Helm ${version}, not Helm ${major}: set ${tool === 'helm' ? 'HELM_BIN' : 'HELM3_BIN'} to a Helm ${major}`,
    );
  }
  return { bin, major, version };
}

let found: Helm[] | undefined;
/** The Helms at hand, Helm 4 first; each missing one printed one skip line (once per test file). */
export function findHelms(): Helm[] {
  found ??= [helmOf('helm', 4), helmOf('helm3', 3)].filter((h): h is Helm => h !== undefined);
  return found;
}

/** Runs `helm <command> ... -f layer...` with the layers as files; `args` come before the `-f`s. */
export function helmWithValues(bin: string, args: string[], layers: Layer[]): HelmRun {
  const dir = mkdtempSync(join(tmpdir(), 'cdn-exporter-values-'));
  try {
    const files = layers.map((layer, i) => {
      if (typeof layer === 'string') return join(ROOT, layer);
      const file = join(dir, `values-${i}.json`);
      writeFileSync(file, JSON.stringify(layer));
      return file;
    });
    return runHelm(bin, [...args, ...files.flatMap((f) => ['-f', f])]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One document of `helm template`, with the template it came from (`templates/service.yaml`). */
export interface Rendered {
  source: string;
  doc: Record<string, unknown>;
}

/** Splits `helm template`'s output into its documents, by their `# Source:` comments. */
export function parseRendered(text: string): Rendered[] {
  const out: Rendered[] = [];
  for (const chunk of text.split(/^---\s*$/m)) {
    const source = /^# Source: [^/]+\/(.+)$/m.exec(chunk)?.[1];
    const doc = parse(chunk) as unknown;
    if (doc === null || doc === undefined) continue;
    if (!source) throw new Error(`a document without its # Source: line:\n${chunk.slice(0, 200)}`);
    out.push({ source, doc: doc as Record<string, unknown> });
  }
  return out;
}

/**
 * `helm template RELEASE helm/cdn-exporter -n NAMESPACE -f ...`: the rendered documents, or an Error with what
 * Helm printed (a template's `fail` message, a schema error).
 */
export function helmTemplate(
  bin: string,
  layers: Layer[],
  release: Release,
  extraArgs: string[] = [],
): Rendered[] {
  const run = helmWithValues(
    bin,
    ['template', release.name, CHART, '--namespace', release.namespace, ...extraArgs],
    layers,
  );
  if (run.status !== 0) throw new Error(`helm template failed (${run.status}): ${run.stderr.trim()}`);
  return parseRendered(run.stdout);
}

/** The one document `file` (`servicemonitor.yaml`) renders, or undefined when it renders none. */
export function renderManifest(
  bin: string,
  file: string,
  layers: Layer[],
  release: Release,
): Record<string, unknown> | undefined {
  const docs = helmTemplate(bin, layers, release).filter((r) => r.source === `templates/${file}`);
  if (docs.length > 1) throw new Error(`${file} rendered ${docs.length} documents`);
  return docs[0]?.doc;
}

/**
 * The NOTES Helm 4 prints after `helm install --dry-run=client` (no cluster is asked). Helm 3.17's install asks
 * the cluster for its version even then, so this needs Helm 4.
 */
export function helmNotes(helm: Helm, layers: Layer[], release: Release): string {
  if (helm.major !== 4) throw new Error('helmNotes needs Helm 4 (Helm 3 install --dry-run asks a cluster)');
  const run = helmWithValues(
    helm.bin,
    ['install', release.name, CHART, '--namespace', release.namespace, '--dry-run=client'],
    layers,
  );
  if (run.status !== 0) throw new Error(`helm install --dry-run=client failed: ${run.stderr.trim()}`);
  const at = run.stdout.indexOf('\nNOTES:\n');
  if (at < 0) throw new Error(`no NOTES in:\n${run.stdout.slice(0, 500)}`);
  return run.stdout.slice(at + '\nNOTES:\n'.length);
}
