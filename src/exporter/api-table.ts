/**
 * The API table: every API the exporter polls in rounds, one module value each (the contract:
 * src/poll/api-module.ts). This file is the one place of the composition that names them (but ./sinks.ts, which
 * still makes their mappings: see openApis); the account pollers
 * (./account-pollers.ts), the status board (./status-board.ts) and the exporter (./exporter.ts) loop over the
 * table. Their order is the order their pollers start, their rows are listed and their families were registered.
 */
import type { AccountConfig } from '../config/index.js';
import { dvrModule } from '../dvr/module.js';
import type { ApiModule, ApiPollerDeps } from '../poll/api-module.js';
import type { Poller } from '../poll/poller.js';
import type { Requester } from '../poll/upstream.js';
import { recordingsModule } from '../recordings/module.js';
import type { Sinks } from './sinks.js';

export const API_TABLE = [dvrModule, recordingsModule] as const;

/** Every API with rows on the status board and cdn_up: traffic's (`metrics`), then the table's. */
export type Api = 'metrics' | (typeof API_TABLE)[number]['api'];
export const APIS: readonly Api[] = ['metrics', ...API_TABLE.map((m) => m.api)];

/** A module of the table with its sink: what the account pollers start, stop and report through. */
export interface OpenApi {
  readonly api: Exclude<Api, 'metrics'>;
  polls(account: AccountConfig): boolean;
  poller(
    account: AccountConfig,
    upstream: Requester,
    d: Omit<ApiPollerDeps<unknown, unknown>, 'sink'>,
  ): Poller;
  removeAccount(account: AccountConfig): void;
}

function open<Name extends Exclude<Api, 'metrics'>, Sink, Rows>(
  m: ApiModule<Name, Sink, Rows>,
  sink: Sink,
): OpenApi {
  return {
    api: m.api,
    polls: (account) => m.polls(account),
    poller: (account, upstream, d) => m.poller(account, upstream, { ...d, sink }),
    removeAccount: (account) => m.removeAccount(sink, account),
  };
}

/**
 * Each module of the table with the sink its pollers write into. The DVR and recordings mappings are still made
 * by ./sinks.ts (a family is registered once), so they are taken from there; once ./sinks.ts no longer makes
 * them, each module makes its own: `API_TABLE.map((m) => open(m, m.sink({ store, limits })))`, right after the
 * traffic pipeline, so the families keep their order on /metrics.
 */
export function openApis(sinks: Pick<Sinks, 'dvr' | 'recordings'>): OpenApi[] {
  return [open(dvrModule, sinks.dvr), open(recordingsModule, sinks.recordings)];
}
