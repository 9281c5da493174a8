/**
 * The ranking of `limits.top_resources` (./ranking.ts) in a file beside `state_file` (`state.json` ->
 * `state.ranking.json`), so a restart keeps the same top N instead of ranking from nothing. It has a file of its own
 * because it is written on its own schedule (RankingSaver), not when a scrape commits the cursors: written
 * atomically (a temporary file in the same folder, flushed, renamed), one write at a time.
 *
 * Nothing counted depends on it: a lost or stale ranking file only changes which resources keep series of their own
 * for a while after the restart (the sums stay exact, src/traffic/fold.ts). So a bad file never stops a start:
 * checked on load, an account's part that cannot be true (lengths that do not match, a count that is not a finite
 * number >= 0, a slice in the future) is dropped with a warning, and a file that is not this format, or one of
 * another `top_resources_period`, is ignored with a warning and overwritten by the next save.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeAtomic } from '../atomic-file.js';
import type { Logger } from '../log.js';
import { BUCKETS, type SavedAccountRanking, type SavedRanking } from './ranking.js';

/** `state.json` -> `state.ranking.json`; a name without `.json` gets `.ranking.json` added. */
export function rankingStatePath(stateFile: string): string {
  const base = basename(stateFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(stateFile), `${stem}.ranking.json`);
}

export class RankingStateFile {
  constructor(readonly path: string) {}

  /** The saved ranking, checked; undefined when there is none, or none usable with `periodMs`. */
  async load(periodMs: number, nowMs: number, log: Logger): Promise<SavedRanking | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        log.warn({ file: this.path, err: (err as Error).message }, 'ranking file unreadable; ranking anew');
      return undefined;
    }
    let parsed: Partial<SavedRanking> | null;
    try {
      parsed = JSON.parse(text) as Partial<SavedRanking> | null;
    } catch {
      log.warn({ file: this.path }, 'ranking file is not JSON; ranking anew');
      return undefined;
    }
    if (
      parsed?.version !== 1 ||
      parsed.buckets !== BUCKETS ||
      typeof parsed.accounts !== 'object' ||
      parsed.accounts === null
    ) {
      log.warn({ file: this.path }, 'ranking file of an unknown format; ranking anew');
      return undefined;
    }
    if (parsed.periodMs !== periodMs) {
      log.info(
        { file: this.path, saved: parsed.periodMs, now: periodMs },
        'ranking file is for another limits.top_resources_period; ranking anew',
      );
      return undefined;
    }
    const out: SavedRanking = { version: 1, periodMs, buckets: BUCKETS, accounts: {} };
    const newest = Math.floor(nowMs / (periodMs / BUCKETS));
    for (const [account, part] of Object.entries(parsed.accounts)) {
      const problem = partProblem(part, newest);
      if (problem) {
        log.warn(
          { file: this.path, account, problem },
          'ranking file: an account part cannot be used; ranking it anew',
        );
        continue;
      }
      out.accounts[account] = part;
    }
    return out;
  }

  async save(ranking: SavedRanking): Promise<void> {
    await writeAtomic(this.path, JSON.stringify(ranking));
  }
}

function partProblem(part: unknown, newestSlice: number): string | undefined {
  const p = part as Partial<SavedAccountRanking> | null;
  if (typeof p !== 'object' || p === null) return 'not an object';
  if (!Number.isInteger(p.newest) || (p.newest as number) > newestSlice) return 'newest is not a past slice';
  if (typeof p.fedThrough !== 'number' || Number.isNaN(p.fedThrough)) return 'fedThrough is not a time';
  if (!Array.isArray(p.ids) || !p.ids.every((id) => typeof id === 'string' && id !== ''))
    return 'ids is not a list of ids';
  if (new Set(p.ids).size !== p.ids.length) return 'an id is listed twice';
  if (!Array.isArray(p.seen) || p.seen.length !== p.ids.length) return 'seen does not match ids';
  if (!p.seen.every((s) => Number.isInteger(s) && s <= (p.newest as number)))
    return 'a seen slice is not a past one';
  if (!Array.isArray(p.traffic) || p.traffic.length !== p.ids.length * BUCKETS)
    return 'traffic does not match ids';
  if (!p.traffic.every((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0))
    return 'a traffic figure is not a finite number >= 0';
  return undefined;
}

/**
 * Writes the ranking file at most once per `everyMs` while windows are counted (`changed()`), one write at a
 * time, and once more on `flush()` (a stop). A failed write is logged; the next one writes the newer ranking.
 */
export class RankingSaver {
  private dirty = false;
  private writing: Promise<void> | undefined;
  private lastAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly file: RankingStateFile,
    private readonly take: () => SavedRanking | undefined,
    private readonly o: { everyMs: number; now: () => number; log: Logger },
  ) {}

  /** The ranking moved on (a window was counted). */
  changed(): void {
    this.dirty = true;
    if (this.writing || this.o.now() - this.lastAt < this.o.everyMs) return;
    this.writing = this.write().finally(() => {
      this.writing = undefined;
    });
  }

  /** Writes what is not on disk yet; resolves once it is (or the write failed, logged). */
  async flush(): Promise<void> {
    await this.writing;
    if (this.dirty) await this.write();
  }

  private async write(): Promise<void> {
    this.dirty = false;
    this.lastAt = this.o.now();
    const saved = this.take();
    if (!saved) return;
    try {
      await this.file.save(saved);
    } catch (err) {
      this.dirty = true;
      this.o.log.warn(
        { file: this.file.path, err: (err as Error).message },
        'saving the ranking file failed',
      );
    }
  }
}
