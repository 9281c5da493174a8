/**
 * Every file a source comment names exists (issue 34: comments name only files that exist). In the comments of
 * src/, test/ and bench/ (not in strings: a test may well build a path that is not there), every path that ends in
 * `.ts` or `.md` must be found from one of these places, in this order:
 *
 * 1. the folder of the file the comment is in (here: `links.test.ts`, `../helpers/markdown.ts`);
 * 2. the repository root (`docs/metrics.md`, `src/store/types.ts`, `test/helpers/stack.ts`);
 * 3. src/ (`store/types.ts`, `traffic/walker.ts`);
 * 4. for a file under test/<folder>/, the source folder it mirrors, src/<folder>/ (a test in test/store/ may name a
 *    file of src/store/ by its name alone).
 *
 * A path that leaves the repository (up from the root, to a folder beside the checkout) is never found: a fresh
 * clone has only the repository.
 *
 * A path inside a URL (`https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md`) or
 * a package name is not a path of this repository and is not read as one. There is no list of exceptions: a
 * comment that names a file elsewhere names it by its path from the root. CHANGELOG.md may name files of the past
 * and is not read.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/markdown.js';

const FOLDERS = ['src', 'test', 'bench'];
/** Not the project's code: fixtures copied verbatim. */
const SKIP = new Set(['node_modules', 'golden']);
const CODE = /\.(ts|mts|mjs|js)$/;
/**
 * A path ending in .ts or .md: segments of word characters, dots and dashes joined by `/`, maybe led by `./` or
 * `../`. Not when it continues a URL, a package name or a longer word (the character before it).
 */
const PATH = /(?<![\w@/.:\\-])((?:\.\.?\/)*[\w-][\w.-]*(?:\/[\w.-]+)*\.(?:ts|md))(?![\w/-])/g;

/** Repository paths of the code files under `dir`. */
function codeFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    if (SKIP.has(e.name)) return [];
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return codeFiles(path);
    return CODE.test(e.name) ? [path] : [];
  });
}

/** After these characters (or these words) a `/` starts a regular expression, not a division. */
const BEFORE_REGEX = new Set([...'(,=:[!&|?{};+-*%<>~^']);
const REGEX_KEYWORDS = /(?:^|[^\w$])(?:return|typeof|case|of|in|do|else|void|yield|await|delete)$/;

/**
 * The comments of a JavaScript or TypeScript text, each with the line it starts on: strings, template literals
 * (with their `${…}` nested) and regular expressions are stepped over, so a `//` or a path inside them is not a
 * comment.
 */
function commentsOf(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let line = 1;
  let i = 0;
  /** For each `${` open: the depth of braces inside it; when one closes at 0, the template goes on. */
  const templates: number[] = [];
  let last = '';
  let word = '';
  const n = text.length;
  const advance = (to: number) => {
    for (let k = i; k < to && k < n; k++) if (text[k] === '\n') line++;
    i = to;
  };
  /** Steps over a template's text from i (just past a backtick or a closing brace) to its end or its next `${`. */
  const templateText = () => {
    let k = i;
    while (k < n) {
      const c = text[k];
      if (c === '\\') k += 2;
      else if (c === '`') {
        advance(k + 1);
        return;
      } else if (c === '$' && text[k + 1] === '{') {
        advance(k + 2);
        templates.push(0);
        return;
      } else k++;
    }
    advance(n);
  };
  while (i < n) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '\n' || c === ' ' || c === '\t' || c === '\r') {
      advance(i + 1);
      continue;
    }
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      const to = end < 0 ? n : end;
      out.push({ line, text: text.slice(i, to) });
      advance(to);
      continue;
    }
    if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const to = end < 0 ? n : end + 2;
      out.push({ line, text: text.slice(i, to) });
      advance(to);
      continue;
    }
    if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < n && text[k] !== c && text[k] !== '\n') k += text[k] === '\\' ? 2 : 1;
      advance(k + 1);
      last = c;
      word = '';
      continue;
    }
    if (c === '`') {
      advance(i + 1);
      templateText();
      last = '`';
      word = '';
      continue;
    }
    if (c === '/' && (last === '' || BEFORE_REGEX.has(last) || REGEX_KEYWORDS.test(word))) {
      let k = i + 1;
      let inClass = false;
      while (k < n && text[k] !== '\n') {
        const d = text[k];
        if (d === '\\') k++;
        else if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        k++;
      }
      advance(k + 1);
      last = '/';
      word = '';
      continue;
    }
    if (templates.length > 0) {
      if (c === '{') templates[templates.length - 1]!++;
      else if (c === '}') {
        if (templates[templates.length - 1] === 0) {
          templates.pop();
          advance(i + 1);
          templateText();
          last = '`';
          word = '';
          continue;
        }
        templates[templates.length - 1]!--;
      }
    }
    word = /[\w$]/.test(c) ? (/[\w$]/.test(last) ? word + c : c) : '';
    last = c;
    advance(i + 1);
  }
  return out;
}

