/**
 * The import graph of src/ runs one way: each folder (or top-level file) sits in a layer, and imports only from its
 * own layer or the layers below; no two folders import each other, directly or around a circle. A new folder is
 * added to LAYERS where it belongs; one left out fails the first test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../src');

/** From the bottom up. A top-level file of src/ is named with its `.ts`. */
const LAYERS: readonly (readonly string[])[] = [
  // What every layer may read: the APIs' names, time, logging, secrets, atomic writes, the shard split.
  [
    'api',
    'clock.ts',
    'log.ts',
    'redact.ts',
    'atomic-file.ts',
    'sharding.ts',
    'memory-tuning.ts',
    'node-floor.ts',
  ],
  ['http', 'config'],
  ['poll', 'store'],
  // The state file and what is saved in it: below traffic/ and exporter/, which both use it.
  ['state-file'],
  ['traffic', 'dvr', 'recordings', 'discovery', 'auth', 'offloop', 'server', 'remote-write', 'simulator'],
  ['settled'],
  ['exporter', 'backfill', 'web'],
  ['cli.ts', 'commands.ts', 'main.ts', 'demo.ts'],
];

/**
 * Edges that close a circle between two folders today, each with the file that makes it. Remove an entry when its
 * circle is gone (the test says so); never add one.
 */
const KNOWN_CIRCLES: readonly string[] = ['backfill/command.ts -> exporter/upstreams.ts'];

const layerOf = new Map<string, number>();
LAYERS.forEach((names, i) => {
  for (const n of names) layerOf.set(n, i);
});

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** The folder of a file under src/, or the file's own name at the top. */
function unitOf(file: string): string {
  return relative(SRC, file).split('/')[0]!;
}

/** Every relative import and re-export of a file (static and dynamic), as the files they name. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'/gms),
    ...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g),
  ].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

const FILES = sourceFiles();
const EDGES = FILES.flatMap((from) =>
  importsOf(from)
    .filter((to) => unitOf(from) !== unitOf(to))
    .map((to) => ({ from, to, a: unitOf(from), b: unitOf(to) })),
);
const label = (e: { from: string; to: string }) => `${relative(SRC, e.from)} -> ${relative(SRC, e.to)}`;

describe('import graph of src/', () => {
  it('has every folder and top-level file in a layer', () => {
    const units = [...new Set(FILES.map(unitOf))].sort();
    expect(units.filter((u) => !layerOf.has(u))).toEqual([]);
  });

  it('imports only from the same layer or below', () => {
    const upward = EDGES.filter((e) => layerOf.get(e.b)! > layerOf.get(e.a)!).map(label);
    expect(upward.filter((e) => !KNOWN_CIRCLES.includes(e))).toEqual([]);
  });

  it('has no circle between folders but the known ones, and each known one is still there', () => {
    const out = new Map<string, Set<string>>();
    for (const e of EDGES) {
      if (KNOWN_CIRCLES.includes(label(e))) continue;
      if (!out.has(e.a)) out.set(e.a, new Set());
      out.get(e.a)!.add(e.b);
    }
    const reaches = (from: string, to: string): boolean => {
      const seen = new Set<string>();
      const todo = [from];
      while (todo.length > 0) {
        const u = todo.pop()!;
        if (u === to) return true;
        if (seen.has(u)) continue;
        seen.add(u);
        todo.push(...(out.get(u) ?? []));
      }
      return false;
    };
    const circles = EDGES.filter((e) => !KNOWN_CIRCLES.includes(label(e)) && reaches(e.b, e.a)).map(label);
    expect(circles).toEqual([]);
    const stillThere = EDGES.map(label).filter((l) => KNOWN_CIRCLES.includes(l));
    expect(stillThere.sort()).toEqual([...KNOWN_CIRCLES].sort());
  });

  it('keeps the state file below the traffic pipeline and the composition', () => {
    const up = EDGES.filter((e) => e.a === 'state-file' && ['traffic', 'exporter'].includes(e.b)).map(label);
    expect(up).toEqual([]);
  });
});
