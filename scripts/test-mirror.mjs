#!/usr/bin/env node
/**
 * How far test/ mirrors src/ file by file: for each logic module src/x/y.ts, is there a test of its name at the
 * mirrored path, test/x/y.test.ts (or test/x/y.<kind>.test.ts, such as y.property.test.ts)?
 *
 * Not counted as logic modules: files whose top-level statements are only types, interfaces and imports (pure type
 * files), and index.ts files that only re-export.
 *
 *   node scripts/test-mirror.mjs            # the figures
 *   node scripts/test-mirror.mjs --missing  # and the logic modules without a test of their name, one a line
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function walk(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The file's top-level statements, comments removed: each line that starts at column 0. */
function topLevel(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return code.split('\n').filter((line) => /^\S/.test(line) && !/^[}\])]/.test(line));
}

/** Only types and imports at the top: nothing runs. */
function typeOnly(text) {
  return topLevel(text).every((line) =>
    /^(import\b|export\s+(type|interface)\b|type\b|interface\b)/.test(line),
  );
}

/** Only re-exports (and types) at the top. */
function reExportOnly(text) {
  return topLevel(text).every((line) =>
    /^(import\b|export\s+(type|interface)\b|type\b|interface\b|export\s*(type\s*)?\{|export\s*\*)/.test(line),
  );
}

function testsOf(srcFile) {
  const rel = relative(join(root, 'src'), srcFile);
  const dir = join(root, 'test', dirname(rel));
  const name = basename(rel, '.ts');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter(
    (f) =>
      f === `${name}.test.ts` ||
      (f.startsWith(`${name}.`) && f.endsWith('.test.ts') && f.split('.').length === 4),
  );
}

const files = walk(join(root, 'src')).sort();
const skipped = { types: 0, reExports: 0 };
const logic = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  if (basename(file) === 'index.ts' && reExportOnly(text)) skipped.reExports++;
  else if (typeOnly(text)) skipped.types++;
  else logic.push(file);
}
const missing = logic.filter((f) => testsOf(f).length === 0);

console.log(`src .ts files: ${files.length}`);
console.log(`not logic modules: ${skipped.types} type-only, ${skipped.reExports} index re-exports`);
console.log(`logic modules: ${logic.length}`);
console.log(`with a test of their name at the mirrored path: ${logic.length - missing.length}`);
console.log(`without: ${missing.length}`);
if (process.argv.includes('--missing')) {
  for (const f of missing) console.log(`  ${relative(root, f)}`);
}
