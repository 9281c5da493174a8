/**
 * One module of the API table (src/poll/api-module.ts) wired for one account as the exporter wires it, on a store
 * of its own: its sink under the caps given, its poller from the account's upstream with the configuration, body
 * parsers that note the codec asked for, and what the poller reports kept for the test to wait on. `startPoller`
 * runs a poller (src/poll/poller.ts) as the wiring runs it, until the test stops it.
 */
import { expect } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type AccountConfig, type Config, loadConfig } from '../../src/config/index.js';
import type { ApiName } from '../../src/http/errors.js';
import type { ApiModule, CapReport } from '../../src/poll/api-module.js';
import type { Poller, PollResult } from '../../src/poll/poller.js';
import type { Requester } from '../../src/poll/upstream.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Arrivals } from './arrivals.js';
import { inlineParsers } from './codec-trip.js';
import { Scrape } from './exposition.js';
import type { FakeClock } from './fake-clock.js';
import { captureLog } from './log-capture.js';

/** Starts `poller`; the function returned stops it and waits for it to end. */
export function startPoller(poller: Poller): () => Promise<void> {
  const stop = new AbortController();
  const running = poller.run(stop.signal);
  return async () => {
    stop.abort();
    await running;
  };
}

export function wireModule<Name extends ApiName, Sink, Rows>(
  module: ApiModule<Name, Sink, Rows>,
  o: { account: AccountConfig; upstream: Requester; clock: FakeClock; config: Config; maxSeries?: number },
) {
  const store = new SeriesStore();
  const limits = { maxSeries: o.maxSeries ?? 10_000, maxLabelLength: 1024, storeSize: () => store.size };
  const sink = module.sink({ store, limits });
  const { parsers, asked } = inlineParsers();
  const results: PollResult[] = [];
  const rounds = new Arrivals<[Rows, CapReport]>();
  const poller = module.poller(o.account, o.upstream, {
    clock: o.clock,
    log: captureLog().log,
    config: o.config,
    parse: parsers,
    sink,
    report: { result: (r) => results.push(r), answer: () => {} },
    rounded: (rows, caps) => rounds.push([rows, caps]),
  });
  return {
    store,
    sink,
    asked,
    results,
    rounds,
    scrape: () => Scrape.of(store.render('text').toString()),
    /** Runs `checks` while the poller runs; then stops it and waits for it to end, whether the checks passed or not. */
    async whileRunning(checks: () => Promise<void>): Promise<void> {
      const stop = startPoller(poller);
      try {
        await checks();
      } finally {
        await stop();
      }
    },
    /**
     * Moves the clock `intervalMs` on from the last round, a minute short of it first: no round comes before the
     * interval, the next one at it. What that round handed the board.
     */
    async nextRound(intervalMs: number): Promise<[Rows, CapReport]> {
      const n = rounds.all.length;
      await o.clock.advance(intervalMs - MINUTE);
      expect(rounds.all, 'a round before the interval').toHaveLength(n);
      await o.clock.advance(MINUTE);
      return rounds.nth(n + 1);
    },
    /** The account stopped, as the exporter stops it: the module's removeAccount on the sink. */
    removeAccount: () => module.removeAccount(sink, o.account),
  };
}

/**
 * The configuration as the loader makes it from `accounts` and the sections in `sections` (YAML), the token
 * `token`. A module does not read api.base_url (the account's upstream is given to it): it points nowhere.
 */
export function moduleConfig(token: string, sections: string, accounts: string): Config {
  const yaml = `api: { token: ${token}, base_url: 'http://127.0.0.1:9' }\n${sections}\naccounts:\n${accounts}`;
  return loadConfig({ file: 'config.yml', env: {}, readFile: () => yaml });
}