/** Where a comment of `file` may find `path` (see the header): the first that exists, or undefined. */
function resolve(file: string, path: string): string | undefined {
  const bases = [dirname(file), '.', 'src'];
  const mirrored = /^test\/([^/]+)\//.exec(file);
  if (mirrored) bases.push(`src/${mirrored[1]}`);
  for (const base of bases) {
    const inside = normalize(join(base, path));
    // Outside the repository (`../shared/…` from the root): not there in a fresh clone, whatever this machine has.
    if (inside.startsWith('..')) continue;
    const full = join(ROOT, inside);
    if (existsSync(full) && statSync(full).isFile()) return full;
  }
  return undefined;
}

/** `file:line: path` for every path a comment of `file` names that cannot be found. */
function missingIn(file: string, text: string): string[] {
  const missing: string[] = [];
  for (const comment of commentsOf(text)) {
    comment.text.split('\n').forEach((l, k) => {
      for (const m of l.matchAll(PATH)) {
        const path = m[1]!;
        if (resolve(file, path) === undefined) missing.push(`${file}:${comment.line + k}: ${path}`);
      }
    });
  }
  return missing;
}

describe('source comments', () => {
  it('name only files that exist', () => {
    const files = FOLDERS.flatMap((d) => codeFiles(d));
    expect(files.length).toBeGreaterThan(300);
    const missing = files.flatMap((f) => missingIn(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(missing).toEqual([]);
  });

  it('reads comments, not strings, templates or regular expressions', () => {
    const text = [
      "const a = '// not/a/comment.ts';",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal's text, as a source file holds it
      'const b = `${x} // nor/this.ts ${`inner ${y}`} tail.md`;',
      'const r = /\\/\\/ neither.ts/; // but/this-one.ts',
      '/** and src/clock.ts, and src/gone-away.ts */',
      'const d = a / 2; // after a division: gone.md',
    ].join('\n');
    expect(commentsOf(text).map((c) => `${c.line} ${c.text}`)).toEqual([
      '3 // but/this-one.ts',
      '4 /** and src/clock.ts, and src/gone-away.ts */',
      '5 // after a division: gone.md',
    ]);
    expect(missingIn('src/example.ts', text)).toEqual([
      'src/example.ts:3: but/this-one.ts',
      'src/example.ts:4: src/gone-away.ts',
      'src/example.ts:5: gone.md',
    ]);
  });

  it('finds a path from the folder, the root, src/, and the source folder a test mirrors', () => {
    expect(resolve('src/traffic/walker.ts', './revisit.ts')).toBeDefined();
    expect(resolve('src/traffic/walker.ts', '../clock.ts')).toBeDefined();
    expect(resolve('bench/store.ts', 'docs/operations.md')).toBeDefined();
    expect(resolve('test/helpers/stack.ts', 'store/types.ts')).toBeDefined();
    expect(resolve('test/store/series-store.test.ts', 'sliced-render.ts')).toBeDefined();
    expect(resolve('test/helpers/stack.ts', 'sliced-render.ts')).toBeUndefined();
    expect(resolve('src/server/app.ts', 'server/commit.ts')).toBeUndefined();
    // A file beside the checkout is not the repository's, even where this machine has it.
    expect(resolve('test/auth/metrics.test.ts', '../../../shared/design.md')).toBeUndefined();
    expect(resolve('test/auth/metrics.test.ts', '../shared/design.md')).toBeUndefined();
  });
});
