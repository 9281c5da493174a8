/**
 * One module of the API table (src/poll/api-module.ts) wired for one account as the exporter wires it, on a store
 * of its own: its sink under the caps given, its poller from the account's upstream with the configuration, body
 * parsers that note the codec asked for, and what the poller reports kept for the test to wait on.
 */
import type { Clock } from '../../src/clock.js';
import { type AccountConfig, type Config, loadConfig } from '../../src/config/index.js';
import type { ApiName } from '../../src/http/errors.js';
import type { ApiModule, CapReport } from '../../src/poll/api-module.js';
import type { PollResult } from '../../src/poll/poller.js';
import type { Requester } from '../../src/poll/upstream.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Arrivals } from './arrivals.js';
import { inlineParsers } from './codec-trip.js';
import { Scrape } from './exposition.js';
import { captureLog } from './log-capture.js';

export function wireModule<Name extends ApiName, Sink, Rows>(
  module: ApiModule<Name, Sink, Rows>,
  o: { account: AccountConfig; upstream: Requester; clock: Clock; config: Config; maxSeries?: number },
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
  const stop = new AbortController();
  return {
    store,
    sink,
    asked,
    results,
    rounds,
    scrape: () => Scrape.of(store.render('text').toString()),
    /** Starts the poller; the function returned stops it and waits for it to end. */
    run(): () => Promise<void> {
      const running = poller.run(stop.signal);
      return async () => {
        stop.abort();
        await running;
      };
    },
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
