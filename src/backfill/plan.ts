/**
 * What `cdn-exporter backfill` is asked to do, checked against the configuration before anything is read: the
 * accounts, the range (or `--gaps`), the window, where the series go and where the progress is kept
 * (docs/backfill.md). Every refusal is a BackfillError whose message names the flag or key and says why.
 */
import { basename, dirname, join } from 'node:path';
import { floorMinute, MINUTE } from '../clock.js';
import type { BackfillFlags } from '../config/flags.js';
import { formatDuration, parseDuration } from '../config/index.js';
import type { Config } from '../config/typed-config.js';
import { accountsForShard } from '../sharding.js';

/** A bad command line for this configuration: printed as it is, exit code 2. */
export class BackfillError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackfillError';
  }
}

/** The API answers windows of 1 to 10 whole minutes (docs/upstream-api.md). */
export const MIN_WINDOW_MS = MINUTE;
export const MAX_WINDOW_MS = 10 * MINUTE;
export const DEFAULT_WINDOW_MS = 10 * MINUTE;

export type BackfillOutput = { kind: 'file'; path: string } | { kind: 'remote' };

export interface BackfillPlan {
  mode: 'range' | 'gaps';
  /** `--from` and `--to` (ms), for mode `range`. */
  from?: number;
  to?: number;
  windowMs: number;
  /** In configuration order. */
  accounts: string[];
  output: BackfillOutput;
  resume: boolean;
  /** Where progress is kept; undefined: nowhere (remote write without state_file or --progress). */
  progressPath?: string;
  /** The newest minute a window may end at: now - metrics.delay - metrics.revisit, floored to the minute. */
  latestEnd: number;
}

/** One stretch of one account read as its own run of series (a range, or a gap the exporter skipped). */
export interface Run {
  account: string;
  start: number;
  end: number;
}

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 time with its zone (`2026-10-01T00:00:00Z`), on a whole minute. */
export function parseTime(flag: string, text: string): number {
  const ms = TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new BackfillError(
      `${flag}: expected a time with its zone, like 2026-10-01T00:00:00Z, got ${JSON.stringify(text)}`,
    );
  }
  if (ms % MINUTE !== 0)
    throw new BackfillError(`${flag}: must be on a whole minute (seconds 00), got ${text}`);
  return ms;
}

