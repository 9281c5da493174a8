/**
 * The spans the running exporter skipped, for `backfill --gaps` (docs/backfill.md, "Gaps"). Two files beside
 * `state_file`, each with one writer:
 *
 * - `state.gaps.json`, written by the exporter (GapsRecorder): per account the spans it skipped, with the reason
 *   of cdn_metrics_skipped_seconds_total (`catch_up_limit`: a saved cursor older than metrics.max_catch_up moved up
 *   at start; `rejected`: a first read the API refused with 422; `revisit`: a revisit it refused). Adjacent or
 *   overlapping spans of one account and reason are merged. Spans that ended more than 90 days ago are dropped:
 *   the ceiling of metrics.lookback and metrics.max_catch_up (src/config/schema.ts CEILINGS.lookbackMs), the
 *   furthest back the exporter reads.
 * - `state.gaps.filled.json`, written by the backfill: the spans it filled. What is left to fill is the first
 *   file's spans less the second's.
 *
 * Both are written atomically (./files.ts). A gaps file that cannot be read is moved aside (`.bad`) with a warning:
 * the exporter's start does not depend on it.
 */
import { rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { type Clock, MINUTE } from '../clock.js';
import { CEILINGS } from '../config/schema.js';
import type { Logger } from '../log.js';
import { readJson, writeAtomic } from './files.js';
import type { Run } from './plan.js';

/** How long a skipped span stays listed: CEILINGS.lookbackMs (90 days). */
export const GAPS_KEPT_MS = CEILINGS.lookbackMs;

export interface GapSpan {
  account: string;
  start: number;
  end: number;
  reason: string;
}

interface SpanJson {
  account: string;
  start: string;
  end: string;
  reason?: string;
}

function stemPath(stateFile: string, suffix: string): string {
  const base = basename(stateFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(stateFile), `${stem}.${suffix}`);
}

/** `state.json` -> `state.gaps.json`. */
export function gapsPath(stateFile: string): string {
  return stemPath(stateFile, 'gaps.json');
}

/** `state.json` -> `state.gaps.filled.json`. */
export function filledPath(stateFile: string): string {
  return stemPath(stateFile, 'gaps.filled.json');
}

const iso = (ms: number) => new Date(ms).toISOString();

function toJson(s: GapSpan | Run): SpanJson {
  return {
    account: s.account,
    start: iso(s.start),
    end: iso(s.end),
    ...('reason' in s ? { reason: s.reason } : {}),
  };
}

/** The spans of a file's list; entries that are not whole-minute spans are left out (counted in `bad`). */
function parseSpans(list: unknown): { spans: GapSpan[]; bad: number } {
  const spans: GapSpan[] = [];
  let bad = 0;
  for (const e of Array.isArray(list) ? (list as Partial<SpanJson>[]) : []) {
    const start = typeof e?.start === 'string' ? Date.parse(e.start) : Number.NaN;
    const end = typeof e?.end === 'string' ? Date.parse(e.end) : Number.NaN;
    if (typeof e?.account !== 'string' || !(start < end) || start % MINUTE !== 0 || end % MINUTE !== 0) {
      bad++;
      continue;
    }
    spans.push({ account: e.account, start, end, reason: typeof e.reason === 'string' ? e.reason : '' });
  }
  return { spans, bad };
}

/** Reads a `{version: 1, <key>: [...]}` file; undefined when there is none. */
async function readList(
  path: string,
  key: string,
  what: string,
): Promise<{ spans: GapSpan[]; bad: number } | undefined> {
  const raw = (await readJson(path, what)) as Record<string, unknown> | null | undefined;
  if (raw === undefined) return undefined;
  if (raw?.version !== 1 || !Array.isArray(raw[key]))
    throw new Error(`${what} ${path}: unknown format (expected {"version": 1, "${key}": [...]})`);
  return parseSpans(raw[key]);
}

/** Adds `s` to `list` (one account's, sorted by start), merged with the spans of its reason it touches. */
function addSpan(list: GapSpan[], s: GapSpan): void {
  let { start, end } = s;
  const kept: GapSpan[] = [];
  for (const o of list) {
    if (o.reason === s.reason && o.start <= end && start <= o.end) {
      start = Math.min(start, o.start);
      end = Math.max(end, o.end);
    } else kept.push(o);
  }
  kept.push({ account: s.account, start, end, reason: s.reason });
  kept.sort((a, b) => a.start - b.start || a.end - b.end);
  list.splice(0, list.length, ...kept);
}

/**
 * The exporter's side: records each skipped span and keeps `state.gaps.json` up to date (one write at a time; a
 * record made while a write runs is in the next). `record` never throws (it is called from the traffic pipeline's
 * hooks); a failed write is logged and tried again at the next record or `flush`.
 */
export class GapsRecorder {
  private readonly spans = new Map<string, GapSpan[]>();
  private saving: Promise<void> | undefined;
  private dirty = false;

  private constructor(
    readonly path: string,
    private readonly d: { clock: Clock; log: Logger },
  ) {}

  /** The recorder of `path` (gapsPath(state_file)), with the spans earlier runs listed. */
  static async open(path: string, d: { clock: Clock; log: Logger }): Promise<GapsRecorder> {
    const r = new GapsRecorder(path, d);
    let loaded: Awaited<ReturnType<typeof readList>>;
    try {
      loaded = await readList(path, 'spans', 'gaps file');
    } catch (err) {
      d.log.warn(
        { file: path, error: (err as Error).message, moved_to: `${path}.bad` },
        'the gaps file cannot be read: moved aside, skipped spans are listed anew',
      );
      await rename(path, `${path}.bad`).catch(() => {});
      loaded = undefined;
    }
    for (const s of loaded?.spans ?? []) r.add(s);
    return r;
  }

  /** A span the exporter skipped: `start`..`end` (ms, whole minutes) of `account`, and why. */
  record(account: string, start: number, end: number, reason: string): void {
    if (!(start < end)) return;
    this.add({ account, start, end, reason });
    this.save();
  }

  /** Every span listed, by account then start (for tests and the landing page). */
  list(): GapSpan[] {
    return [...this.spans.values()].flat();
  }

  /** Resolves once everything recorded so far is on disk. */
  async flush(): Promise<void> {
    while (this.saving) await this.saving;
  }

  private add(s: GapSpan): void {
    const list = this.spans.get(s.account) ?? [];
    this.spans.set(s.account, list);
    addSpan(list, s);
  }

  private save(): void {
    if (this.saving) {
      this.dirty = true;
      return;
    }
    this.saving = (async () => {
      do {
        this.dirty = false;
        this.prune();
        try {
          await writeAtomic(this.path, JSON.stringify({ version: 1, spans: this.list().map(toJson) }));
        } catch (err) {
          this.d.log.error(
            { file: this.path, error: (err as Error).message },
            'writing the gaps file failed',
          );
        }
      } while (this.dirty);
      this.saving = undefined;
    })();
  }

  private prune(): void {
    const oldest = this.d.clock.now() - GAPS_KEPT_MS;
    for (const [account, list] of this.spans) {
      const kept = list.filter((s) => s.end >= oldest);
      if (kept.length === 0) this.spans.delete(account);
      else this.spans.set(account, kept);
    }
  }
}

/** Per account, [start, end) intervals merged (whatever their reason). */
function union(
  spans: readonly { account: string; start: number; end: number }[],
): Map<string, [number, number][]> {
  const by = new Map<string, [number, number][]>();
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    const list = by.get(s.account) ?? [];
    by.set(s.account, list);
    const last = list[list.length - 1];
    if (last && s.start <= last[1]) last[1] = Math.max(last[1], s.end);
    else list.push([s.start, s.end]);
  }
  return by;
}

