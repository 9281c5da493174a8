/**
 * accounts_discovery: lists accounts with every credential the configuration names and starts or stops the
 * pollers of the accounts this shard owns to match (an explicitly listed account is never touched).
 */
import { LoginToken } from '../auth/login-token.js';
import type { AuthMetrics } from '../auth/metrics.js';
import type { Clock } from '../clock.js';
import type { AccountConfig, Config, TokenSource, TokenSources } from '../config/index.js';
import { type DiscoverySource, discoveryRound } from '../discovery/discovery.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { pollEvery } from '../poll/interval.js';
import type { SelfMetrics } from '../server/self-metrics.js';
import { accountsForShard } from '../sharding.js';
import type { Upstream } from './upstream.js';

export interface DiscoveredAccountsDeps {
  config: Pick<Config, 'accounts' | 'discovery' | 'sharding'>;
  clock: Clock;
  log: Logger;
  tokens: TokenSources;
  /** The upstream of a token source (one per source). */
  upstreamFor: (token: TokenSource) => Upstream;
  auth: () => AuthMetrics;
  self: Pick<SelfMetrics, 'parseErrors'>;
  /** Start or stop one account's pollers (./account-pollers.ts). */
  pollers: {
    start(account: AccountConfig, up: Upstream, discovered: boolean): void;
    stop(name: string): Promise<void>;
  };
  /** The exporter's stop signal: no account is started after it. */
  signal: AbortSignal;
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
  const sources: DiscoverySource[] = tokens.all.map((token) => {
    const up = d.upstreamFor(token);
    return { label: labelOf(token), token, list: () => up.call(() => up.inventory.listAccounts()) };
  });

  const apply = async (wanted: Map<string, TokenSource>): Promise<void> => {
    if (d.signal.aborted) return;
    const { shard, shards } = config.sharding;
    const mine = new Set(
      accountsForShard(
        [...wanted.keys()].filter((n) => !listed.has(n)).map((name) => ({ name })),
        shard,
        shards,
      ).map((a) => a.name),
    );
    for (const name of [...discovered]) {
      if (mine.has(name)) continue;
      discovered.delete(name);
      log.info({ account: name }, 'discovered account gone or inactive: polling stopped');
      await d.pollers.stop(name);
    }
    for (const name of mine) {
      if (discovered.has(name)) continue;
      discovered.add(name);
      const up = d.upstreamFor(wanted.get(name)!);
      log.info({ account: name }, 'discovered account: polling started');
      const account: AccountConfig = { name, dvrStreams: [], recordings: config.discovery.recordings };
      if (config.discovery.commit) account.commit = config.discovery.commit;
      d.pollers.start(account, up, true);
    }
  };

  let applying = Promise.resolve();
  const round = discoveryRound({
    log,
    sources,
    filter: config.discovery,
    count: (label, n) => d.auth().discovered.set({ login: label }, n),
    issues: (n) => d.self.parseErrors.inc({ api: 'inventory' }, n),
    describe: describeError,
    apply: (wanted) => {
      applying = applying.then(() => apply(wanted));
    },
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
