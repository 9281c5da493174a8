/**
 * The `--output FILE.om` of a backfill: OpenMetrics text with timestamps, for `promtool tsdb
 * create-blocks-from openmetrics` (docs/backfill.md).
 *
 * OpenMetrics wants a family's samples together, under one `# TYPE` line (a counter family named without its
 * `_total`), each series' samples in time order, and `# EOF` at the end. A backfill reads accounts side by side and
 * windows in time order, so lines are spooled per family and account into part files (FILE.om.parts/, appended in
 * window order: each series' samples in time order), and the final file is assembled only at the end: families by
 * name, each family's parts by account in configuration order. Memory holds what was read since the last write of
 * the parts, not the range; the order of the file does not depend on how the accounts' reads interleaved, so an
 * interrupted and resumed backfill writes the same bytes as one that ran through.
 *
 * Resume: the progress file (./progress-file.ts) holds the size each part had when the progress was saved; parts
 * are cut back to it, so lines written after it (their windows are read again) are not written twice.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, truncate, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { SettledSeries } from '../settled/running-totals.js';

/** A counter's samples are named `<family>_total` (the exporter names every counter so, and nothing else). */
const TOTAL = '_total';

/** `# TYPE` of a sample name: the family and its type. */
export function familyOf(name: string): { family: string; type: 'counter' | 'gauge' } {
  return name.endsWith(TOTAL)
    ? { family: name.slice(0, -TOTAL.length), type: 'counter' }
    : { family: name, type: 'gauge' };
}

/** A label value as OpenMetrics escapes it: backslash, double quote, line feed. */
function escapeValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** Unix seconds with the milliseconds as three decimals (OpenMetrics timestamps are seconds). */
export function formatTimestamp(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${s}.${String(ms - s * 1000).padStart(3, '0')}`;
}

/** A sample value: integers as they are, others in JavaScript's shortest round-trip form (OpenMetrics reads both). */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

/** The sample lines of one series: `name{labels} value timestamp`. */
export function seriesLines(s: SettledSeries): string {
  let name = '';
  const pairs: string[] = [];
  for (const [k, v] of s.labels) {
    if (k === '__name__') name = v;
    else pairs.push(`${k}="${escapeValue(v)}"`);
  }
  const head = pairs.length ? `${name}{${pairs.join(',')}}` : name;
  let out = '';
  for (const p of s.samples) out += `${head} ${formatValue(p.value)} ${formatTimestamp(p.timestampMs)}\n`;
  return out;
}

/** Part files by name (`<family>.<type>.<account index>`): their sizes once every write handed out so far is done. */
export type PartSizes = Record<string, number>;

/** Buffered lines taken for writing, and the sizes the parts have once they are written. */
export interface TakenParts {
  writes: Map<string, string>;
  sizes: PartSizes;
}

const PART = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\.(counter|gauge)\.(\d+)$/;

export class OpenMetricsSpool {
  private buffers = new Map<string, string[]>();
  private readonly sizes = new Map<string, number>();
  private bufferedBytes = 0;

  /** `dir`: the parts folder (FILE.om.parts). */
  constructor(readonly dir: string) {}

  /** Bytes read since the last take(). */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /** Buffers a window's series of the account at `accountIndex` (configuration order); returns the samples. */
  add(accountIndex: number, series: readonly SettledSeries[]): number {
    let samples = 0;
    for (const s of series) {
      const name = s.labels.find(([k]) => k === '__name__')?.[1] ?? '';
      const { family, type } = familyOf(name);
      const part = `${family}.${type}.${accountIndex}`;
      const text = seriesLines(s);
      let list = this.buffers.get(part);
      if (!list) {
        list = [];
        this.buffers.set(part, list);
      }
      list.push(text);
      const bytes = Buffer.byteLength(text);
      this.sizes.set(part, (this.sizes.get(part) ?? 0) + bytes);
      this.bufferedBytes += bytes;
      samples += s.samples.length;
    }
    return samples;
  }

  /** Takes what is buffered (synchronously: the sizes match the progress taken in the same turn). */
  take(): TakenParts {
    const writes = new Map<string, string>();
    for (const [part, list] of this.buffers) writes.set(part, list.join(''));
    this.buffers = new Map();
    this.bufferedBytes = 0;
    return { writes, sizes: Object.fromEntries(this.sizes) };
  }

  /** Appends taken lines to their parts and flushes them to disk. One write at a time, in the order taken. */
  async write(taken: TakenParts): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    for (const [part, text] of taken.writes) {
      const handle = await open(join(this.dir, part), 'a');
      try {
        await handle.write(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  }

  /**
   * A resume: every part cut back to the size the progress recorded (a part it does not list, made after it, is
   * removed); the spool continues from those sizes. Throws when a part is shorter than recorded (it lost lines).
   */
  async restore(sizes: PartSizes): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    for (const name of await readdir(this.dir)) {
      if (!PART.test(name)) continue;
      if (sizes[name] === undefined) await unlink(join(this.dir, name));
    }
    for (const [part, size] of Object.entries(sizes)) {
      const path = join(this.dir, part);
      const have = await stat(path).then(
        (s) => s.size,
        () => -1,
      );
      if (have < size)
        throw new Error(`${path}: shorter than the progress file says (${have} < ${size} bytes); start anew`);
      if (have > size) await truncate(path, size);
      this.sizes.set(part, size);
    }
  }

  /**
   * Writes the final file at `out` (atomically: a temporary file renamed): per family by name, a `# TYPE` line
   * then its parts by account index; `# EOF` last. Returns the bytes written.
   */
  async assemble(out: string): Promise<number> {
    const byFamily = new Map<string, { type: string; parts: { index: number; part: string }[] }>();
    for (const part of this.sizes.keys()) {
      const [, family, type, index] = PART.exec(part)!;
      const f = byFamily.get(family!) ?? { type: type!, parts: [] };
      f.parts.push({ index: Number(index), part });
      byFamily.set(family!, f);
    }
    const tmp = `${out}.${process.pid}.tmp`;
    const file = await open(tmp, 'w');
    try {
      for (const family of [...byFamily.keys()].sort()) {
        const f = byFamily.get(family)!;
        await file.write(`# TYPE ${family} ${f.type}\n`);
        for (const { part } of f.parts.sort((a, b) => a.index - b.index))
          for await (const chunk of createReadStream(join(this.dir, part))) await file.write(chunk as Buffer);
      }
      await file.write('# EOF\n');
      await file.sync();
      await file.close();
      await rename(tmp, out);
    } catch (err) {
      await file.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
    return (await stat(out)).size;
  }

  /** Removes the parts folder (after assemble). */
  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}