export interface PendingGaps {
  /** The runs to fill now: listed, not filled, of the accounts asked, ending by `latestEnd`. */
  runs: Run[];
  /** Listed and not filled, but not final yet (they end after `latestEnd`): left for a later run. */
  notFinal: Run[];
  /** Reasons of the spans to fill, with their minutes. */
  reasons: Record<string, number>;
  bad: number;
}

/** What `backfill --gaps` fills: the spans of `state.gaps.json` less those of `state.gaps.filled.json`. */
export async function pendingGaps(
  stateFile: string,
  accounts: readonly string[],
  latestEnd: number,
): Promise<PendingGaps> {
  const listed = await readList(gapsPath(stateFile), 'spans', 'gaps file');
  const filled = await readList(filledPath(stateFile), 'filled', 'filled gaps file');
  const asked = new Set(accounts);
  const spans = (listed?.spans ?? []).filter((s) => asked.has(s.account));
  const done = union(filled?.spans ?? []);
  const out: PendingGaps = {
    runs: [],
    notFinal: [],
    reasons: {},
    bad: (listed?.bad ?? 0) + (filled?.bad ?? 0),
  };
  for (const [account, intervals] of union(spans)) {
    for (const [start, end] of intervals) {
      // The interval less every filled one it overlaps.
      let pieces: [number, number][] = [[start, end]];
      for (const [fs, fe] of done.get(account) ?? []) {
        pieces = pieces.flatMap(([a, b]): [number, number][] => {
          if (fe <= a || b <= fs) return [[a, b]];
          const left: [number, number][] = a < fs ? [[a, fs]] : [];
          return fe < b ? [...left, [fe, b]] : left;
        });
      }
      for (const [a, b] of pieces)
        (b <= latestEnd ? out.runs : out.notFinal).push({ account, start: a, end: b });
    }
  }
  for (const s of spans)
    for (const r of out.runs)
      if (r.account === s.account && s.start < r.end && r.start < s.end) {
        const minutes = (Math.min(s.end, r.end) - Math.max(s.start, r.start)) / MINUTE;
        out.reasons[s.reason] = (out.reasons[s.reason] ?? 0) + minutes;
      }
  const order = new Map(accounts.map((a, i) => [a, i]));
  out.runs.sort((x, y) => order.get(x.account)! - order.get(y.account)! || x.start - y.start);
  return out;
}

/**
 * Adds `runs` to `state.gaps.filled.json`. Marks no span of the gaps file overlaps any more (the exporter dropped
 * it after 90 days) are dropped: the filled file never outgrows the gaps file.
 */
export async function markFilled(stateFile: string, runs: readonly Run[]): Promise<void> {
  const listed = (await readList(gapsPath(stateFile), 'spans', 'gaps file'))?.spans ?? [];
  const before = (await readList(filledPath(stateFile), 'filled', 'filled gaps file'))?.spans ?? [];
  const marks: Run[] = [];
  for (const [account, intervals] of union([...before, ...runs]))
    for (const [start, end] of intervals)
      if (listed.some((s) => s.account === account && s.start < end && start < s.end))
        marks.push({ account, start, end });
  await writeAtomic(
    filledPath(stateFile),
    JSON.stringify({ version: 1, filled: marks.map((m) => toJson(m)) }),
  );
}