/** `--window`: whole minutes from 1 to 10 (the API's own bounds for one request). */
export function parseWindow(text: string | undefined): number {
  if (text === undefined) return DEFAULT_WINDOW_MS;
  const ms = parseDuration(text);
  if (ms === undefined || ms % MINUTE !== 0 || ms < MIN_WINDOW_MS || ms > MAX_WINDOW_MS) {
    throw new BackfillError(
      `--window: must be whole minutes from 1m to 10m (the API's bounds), got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

/** `state.json` -> `state.backfill.json` (the remote-write progress beside the state file). */
export function besideState(stateFile: string, suffix: string): string {
  const base = basename(stateFile);
  const stem = base.endsWith('.json') ? base.slice(0, -'.json'.length) : base;
  return join(dirname(stateFile), `${stem}.${suffix}.json`);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Checks the flags against `config` at `now`; throws BackfillError. */
export function planBackfill(flags: BackfillFlags, config: Config, now: number): BackfillPlan {
  if (flags.output !== undefined && flags.remoteWrite)
    throw new BackfillError('--output and --remote-write exclude each other: choose one');
  if (flags.output === undefined && !flags.remoteWrite)
    throw new BackfillError('where to: give --output FILE.om or --remote-write');
  if (flags.output === '') throw new BackfillError('--output: needs a file path');
  if (flags.progress !== undefined && !flags.remoteWrite)
    throw new BackfillError(
      '--progress: only with --remote-write (--output keeps FILE.om.progress beside it)',
    );
  if (flags.progress === '') throw new BackfillError('--progress: needs a file path');
  if (flags.remoteWrite && !config.remoteWrite)
    throw new BackfillError('--remote-write: the configuration has no remote_write section to write to');

  const windowMs = parseWindow(flags.window);
  const latestEnd = floorMinute(now - config.metrics.delayMs - config.metrics.revisitMs);
  const plan: BackfillPlan = {
    mode: flags.gaps ? 'gaps' : 'range',
    windowMs,
    accounts: pickAccounts(flags.accounts, config),
    output: flags.output !== undefined ? { kind: 'file', path: flags.output } : { kind: 'remote' },
    resume: flags.resume,
    latestEnd,
  };
  if (flags.gaps) {
    if (flags.from !== undefined || flags.to !== undefined)
      throw new BackfillError('--gaps reads its spans from the state: it takes no --from or --to');
    if (config.stateFile === undefined)
      throw new BackfillError(
        '--gaps: the configuration has no state_file, where the skipped spans are listed',
      );
  } else {
    if (flags.from === undefined || flags.to === undefined)
      throw new BackfillError('give --from and --to (or --gaps)');
    const from = parseTime('--from', flags.from);
    const to = parseTime('--to', flags.to);
    if (from >= to) throw new BackfillError(`--from must be before --to, got ${iso(from)} .. ${iso(to)}`);
    if (to > latestEnd) {
      throw new BackfillError(
        `--to ${iso(to)} is not final yet: it must be no later than now - metrics.delay - metrics.revisit ` +
          `(${formatDuration(config.metrics.delayMs)} + ${formatDuration(config.metrics.revisitMs)}), ` +
          `${iso(latestEnd)} now`,
      );
    }
    plan.from = from;
    plan.to = to;
  }
  if (plan.output.kind === 'file') plan.progressPath = `${plan.output.path}.progress`;
  else if (flags.progress !== undefined) plan.progressPath = flags.progress;
  else if (config.stateFile !== undefined) plan.progressPath = besideState(config.stateFile, 'backfill');
  if (plan.resume && plan.progressPath === undefined)
    throw new BackfillError('--resume: no progress is kept without state_file or --progress FILE');
  return plan;
}

function pickAccounts(given: string[] | undefined, config: Config): string[] {
  const configured = config.accounts.map((a) => a.name);
  if (given === undefined) {
    const owned = accountsForShard(config.accounts, config.sharding.shard, config.sharding.shards);
    if (owned.length === 0) {
      throw new BackfillError(
        `this shard (${config.sharding.shard} of ${config.sharding.shards}) owns none of the configured accounts: ` +
          'name them with --accounts',
      );
    }
    return owned.map((a) => a.name);
  }
  if (given.length === 0) throw new BackfillError('--accounts: name at least one account');
  const unknown = given.filter((a) => !configured.includes(a));
  if (unknown.length > 0) {
    throw new BackfillError(
      `--accounts: ${unknown.map((a) => JSON.stringify(a)).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not in the configuration`,
    );
  }
  const picked = new Set(given);
  return configured.filter((a) => picked.has(a));
}

/** The runs of a range: one per account, [from, to). */
export function rangeRuns(plan: BackfillPlan): Run[] {
  return plan.accounts.map((account) => ({ account, start: plan.from!, end: plan.to! }));
}

/**
 * The window read next in a run at `cursor`: to the next boundary of the grid of `windowMs` laid from the run's
 * start (a cursor inside a window, after a split for a 504, reads to that window's end), never past the run's end.
 */
export function nextWindow(run: Run, cursor: number, windowMs: number): { start: number; end: number } {
  const k = Math.floor((cursor - run.start) / windowMs);
  return { start: cursor, end: Math.min(run.end, run.start + (k + 1) * windowMs) };
}

/** Windows left in a run from `cursor` (a cursor off the grid counts its partial window). */
export function windowsLeft(run: Run, cursor: number, windowMs: number): number {
  if (cursor >= run.end) return 0;
  const first = nextWindow(run, cursor, windowMs);
  return 1 + Math.ceil((run.end - first.end) / windowMs);
}
