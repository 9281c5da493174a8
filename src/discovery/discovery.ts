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
 * - One log line per change of a credential's outcome; the round never throws.
 */
import type { TokenSource } from '../config/token.js';
import type { Logger } from '../log.js';
import type { InventoryResponse } from './response.js';

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

export interface DiscoveryDeps {
  log: Logger;
  sources: readonly DiscoverySource[];
  filter: DiscoveryFilter;
  /** After every round: every wanted account and the credential to poll it with. */
  apply(wanted: Map<string, TokenSource>): void;
  /** Accounts kept from one credential's list (cdn_discovered_accounts). */
  count(label: string, n: number): void;
  /** Elements of an answer that could not be used (counted as parse errors). */
  issues(n: number): void;
  describe(err: unknown): string;
}

export function keeps(filter: DiscoveryFilter, name: string): boolean {
  return filter.include.test(name) && !(filter.exclude?.test(name) ?? false);
}

export function discoveryRound(d: DiscoveryDeps): () => Promise<void> {
  const last = new Map<DiscoverySource, string[]>();
  const lastError = new Map<DiscoverySource, string | undefined>();
  return async () => {
    await Promise.all(
      d.sources.map(async (source) => {
        let error: string | undefined;
        try {
          const res = await source.list();
          if (res.issues > 0) d.issues(res.issues);
          const names = res.accounts.filter((a) => a.active && keeps(d.filter, a.name)).map((a) => a.name);
          const before = last.get(source);
          last.set(source, names);
          d.count(source.label, names.length);
          if (!before || before.join('\n') !== names.join('\n'))
            d.log.info({ login: source.label, accounts: names }, 'discovered accounts');
        } catch (err) {
          error = d.describe(err);
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
      for (const name of last.get(source) ?? []) if (!wanted.has(name)) wanted.set(name, source.token);
    }
    d.apply(wanted);
  };
}
