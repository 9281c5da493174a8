/**
 * accounts_discovery: lists accounts with every credential the configuration names and starts or stops the
 * pollers of the accounts this shard owns to match (an explicitly listed account is never touched).
 *
 * Bounds (an inventory may list 100,000 accounts, by mistake or worse):
 * - at most `accounts_discovery.max_accounts` discovered accounts are polled by this replica: sorted by name, the
 *   first are kept, the rest refused (`max_accounts`), counted in cdn_discovered_accounts_refused and logged once
 *   per change;
 * - starting and stopping N accounts costs O(N), done in slices of SLICE_MS with a yield to the event loop
 *   between (so /healthz and /metrics answer meanwhile), and ends at the exporter's stop whatever is left;
 * - log lines name how many accounts started or stopped and a few of them, not one line per account.
 */
import { LoginToken } from '../auth/login-token.js';
import type { AuthMetrics } from '../auth/metrics.js';
import type { Clock } from '../clock.js';
import type { AccountConfig, Config, TokenSource, TokenSources } from '../config/index.js';
import { InventoryClient } from '../discovery/client.js';
import { inventoryParser } from '../discovery/codec.js';
import {
  ACCOUNT_REFUSALS,
  type AccountRefusal,
  type DiscoverySource,
  discoveryRound,
  someNames,
} from '../discovery/discovery.js';
import { inSlices, type Slicing, sortedInSlices } from '../discovery/slices.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { BodyParsers } from '../poll/api-module.js';
import { pollEvery } from '../poll/interval.js';
import type { Upstream } from '../poll/upstream.js';
import type { SelfMetrics } from '../server/self-metrics.js';
import { shardOf } from '../sharding.js';
import { rereadToken } from './token-refresh.js';

export interface DiscoveredAccountsDeps {
  config: Pick<Config, 'accounts' | 'discovery' | 'sharding' | 'limits'>;
  clock: Clock;
  log: Logger;
  tokens: TokenSources;
  /** The upstream of a token source (one per source). */
  upstreamFor: (token: TokenSource) => Upstream;
  /** Reads inventory answers, big ones off the event loop (default: inline; src/offloop/pool.ts). */
  parse?: BodyParsers;
  auth: () => AuthMetrics;
  self: Pick<SelfMetrics, 'parseErrors'>;
  /** Start or stop one account's pollers (./account-pollers.ts). */
  pollers: {
    start(account: AccountConfig, up: Upstream, discovered: boolean): void;
    stop(name: string): Promise<void>;
    /** Forgets what is kept for accounts stopped longer than `metrics.counter_retention` ago. */
    forgetAway(): void;
  };
  /** The exporter's stop signal: no account is started after it. */
  signal: AbortSignal;
  /** Longest slice of work between two yields to the event loop (default SLICE_MS; tests: 0). */
  sliceMs?: number;
}

/** Starts the discovery loop; returns it (it ends when `signal` aborts). */
export function startDiscovery(d: DiscoveredAccountsDeps): Promise<void> {
  const { config, clock, tokens } = d;
  /** Accounts polled because discovery found them (not listed in the configuration). */
  const discovered = new Set<string>();
  const listed = new Set(config.accounts.map((a) => a.name));
  const log = d.log.child({ api: 'inventory' });
  const labelOf = (token: TokenSource): string => {
    if (token instanceof LoginToken) return token.username;
    if (token === tokens.api) return 'token';
    const owner = [...tokens.accounts].find(([, t]) => t === token)?.[0];
    return owner === undefined ? 'token' : `token:${owner}`;
  };
  const parseInventory = d.parse && inventoryParser(d.parse);
  const sources: DiscoverySource[] = tokens.all.map((token) => {
    const inventory = new InventoryClient(d.upstreamFor(token), parseInventory);
    return { label: labelOf(token), token, list: () => inventory.listAccounts() };
  });

  let refusedByCap: string[] = [];
  let loggedCap = '';
  /** The last round's refusals by name (from the round); the cap's are `refusedByCap` (from apply). */
  let byName: ReadonlyMap<AccountRefusal, string[]> = new Map();
  const setRefused = () => {
    const gauge = d.auth().refusedAccounts;
    for (const reason of ACCOUNT_REFUSALS) {
      const n = reason === 'max_accounts' ? refusedByCap.length : (byName.get(reason)?.length ?? 0);
      gauge.set({ reason }, n);
    }
  };
  const slicing: Slicing = { signal: d.signal, sliceMs: d.sliceMs };
  const apply = async (wanted: Map<string, TokenSource>): Promise<void> => {
    const { shard, shards } = config.sharding;
    const owned: string[] = [];
    const read = await inSlices(
      wanted.keys(),
      (name) => {
        if (!listed.has(name) && (shards === 1 || shardOf(name, shards) === shard)) owned.push(name);
      },
      slicing,
    );
    if (!read) return;
    const max = config.discovery.maxAccounts;
    let mine = owned;
    refusedByCap = [];
    if (owned.length > max) {
      const sorted = await sortedInSlices(owned, slicing);
      if (!sorted) return;
      mine = sorted.slice(0, max);
      refusedByCap = sorted.slice(max);
    }
    setRefused();
    const capText = refusedByCap.length === 0 ? '' : `${refusedByCap.length}:${refusedByCap[0]}`;
    if (capText !== loggedCap) {
      loggedCap = capText;
      if (refusedByCap.length > 0)
        log.warn(
          { max_accounts: max, refused: refusedByCap.length, examples: someNames(refusedByCap) },
          'more discovered accounts than accounts_discovery.max_accounts: the rest are not polled',
        );
    }
    const keep = new Set<string>();
    if (!(await inSlices(mine, (name) => keep.add(name), slicing))) return;
    const gone: string[] = [];
    if (!(await inSlices(discovered, (name) => keep.has(name) || gone.push(name), slicing))) return;
    await inSlices(
      gone,
      async (name) => {
        discovered.delete(name);
        await d.pollers.stop(name);
      },
      slicing,
    );
    if (gone.length > 0)
      log.info(
        { count: gone.length, accounts: someNames(gone) },
        'discovered accounts gone, inactive or refused: polling stopped',
      );
    const started: string[] = [];
    await inSlices(
      mine,
      (name) => {
        if (discovered.has(name)) return;
        discovered.add(name);
        started.push(name);
        const up = d.upstreamFor(wanted.get(name)!);
        const account: AccountConfig = { name, dvrStreams: [], recordings: config.discovery.recordings };
        if (config.discovery.commit) account.commit = config.discovery.commit;
        d.pollers.start(account, up, true);
      },
      slicing,
    );
    if (started.length > 0)
      log.info(
        { count: started.length, accounts: someNames(started) },
        'discovered accounts: polling started',
      );
    d.pollers.forgetAway();
  };

  let applying = Promise.resolve();
  const round = discoveryRound({
    log,
    sources,
    filter: config.discovery,
    maxNameLength: config.limits.maxLabelLength,
    refused: (r) => {
      byName = r;
      setRefused();
    },
    count: (label, n) => d.auth().discovered.set({ login: label }, n),
    issues: (n) => d.self.parseErrors.inc({ api: 'inventory' }, n),
    describe: describeError,
    slicing,
    apply: (wanted) => {
      applying = applying.then(() => apply(wanted));
    },
    tokenRefused: (token) => rereadToken(token, log),
  });
  return pollEvery(
    config.discovery.intervalMs,
    clock,
    d.signal,
    async () => {
      await round();
      await applying;
    },
    log,
  );
}
