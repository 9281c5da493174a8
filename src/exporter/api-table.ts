/**
 * The API table: every API the exporter polls in rounds, one module value each (the contract:
 * src/poll/api-module.ts). This file is the one place of the composition that names them; the account pollers
 * (./account-pollers.ts), the status board (./status-board.ts) and the exporter (./exporter.ts) loop over the
 * table. Their order is the order their pollers start, their rows are listed and their families are registered.
 */
import type { AccountConfig } from '../config/index.js';
import { dvrModule } from '../dvr/module.js';
import type { ApiModule, ApiPollerDeps, ApiSinkDeps } from '../poll/api-module.js';
import type { Poller } from '../poll/poller.js';
import type { Requester } from '../poll/upstream.js';
import { recordingsModule } from '../recordings/module.js';

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
  d: ApiSinkDeps,
): OpenApi {
  const sink = m.sink(d);
  return {
    api: m.api,
    polls: (account) => m.polls(account),
    poller: (account, upstream, pd) => m.poller(account, upstream, { ...pd, sink }),
    removeAccount: (account) => m.removeAccount(sink, account),
  };
}

/**
 * Each module of the table with the sink its pollers write into, made here once (each registers its families on
 * the store, in the table's order). The exporter opens them right after the traffic pipeline (./exporter.ts,
 * `openTraffic`), so the families keep their order on /metrics: traffic's, then the table's.
 */
export function openApis(d: ApiSinkDeps): OpenApi[] {
  return (API_TABLE as readonly ApiModule<Exclude<Api, 'metrics'>>[]).map((m) => open(m, d));
}
