/**
 * One API as the exporter sees it, in the spirit of blackbox_exporter's prober map: an API folder exports ONE
 * value of this shape (src/dvr/module.ts, src/recordings/module.ts) and the table of them
 * (src/exporter/api-table.ts) is all the composition knows of it. The exporter makes each module's sink once,
 * starts its poller for every account the module `polls`, shows its rows on the status board and removes an
 * account's series through it when the account stops; it names no API.
 *
 * Traffic is not a module of the table: its poller walks windows under a cursor the state file keeps, its
 * counters outlive a stopped account, and its windows go on to the settled writer and the landing page's history
 * (src/traffic/pipeline.ts, wired by src/exporter/account-pollers.ts and src/exporter/exporter.ts).
 */
import type { Clock } from '../clock.js';
import type { AccountConfig, Config } from '../config/index.js';
import type { ApiName } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { RefusalReason, SeriesLimits } from '../store/limits.js';
import type { SeriesStoreApi } from '../store/types.js';
import type { Poller, PollReporter } from './poller.js';
import type { Requester } from './upstream.js';

/**
 * What the table needs of a module's codec (the whole contract: AnswerCodec, src/offloop/packing.ts): the inline
 * parser, and which API and module it is, for the parse worker (src/offloop/worker.ts).
 */
export interface ApiCodec<Arg = never, Answer = unknown> {
  readonly api: ApiName;
  readonly module: string;
  parse(bytes: Uint8Array, arg: Arg): Answer;
}

/** Makes a codec's body parser, big answers off the event loop (src/offloop/pool.ts's ParsePool). */
export interface BodyParsers {
  parser<Arg, Answer>(codec: ApiCodec<Arg, Answer>): (bytes: Uint8Array, arg: Arg) => Promise<Answer>;
}

/** What a round's mapping refused under the series caps, and the label values it cut (parse errors of the API). */
export interface CapReport {
  refused?: Partial<Record<RefusalReason, number>>;
  truncated?: number;
}

/** What the exporter gives an account's poller of a module. */
export interface ApiPollerDeps<Sink, Rows> {
  clock: Clock;
  /** The account's logger (a child carrying `account`). */
  log: Logger;
  /** The configuration: a module reads its own section (its interval). */
  config: Config;
  /** Makes the module's body parser from its codec, big answers off the event loop (default: inline). */
  parse?: BodyParsers;
  /** What the module's `sink` made, shared by every account. */
  sink: Sink;
  /** Where each round's outcome and every answer go (cdn_up, the status board, the token re-read, the audit). */
  report: PollReporter;
  /** After every round: the account's rows for the status board, and what the caps refused in it. */
  rounded(rows: Rows, caps: CapReport): void;
}

/** The store and the caps a module's sink is made with. */
export interface ApiSinkDeps {
  store: SeriesStoreApi;
  /** The configuration's `limits`, with the store's size now. */
  limits: SeriesLimits;
}

/**
 * One problem table of the landing page (a key of `problems` in src/server/status.ts's ExporterStatus: the API
 * table checks it), filled from every account's last rows of the module.
 */
export interface ApiProblems<Rows, Table extends string = string> {
  table: Table;
  /** The problems of every account's last rows (account -> rows, in the order accounts first reported). */
  problems(rows: ReadonlyMap<string, Rows>): readonly unknown[];
}

export interface ApiModule<Name extends ApiName = ApiName, Sink = unknown, Rows = unknown> {
  /** The API's name: cdn_up{api}, cdn_api_requests_total{api}, the status board's rows, log lines. */
  readonly api: Name;
  /** How its answers cross from the parse worker (src/offloop/worker.ts). */
  readonly codec: ApiCodec;
  /** Its families on the store, and what every account's poller writes into them through; made once. */
  sink(d: ApiSinkDeps): Sink;
  /** The account asks for this API (its configuration names streams, turns it on, ...). */
  polls(account: AccountConfig): boolean;
  /** The account's poller (src/poll/poller.ts), made from its upstream. */
  poller(account: AccountConfig, upstream: Requester, d: ApiPollerDeps<Sink, Rows>): Poller;
  /** The account is no longer polled: every series of it goes. Called for every account stopped. */
  removeAccount(sink: Sink, account: AccountConfig): void;
  /** Its table of problems on the landing page, if it has one (none: its rows are only kept, not listed). */
  readonly problems?: ApiProblems<Rows>;
}
