/**
 * Folding in a backfill (docs/backfill.md, "Top resources"): with `limits.top_resources` (or an account's own), the
 * resources kept apart are the account's top N in the ranking the running exporter saved beside `state_file`
 * (src/traffic/ranking-state.ts: `state.ranking.json`), read once when the backfill begins and kept in its progress,
 * so a resume folds the same way whatever the file says by then. Every other resource is written as
 * `resource="__other__"` (src/settled/window-series.ts folds through the hook), so the sums by account stay exact.
 *
 * A past window's own ranking is not knowable from the windows before it without reading a period more of them;
 * the saved ranking is what `/metrics` keeps apart now, so the backfilled series of those resources continue
 * theirs. An account with a limit and no usable ranking (no `state_file`, no file, another
 * `top_resources_period`, the account not in it) keeps nothing apart: all its resources are folded (logged).
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../log.js';
import { rankingPeriodMs, topResourcesOf } from '../traffic/fold-book.js';
import { ResourceRanking } from '../traffic/ranking.js';
import { RankingStateFile, rankingStatePath } from '../traffic/ranking-state.js';

/** Per account with a limit: the ids kept apart, sorted. An account not listed folds nothing. */
export type KeptResources = Record<string, string[]>;

/** The kept resources of `accounts` from the saved ranking, as of `nowMs`. */
export async function keptResources(
  config: Pick<Config, 'limits' | 'stateFile' | 'metrics'>,
  accounts: readonly string[],
  nowMs: number,
  log: Logger,
): Promise<KeptResources> {
  const out: KeptResources = {};
  if (config.metrics.breakdown !== 'resource') return out;
  const limited = accounts.filter((a) => topResourcesOf(config.limits, a) > 0);
  if (limited.length === 0) return out;
  const periodMs = rankingPeriodMs(config.limits);
  const file = config.stateFile ? new RankingStateFile(rankingStatePath(config.stateFile)) : undefined;
  const saved = await file?.load(periodMs, nowMs, log);
  const ranking = new ResourceRanking(periodMs);
  if (saved) ranking.restore(saved);
  for (const account of limited) {
    const n = topResourcesOf(config.limits, account);
    out[account] = [...ranking.top(account, n)].sort();
    if (ranking.size(account) === 0)
      log.warn(
        { account, top_resources: n, ranking_file: file?.path ?? null },
        'no saved ranking of this account: every resource of it is written folded, as resource="__other__"',
      );
  }
  return out;
}

/** The WindowSeries fold hook of `kept`: a resource of a listed account not kept apart is folded. */
export function foldByKept(kept: KeptResources): (account: string, resource: string) => boolean {
  const sets = new Map(Object.entries(kept).map(([a, ids]) => [a, new Set(ids)] as const));
  return (account, resource) => {
    const set = sets.get(account);
    return set !== undefined && !set.has(resource);
  };
}
