/**
 * Reading the project's Markdown as GitHub renders it: prose outside fenced code, headings and their anchors
 * (GitHub's slugs, `-1`, `-2` for repeats), tables. Shared by the tests that hold docs/ to the code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

export function readDoc(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** Lines outside fenced code blocks. */
export function proseLines(text: string): string[] {
  let fenced = false;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) out.push(line);
  }
  return out;
}

/** Fenced code blocks with their info string. */
export function codeBlocks(text: string): { lang: string; body: string }[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

/** GitHub's heading anchor: lower case, punctuation dropped (letters, digits, `_` and `-` kept), spaces to hyphens. */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor the headings of `text` give, a repeated heading numbered as GitHub does. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(text)) {
    const m = /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const slug = anchor(m[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Lines of the section under `heading` (up to the next heading of the same or a higher level). */
export function section(text: string, heading: string): string[] {
  const lines = proseLines(text);
  const start = lines.indexOf(heading);
  if (start < 0) return [];
  const level = heading.indexOf(' ');
  const end = lines.findIndex((l, i) => i > start && /^#+ /.test(l) && l.indexOf(' ') <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The table row whose first cell is `name` in backticks, split into cells. */
export function tableRow(text: string, name: string): string[] | undefined {
  const line = proseLines(text).find((l) => l.startsWith(`| \`${name}\` `));
  return line?.split(/(?<!\\)\|/).map((c) => c.trim());
}
