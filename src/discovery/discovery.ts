/**
 * Account discovery (accounts_discovery): one round asks the inventory API with every credential the
 * configuration names, keeps the accounts that are `active` and whose name matches `include` and not `exclude`
 * (anchored), and hands the wanted set to the exporter, which starts and stops account pollers to match.
 *
 * Contracts:
 * - A credential whose listing fails keeps its last known list (a failed discovery never stops accounts); one that
 *   never answered contributes nothing yet.
 * - An account listed by several credentials is polled with the first of them, in configuration order (the api's
 *   own first).
 * - A name is refused (counted by reason, never polled) when it is longer than `limits.max_label_length`
 *   (`name_too_long`: it would be a label of every series of the account), or when it is `.` or `..` or holds a
 *   control character (`name_invalid`): encodeURIComponent leaves dots alone, so `..` as a path segment would send
 *   the token to a path outside the API's prefix on the same host.
 * - One log line per change of a credential's outcome; a list is logged by its size and a few names, never whole
 *   (100,000 names of 10 kB would be one line of a gigabyte). The round never throws.
 */
import type { TokenSource } from '../config/token.js';
import { isRefusal } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { InventoryResponse } from './response.js';
import { inSlices, type Slicing } from './slices.js';

export interface DiscoverySource {
  /** The `login` label: the username, or `token` / `token:ACCOUNT` for a fixed token. Never a secret. */
  label: string;
  token: TokenSource;
  list(): Promise<InventoryResponse>;
}

export interface DiscoveryFilter {
  include: RegExp;
  exclude?: RegExp;
}

/** Why a listed account is not polled. `max_accounts` is the cap's (src/exporter/discovered-accounts.ts). */
export const ACCOUNT_REFUSALS = ['name_too_long', 'name_invalid', 'max_accounts'] as const;
export type AccountRefusal = (typeof ACCOUNT_REFUSALS)[number];

/** Names shown in a log line about a list; the rest are counted. */
export const LOGGED_NAMES = 10;
/** Longest name shown in a log line. */
const LOGGED_NAME_LENGTH = 64;

/** A few names of a list, each clipped, for a log line. */
export function someNames(names: readonly string[]): string[] {
  return names
    .slice(0, LOGGED_NAMES)
    .map((n) => (n.length > LOGGED_NAME_LENGTH ? `${n.slice(0, LOGGED_NAME_LENGTH)}…` : n));
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why an account name cannot be polled, or undefined when it can. */
export function nameRefusal(name: string, maxLength: number): AccountRefusal | undefined {
  if (name.length > maxLength) return 'name_too_long';
  if (name === '.' || name === '..' || CONTROL.test(name)) return 'name_invalid';
  return undefined;
}

export interface DiscoveryDeps {
  log: Logger;
  sources: readonly DiscoverySource[];
  filter: DiscoveryFilter;
  /** limits.max_label_length: longer names are refused. */
  maxNameLength: number;
  /** After every round: the names refused by reason, over all credentials (cdn_discovered_accounts_refused). */
  refused(counts: ReadonlyMap<AccountRefusal, string[]>): void;
  /** After every round: every wanted account and the credential to poll it with. */
  apply(wanted: Map<string, TokenSource>): void;
  /**
   * The inventory refused a credential (401/403): its token is read again, or its login renewed. Without this a
   * revoked token is renewed only by another API's refusal, and with no account polled yet there is none: no
   * account would be found until the token's scheduled renewal, hours later.
   */
  tokenRefused(token: TokenSource): void;
  /** Accounts kept from one credential's list (cdn_discovered_accounts). */
  count(label: string, n: number): void;
  /** Elements of an answer that could not be used (counted as parse errors). */
  issues(n: number): void;
  describe(err: unknown): string;
  /** The exporter's stop signal (a round it ends applies nothing), and the slices of a round's work. */
  slicing?: Slicing;
}

export function keeps(filter: DiscoveryFilter, name: string): boolean {
  return filter.include.test(name) && !(filter.exclude?.test(name) ?? false);
}

export function discoveryRound(d: DiscoveryDeps): () => Promise<void> {
  const last = new Map<DiscoverySource, string[]>();
  const lastRefused = new Map<DiscoverySource, Map<AccountRefusal, string[]>>();
  const lastError = new Map<DiscoverySource, string | undefined>();
  return async () => {
    await Promise.all(
      d.sources.map(async (source) => {
        let error: string | undefined;
        try {
          const res = await source.list();
          if (res.issues > 0) d.issues(res.issues);
          const names: string[] = [];
          const refused = new Map<AccountRefusal, string[]>();
          const read = await inSlices(
            res.accounts,
            (a) => {
              if (!a.active || !keeps(d.filter, a.name)) return;
              const why = nameRefusal(a.name, d.maxNameLength);
              if (why === undefined) names.push(a.name);
              else {
                const list = refused.get(why) ?? [];
                list.push(a.name);
                refused.set(why, list);
              }
            },
            d.slicing,
          );
          if (!read) return;
          const before = last.get(source);
          last.set(source, names);
          d.count(source.label, names.length);
          if (!before || !sameNames(before, names))
            d.log.info(
              { login: source.label, count: names.length, accounts: someNames(names) },
              'discovered accounts',
            );
          const was = lastRefused.get(source);
          lastRefused.set(source, refused);
          if (!sameRefusals(was, refused) && refused.size > 0)
            d.log.warn(
              {
                login: source.label,
                refused: Object.fromEntries([...refused].map(([why, list]) => [why, list.length])),
                examples: someNames([...refused.values()].flat()),
              },
              'discovered accounts refused: names that cannot be polled (limits.max_label_length, . or ..)',
            );
        } catch (err) {
          error = d.describe(err);
          if (isRefusal(err)) d.tokenRefused(source.token);
        }
        if (error !== lastError.get(source)) {
          if (error)
            d.log.warn(
              { login: source.label, error },
              'listing accounts failed; the last known list is kept',
            );
          else if (lastError.get(source)) d.log.info({ login: source.label }, 'listing accounts works again');
          lastError.set(source, error);
        }
      }),
    );
    const wanted = new Map<string, TokenSource>();
    for (const source of d.sources) {
      const listed = await inSlices(
        last.get(source) ?? [],
        (name) => {
          if (!wanted.has(name)) wanted.set(name, source.token);
        },
        d.slicing,
      );
      if (!listed) return;
    }
    const refused = new Map<AccountRefusal, string[]>();
    for (const byReason of lastRefused.values())
      for (const [why, list] of byReason) refused.set(why, (refused.get(why) ?? []).concat(list));
    d.refused(refused);
    d.apply(wanted);
  };
}

/** Element by element: no string of the whole list is built (100,000 names: megabytes). */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameRefusals(
  a: ReadonlyMap<AccountRefusal, string[]> | undefined,
  b: ReadonlyMap<AccountRefusal, string[]>,
): boolean {
  if ((a?.size ?? 0) !== b.size) return false;
  for (const [why, list] of b) if (!sameNames(a?.get(why) ?? [], list)) return false;
  return true;
}
