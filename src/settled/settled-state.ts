/**
 * The settled writer's part of the state (docs/remote-write.md, "Across restarts"): per account the
 * acknowledged cursor and the running totals there, in a file beside `state_file` (`state.json` ->
 * `state.settled.json`). It is written when the receiver acknowledges windows, not when a scrape commits the
 * cursors, so it has a file of its own: written atomically (a temporary file in the same folder, flushed, renamed),
 * one write at a time, checked on load like the cursors: a cursor that is not a whole minute or lies in the future,
 * or a total that is not a finite number >= 0, drops that account's part with a warning (its series start again
 * from a zero, which a receiver reads as a counter reset); a file that is not this format is refused at start.
 */
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeAtomic } from '../atomic-file.js';
import { floorMinute, MINUTE } from '../clock.js';
import type { Logger } from '../log.js';
import type { SavedTotal } from './running-totals.js';

export interface SavedSettled {
  /** Totals are read as the save writes them: the writer changes none of them until the save is done. */
  accounts: Map<string, { cursor: number; totals: Iterable<SavedTotal> }>;
}

interface FileFormat {
  version: 1;
  /** Per account: the acknowledged cursor (ISO time) and [key, total, last window end in Unix seconds]. */
  accounts: Record<string, { cursor: string; totals: [string, number, number][] }>;
}

/** `state.json` -> `state.settled.json`; a name without `.json` gets `.settled.json` added. */
export function settledStatePath(stateFile: string): string {
  const base = basename(stateFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(stateFile), `${stem}.settled.json`);
}

export class SettledStateFile {
  constructor(private readonly path: string) {}

  /** The saved state, checked; undefined when there is no file. */
  async load(now: number, log: Logger): Promise<SavedSettled | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`settled state ${this.path}: ${(err as Error).message}`);
    }
    let parsed: Partial<FileFormat> | null;
    try {
      parsed = JSON.parse(text) as Partial<FileFormat> | null;
    } catch {
      throw new Error(`settled state ${this.path}: not valid JSON; repair it, or move it away to start anew`);
    }
    if (parsed?.version !== 1 || typeof parsed.accounts !== 'object' || parsed.accounts === null) {
      throw new Error(
        `settled state ${this.path}: unknown format (expected {"version": 1, "accounts": {...}}); move it away to start anew`,
      );
    }
    const out: SavedSettled = { accounts: new Map() };
    const latest = floorMinute(now);
    for (const [account, part] of Object.entries(parsed.accounts)) {
      const problem = partProblem(part, latest);
      if (problem) {
        log.warn(
          { file: this.path, account, problem },
          'settled state: an account part cannot be used; its settled series start again from a zero',
        );
        continue;
      }
      out.accounts.set(account, {
        cursor: Date.parse(part.cursor),
        totals: part.totals.map(([key, total, last]) => ({ key, total, lastMs: last * 1000 })),
      });
    }
    return out;
  }

  async save(state: SavedSettled): Promise<void> {
    await writeAtomic(this.path, fileText(state));
  }
}

/** The file's text in pieces (the format of FileFormat), one total at a time. */
function* fileText(state: SavedSettled): Generator<string> {
  yield '{"version":1,"accounts":{';
  let firstAccount = true;
  for (const [account, s] of state.accounts) {
    const cursor = JSON.stringify(new Date(s.cursor).toISOString());
    yield `${firstAccount ? '' : ','}${JSON.stringify(account)}:{"cursor":${cursor},"totals":[`;
    firstAccount = false;
    let first = true;
    for (const t of s.totals) {
      yield `${first ? '' : ','}[${JSON.stringify(t.key)},${t.total},${Math.round(t.lastMs / 1000)}]`;
      first = false;
    }
    yield ']}';
  }
  yield '}}';
}

function partProblem(part: unknown, latest: number): string | undefined {
  const p = part as Partial<FileFormat['accounts'][string]> | null;
  if (typeof p !== 'object' || p === null) return 'not an object';
  const cursor = typeof p.cursor === 'string' ? Date.parse(p.cursor) : Number.NaN;
  if (!Number.isFinite(cursor)) return 'cursor is not a time';
  if (cursor % MINUTE !== 0) return 'cursor is not on a whole minute';
  if (cursor > latest) return 'cursor is in the future';
  if (!Array.isArray(p.totals)) return 'totals is not a list';
  for (const t of p.totals) {
    if (!Array.isArray(t) || t.length !== 3 || typeof t[0] !== 'string')
      return 'a total is not [key, total, last]';
    if (!(Number.isFinite(t[1]) && t[1] >= 0)) return 'a total is not a finite number >= 0';
    if (!(Number.isFinite(t[2]) && t[2] >= 0 && t[2] * 1000 <= latest + 10 * MINUTE))
      return 'a total has a bad time';
  }
  return undefined;
}
