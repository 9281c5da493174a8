/**
 * Where a process's resident memory is, from /proc/PID/smaps (Linux), grouped by kind of mapping: V8 heap pages
 * are 256 KiB anonymous mappings, glibc's main arena is `[heap]`, a thread's malloc arena a mapping of up to
 * 64 MiB, big ArrayBuffers their own larger mappings, code and data of files `file`. Elsewhere: an empty string.
 */
import { readFileSync } from 'node:fs';

const KB = 1024;

function kindOf(name: string, bytes: number): string {
  if (name.startsWith('/')) return 'file';
  if (name !== '') return name;
  if (bytes <= 256 * KB) return 'anon<=256K';
  if (bytes <= 1024 * KB) return 'anon<=1M';
  if (bytes <= 64 * KB * KB) return 'anon<=64M';
  return 'anon>64M';
}

/** `kind=MB` pairs, biggest first, for kinds of at least 1 MB resident. */
export function smapsGroups(pid: number): string {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return '';
  }
  const mb = new Map<string, number>();
  let kind = '';
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      kind = kindOf(head[3]!, Number.parseInt(head[2]!, 16) - Number.parseInt(head[1]!, 16));
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) mb.set(kind, (mb.get(kind) ?? 0) + Number(rss[1]) / KB);
  }
  return [...mb]
    .filter(([, v]) => v >= 1)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k}=${v.toFixed(0)}`)
    .join(' ');
}
