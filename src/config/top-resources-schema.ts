/**
 * `limits.top_resources` and `limits.top_resources_period` (issue 35), and the per-account `top_resources` with its
 * default for discovered accounts (`accounts_discovery.top_resources`): the N resources of an account with the most
 * edge traffic over the period keep series of their own, the rest are counted under `resource="__other__"`
 * (src/traffic/fold.ts). ./schema.ts puts these keys in its sections; ./typed-config.ts resolves each account's N.
 */
import { z } from 'zod';
import { formatDuration } from './duration.js';
import type { duration } from './schema.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export const TOP_RESOURCES_DEFAULTS = { top_resources: 0, top_resources_period: '1d' } as const;

export const TOP_RESOURCES_CEILINGS = {
  /**
   * Each resource kept apart has at least one series, so more than the ceiling of `limits.max_series` could never
   * be held: that ceiling is N's too.
   */
  maxTopResources: 50_000_000,
  /** The ranking's period: at least the API's shortest window; at most `metrics.counter_retention`'s ceiling. */
  minPeriodMs: MINUTE,
  maxPeriodMs: 90 * DAY,
} as const;

/** `top_resources`: 0 (no limit) up to the ceiling. */
export const topResourcesKey = z.int().min(0).max(TOP_RESOURCES_CEILINGS.maxTopResources);

/** The keys under `limits`, with this file's duration rule (./schema.ts lends it). */
export function limitsTopResourcesKeys(d: typeof duration) {
  return {
    top_resources: topResourcesKey.default(TOP_RESOURCES_DEFAULTS.top_resources),
    // Compared with window times, never a timer: no 24.8-day ceiling.
    top_resources_period: d({
      min: TOP_RESOURCES_CEILINGS.minPeriodMs,
      max: TOP_RESOURCES_CEILINGS.maxPeriodMs,
    }).prefault(TOP_RESOURCES_DEFAULTS.top_resources_period),
  };
}

/** The per-account key (`accounts[]`, `accounts_discovery`): absent, limits' applies. */
export const accountTopResourcesKeys = { top_resources: topResourcesKey.optional() };

/** What the typed configuration holds (ms), for src/traffic (SeriesLimits' top_resources fields). */
export interface TopResourcesLimits {
  topResources?: number;
  topResourcesPeriodMs?: number;
  topResourcesByAccount?: Record<string, number>;
  topResourcesDiscovered?: number;
}

/**
 * Each account's N resolved: a configured account's own `top_resources`, else `limits.top_resources`; a
 * discovered account's `accounts_discovery.top_resources`, else limits'. Empty (nothing set) when no N is above 0
 * anywhere, so a configuration without the keys reads as before.
 */
export function resolveTopResources(
  limits: { top_resources: number; top_resources_period: number },
  accounts: ReadonlyArray<{ name: string; top_resources?: number | undefined }>,
  discovered: number | undefined,
): TopResourcesLimits {
  const own = accounts.map((a) => [a.name, a.top_resources ?? limits.top_resources] as const);
  const disc = discovered ?? limits.top_resources;
  if (limits.top_resources === 0 && disc === 0 && own.every(([, n]) => n === 0)) return {};
  return {
    topResources: limits.top_resources,
    topResourcesPeriodMs: limits.top_resources_period,
    topResourcesByAccount: Object.fromEntries(own),
    topResourcesDiscovered: disc,
  };
}

/** The check-config form of `limits`' keys. */
export function printLimitsTopResources(l: TopResourcesLimits): Record<string, unknown> {
  return {
    top_resources: l.topResources ?? TOP_RESOURCES_DEFAULTS.top_resources,
    top_resources_period: formatDuration(l.topResourcesPeriodMs ?? DAY),
  };
}

/** A cross-key rule: folding needs resources; with `metrics.breakdown: account` there is one series set per account. */
export function topResourcesIssues(raw: Record<string, unknown>): { path: string; message: string }[] {
  const rec = (v: unknown): Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  if (rec(raw.metrics).breakdown !== 'account') return [];
  const out: { path: string; message: string }[] = [];
  const check = (n: unknown, path: string) => {
    if (typeof n === 'number' && n > 0)
      out.push({
        path,
        message:
          'needs metrics.breakdown: resource (with breakdown account each account has one set of series, nothing to fold)',
      });
  };
  check(rec(raw.limits).top_resources, 'limits.top_resources');
  check(rec(raw.accounts_discovery).top_resources, 'accounts_discovery.top_resources');
  if (Array.isArray(raw.accounts))
    raw.accounts.forEach((a, i) => {
      check(rec(a).top_resources, `accounts[${i}].top_resources`);
    });
  return out;
}
