/**
 * The progress of a backfill, for `--resume` (docs/backfill.md, "Interrupted"): what it was asked (so a resume with
 * other flags is refused), per run the next window and the running totals there, the part sizes of `--output`, and
 * the counts so far. Written atomically (./files.ts) at each checkpoint: the file always describes a state the
 * output reached, whatever the moment of a crash.
 */
import { unlink } from 'node:fs/promises';
import type { SavedTotal } from '../settled/running-totals.js';
import { readJson, writeAtomic } from './files.js';
import type { KeptResources } from './kept-resources.js';
import type { PartSizes } from './openmetrics.js';
import type { BackfillPlan, Run } from './plan.js';

/** What a run has written so far: windows (skipped ones included), of them skipped (422), samples. */
export interface RunDone {
  windows: number;
  skipped: number;
  samples: number;
}

/** A run and where it stands: `next` its next window's start (`end`: done); the totals there, once begun. */
export interface RunProgress extends Run {
  next: number;
  totals?: SavedTotal[];
  done?: RunDone;
}

export interface Progress {
  /** What the backfill was asked: compared on resume. */
  asked: string;
  runs: RunProgress[];
  /** `--output`: the part sizes this progress matches. */
  parts?: PartSizes;
  /** Metrics requests sent so far, retries included (by every process of this backfill). */
  requests: number;
  /** limits.top_resources: the resources kept apart per account, as the backfill began (./kept-resources.ts). */
  kept?: KeptResources;
}

interface FileFormat {
  version: 1;
  asked: string;
  /** Times as ISO text; totals as [key, total, last window end (ms)]. */
  runs: {
    account: string;
    start: string;
    end: string;
    next: string;
    totals?: [string, number, number][];
    done?: RunDone;
  }[];
  parts?: PartSizes;
  requests: number;
  kept?: KeptResources;
}

/** The flags that make a backfill what it is, as one line: a resume must be asked the same. */
export function askedOf(plan: BackfillPlan): string {
  const parts = [
    `mode=${plan.mode}`,
    `window=${plan.windowMs / 60_000}m`,
    `accounts=${plan.accounts.join(',')}`,
    `output=${plan.output.kind === 'file' ? plan.output.path : 'remote-write'}`,
  ];
  if (plan.mode === 'range')
    parts.push(`from=${new Date(plan.from!).toISOString()}`, `to=${new Date(plan.to!).toISOString()}`);
  return parts.join(' ');
}

const iso = (ms: number) => new Date(ms).toISOString();

export class ProgressFile {
  constructor(readonly path: string) {}

  async load(): Promise<Progress | undefined> {
    const raw = (await readJson(this.path, 'backfill progress')) as Partial<FileFormat> | undefined;
    if (raw === undefined) return undefined;
    const bad = (why: string) =>
      new Error(`backfill progress ${this.path}: ${why}; remove it (and the output's parts) to start anew`);
    if (
      raw?.version !== 1 ||
      typeof raw.asked !== 'string' ||
      !Array.isArray(raw.runs) ||
      typeof raw.requests !== 'number'
    )
      throw bad('unknown format');
    const runs: RunProgress[] = [];
    for (const r of raw.runs) {
      const start = Date.parse(r.start);
      const end = Date.parse(r.end);
      const next = Date.parse(r.next);
      if (
        ![start, end, next].every(Number.isFinite) ||
        next < start ||
        next > end ||
        typeof r.account !== 'string'
      )
        throw bad('a run is not {account, start, end, next}');
      const run: RunProgress = { account: r.account, start, end, next };
      if (r.done !== undefined) {
        const { windows, skipped, samples } = r.done;
        if (![windows, skipped, samples].every((n) => Number.isSafeInteger(n) && n >= 0))
          throw bad('a run has bad counts');
        run.done = { windows, skipped, samples };
      }
      if (r.totals !== undefined) {
        if (!Array.isArray(r.totals)) throw bad('totals is not a list');
        run.totals = r.totals.map(([key, total, lastMs]) => {
          if (typeof key !== 'string' || !Number.isFinite(total) || total < 0 || !Number.isFinite(lastMs))
            throw bad('a total is not [key, total, last]');
          return { key, total, lastMs };
        });
      }
      runs.push(run);
    }
    if (
      raw.kept !== undefined &&
      (typeof raw.kept !== 'object' ||
        raw.kept === null ||
        !Object.values(raw.kept).every(
          (ids) => Array.isArray(ids) && ids.every((id) => typeof id === 'string'),
        ))
    )
      throw bad('kept is not a list of resource ids per account');
    return {
      asked: raw.asked,
      runs,
      requests: raw.requests,
      ...(raw.parts ? { parts: raw.parts } : {}),
      ...(raw.kept ? { kept: raw.kept } : {}),
    };
  }

  async save(p: Progress): Promise<void> {
    const file: FileFormat = {
      version: 1,
      asked: p.asked,
      runs: p.runs.map((r) => ({
        account: r.account,
        start: iso(r.start),
        end: iso(r.end),
        next: iso(r.next),
        ...(r.totals
          ? { totals: r.totals.map((t) => [t.key, t.total, t.lastMs] as [string, number, number]) }
          : {}),
        ...(r.done ? { done: r.done } : {}),
      })),
      requests: p.requests,
      ...(p.parts ? { parts: p.parts } : {}),
      ...(p.kept ? { kept: p.kept } : {}),
    };
    await writeAtomic(this.path, JSON.stringify(file));
  }

  /** The backfill is done: nothing to resume. */
  async remove(): Promise<void> {
    await unlink(this.path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
