/**
 * The exporter without the process: the composition root. Configuration in; one upstream per token source (a fixed
 * token or a login, src/auth: ./upstreams.ts), each account's pollers made from its upstream (./account-pollers.ts:
 * src/traffic/pipeline.ts and the modules of the API table, ./api-table.ts), account discovery
 * (./discovered-accounts.ts), the status board, the cursor book, the series store, the registry and the HTTP app
 * out. It wires them and does nothing else. `main` owns listen, signals and shutdown; tests build an Exporter on a
 * fake clock and a loopback simulator.
 */
import type { Express } from 'express';
import { Registry } from 'prom-client';
import type { Agent } from 'undici';
import { type AuthMetrics, createAuthMetrics } from '../auth/metrics.js';
import { GapsRecorder, gapsPath } from '../backfill/gaps.js';
import { type Clock, MINUTE, systemClock } from '../clock.js';
import {
  type Config,
  METRIC_NAMES,
  type TokenFs,
  type TokenSource,
  type TokenSources,
  tokenSources,
} from '../config/index.js';
import { AnswerAudit } from '../http/answers.js';
import { type AgentOptions, createAgent } from '../http/request.js';
import type { Logger } from '../log.js';
import { ANSWER_POOL, ParsePool, type ParsePoolOptions, TRAFFIC_POOL } from '../offloop/pool.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { createApp } from '../server/app.js';
import { CommitMetrics } from '../server/commit-metrics.js';
import { createSelfMetrics, type SelfMetrics } from '../server/self-metrics.js';
import type { ExporterStatus } from '../server/status.js';
import { TrafficHistory } from '../server/traffic-history.js';
import { type Settled, startSettled } from '../settled/index.js';
import { accountsForShard } from '../sharding.js';
import { tieStateFile } from '../state-file/checkpoints.js';
import { CursorBook } from '../state-file/cursor-book.js';
import { SeriesStore } from '../store/series-store.js';
import type { TrafficBodyParser } from '../traffic/client.js';
import { CountingLedger } from '../traffic/counting-ledger.js';
import { TrafficPipeline, type TrafficPipelineOptions } from '../traffic/pipeline.js';
import { RankingSaver, RankingStateFile, rankingStatePath } from '../traffic/ranking-state.js';
import { AUTH_BACKOFF, TRAFFIC_BACKOFF } from '../traffic/retry-decision.js';
import type { AccountWalker } from '../traffic/walker.js';
import { AccountPollers } from './account-pollers.js';
import { APIS, type Api, openApis } from './api-table.js';
import { startDiscovery } from './discovered-accounts.js';
import { lastResortGc, ShrinkReclaim } from './reclaim.js';
import { settledWithin } from './settle.js';
import { StatusBoard, settingsSummary } from './status-board.js';
import { Upstreams } from './upstreams.js';

export { APIS, type Api };

export interface ExporterOptions {
  config: Config;
  log: Logger;
  version: string;
  clock?: Clock;
  random?: () => number;
  tokenFs?: TokenFs;
  agent?: AgentOptions;
  /** prom-client's process and Node.js metrics (default on). */
  defaultMetrics?: boolean;
  /** Where big traffic answers are parsed (default: a worker thread, src/offloop/pool.ts). */
  trafficParser?: ParsePoolOptions;
  /** Where big answers of the table's APIs and of the inventory are parsed (default: a worker thread of their own). */
  answerParser?: ParsePoolOptions;
  /**
   * Longest slice of work between two yields to the event loop while accounts are discovered, started or stopped
   * (default SLICE_MS, src/discovery/slices.ts; tests: 0, a yield after every account).
   */
  sliceMs?: number;
  /** Retries of failed traffic windows (default TRAFFIC_BACKOFF, src/traffic/retry-decision.ts). */
  backoff?: BackoffPolicy;
  /** Probing while a token is refused (default AUTH_BACKOFF, src/traffic/retry-decision.ts). */
  authBackoff?: BackoffPolicy;
}

export class Exporter {
  readonly registry = new Registry();
  readonly store: SeriesStore;
  readonly self: SelfMetrics;
  readonly app: Express;
  readonly accounts: readonly string[];
  /** The landing page's per-account traffic history (memory only). */
  readonly history = new TrafficHistory();

  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly config: Config;
  private readonly agent: Agent;
  private readonly parser: ParsePool;
  private readonly answerParser: ParsePool;
  /** One upstream per token source, and every login the configuration names (./upstreams.ts). */
  private readonly upstreams: Upstreams;
  private readonly board: StatusBoard;
  private readonly cursors: CursorBook;
  private readonly audit: AnswerAudit;
  private readonly controller = new AbortController();
  private loops: Promise<void>[] = [];
  /** What every account's traffic poller writes into (src/traffic/pipeline.ts); made in start(). */
  private traffic: TrafficPipeline | undefined;
  /** Each polled account's pollers (./account-pollers.ts); made in start(). */
  private pollers: AccountPollers | undefined;
  private readonly tokens: TokenSources;
  private authMetrics: AuthMetrics | undefined;
  /** The settled writer (remote_write); made in start(). */
  private settled: Settled | undefined;
  /** The spans skipped for good (with state_file); made in start(). */
  private gaps: GapsRecorder | undefined;
  /** The ranking of limits.top_resources, written beside the state file (src/traffic/ranking-state.ts). */
  private rankingSaver: RankingSaver | undefined;

  /** The walkers of the accounts now polled, with their cursors. */
  get walkers(): readonly AccountWalker[] {
    return this.pollers?.walkers ?? [];
  }

  /** The login metrics, registered on first use: an exporter with fixed tokens and no discovery has none. */
  get auth(): AuthMetrics {
    this.authMetrics ??= createAuthMetrics(this.registry);
    return this.authMetrics;
  }

  constructor(private readonly opts: ExporterOptions) {
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    // The store refreshes itself when a family is written; a failed refresh is logged.
    this.store = new SeriesStore({ clock: this.clock, refreshLog: opts.log });
    this.log = opts.log;
    this.self = createSelfMetrics(this.registry, {
      version: opts.version,
      apis: APIS,
      defaultMetrics: opts.defaultMetrics,
    });
    // After a change of the store: memory given back after a shrink (a last-resort GC, and the idle traffic parse
    // worker dropped), and the ranking of top resources saved.
    const reclaim = new ShrinkReclaim({
      clock: this.clock,
      log: this.log,
      signal: this.controller.signal,
      size: () => this.store.size,
      reclaim: () => {
        this.parser.recycle();
        lastResortGc();
      },
    });
    this.store.onChange = () => {
      reclaim.changed();
      this.rankingSaver?.changed();
    };
    this.audit = new AnswerAudit((api, n) => this.self.parseErrors.inc({ api }, n));
    this.agent = createAgent({
      headersTimeoutMs: this.config.api.timeoutMs,
      bodyTimeoutMs: this.config.api.timeoutMs,
      ...opts.agent,
    });
    const { accounts, sharding } = this.config;
    const owned = accountsForShard(accounts, sharding.shard, sharding.shards);
    this.accounts = owned.map((a) => a.name);
    const summary = settingsSummary(this.config, owned.length);
    this.board = new StatusBoard(this.self, this.clock, opts.version, summary);
    this.parser = new ParsePool(TRAFFIC_POOL, { log: this.log, ...opts.trafficParser });
    this.answerParser = new ParsePool(ANSWER_POOL, { log: this.log, ...opts.answerParser });
    this.upstreams = new Upstreams({
      api: this.config.api,
      clock: this.clock,
      log: this.log,
      agent: this.agent,
      signal: this.controller.signal,
      self: this.self,
      auth: () => this.auth,
      random: opts.random,
      tokenFs: opts.tokenFs,
    });
    this.tokens = tokenSources(this.config, opts.tokenFs, (c) => this.upstreams.createLogin(c));
    // The request gates of every upstream, those made later for discovered accounts included.
    this.self.trackQueueLength(() => this.upstreams.queueLength());
    this.cursors = new CursorBook(
      this.config.stateFile,
      this.log,
      () => this.self.stateSaveFailures.inc(),
      this.clock,
    );
    this.app = createApp({
      registry: this.registry,
      store: this.store,
      beforeServe: (counted) => this.cursors.commit(counted),
      status: () => this.status(),
      history: this.history,
      log: this.log,
      maxScrapesInFlight: this.config.server.maxScrapesInFlight,
      // Every token and password is in the registry of src/redact.ts: the token sources and the logins register
      // each one as they read it (a login every token issued to it), and the app's pages are redacted with it.
      clock: this.clock,
    });
  }

  /** Starts every poll loop; resolves once they are running (not when they end). */
  async start(): Promise<void> {
    const loaded = await this.cursors.load({
      now: this.clock.now(),
      maxCatchUpMs: Math.max(this.config.metrics.lookbackMs, this.config.metrics.maxCatchUpMs),
    });
    // A process before this one may have sent requests in the second before it died: they count against the rate.
    if (loaded.existed) this.upstreams.tookOver(this.clock.now());
    else await this.cursors.claim(loaded.existed);
    // A bad state file is also shown on the landing page until the process restarts.
    this.board.problemsAtStart(...loaded.problems);
    this.board.markStarted();
    const { config, log } = this;
    const signal = this.controller.signal;
    // Logins first (those this replica uses), so the pollers' first requests carry a token.
    const tokenOf = (account: string) => this.tokens.accounts.get(account)!;
    const used = new Set<TokenSource>(this.accounts.map(tokenOf));
    if (config.discovery.enabled) for (const t of this.tokens.all) used.add(t);
    await this.upstreams.startLogins(used, signal, (loop) => this.loops.push(loop));
    const traffic = this.openTraffic();
    this.traffic = traffic;
    // Right after the traffic pipeline: each module of the API table registers its families, in the table's order.
    const apis = openApis({
      store: this.store,
      limits: { ...config.limits, storeSize: () => this.store.size },
    });
    // The ranking of limits.top_resources continues from its file, before any window is counted.
    const ranking = traffic.ranking;
    if (ranking && config.stateFile) {
      const file = new RankingStateFile(rankingStatePath(config.stateFile));
      const saved = await file.load(ranking.periodMs, this.clock.now(), log);
      if (saved) ranking.restore(saved);
      this.rankingSaver = new RankingSaver(file, () => ranking.saved(), {
        everyMs: MINUTE,
        now: () => this.clock.now(),
        log,
      });
    }
    // Settled windows written with their own timestamps (remote_write): started before the pollers hand any over.
    const settled = await startSettled(config, {
      clock: this.clock,
      log,
      registry: this.registry,
      version: this.opts.version,
      random: this.opts.random,
      fold: (account, resource, records) => traffic.mapping.foldOf(account, resource, records),
    });
    this.settled = settled;
    if (settled) this.loops.push(settled.run(signal));
    // The pages fold as /metrics and the settled series do: the resources out of the top N are one row.
    this.history.foldBy((account, resource, records) => traffic.mapping.foldOf(account, resource, records));
    // Spans skipped for good, listed beside the state file for `backfill --gaps` (docs/backfill.md). A span the
    // settled writer reads itself (it has a cursor for the account) is not a gap of the settled series.
    const gaps = config.stateFile
      ? await GapsRecorder.open(gapsPath(config.stateFile), { clock: this.clock, log })
      : undefined;
    this.gaps = gaps;
    const ownCursor = settled?.writer.savedState().accounts;
    for (const [account, { from, to }] of loaded.clamped)
      if (!ownCursor?.has(account)) gaps?.record(account, from, to, 'catch_up_limit');
    const pollers = new AccountPollers({
      traffic,
      apis,
      board: this.board,
      cursors: this.cursors,
      clamped: loaded.clamped,
      clock: this.clock,
      log,
      random: this.opts.random,
      config,
      parse: this.answerParser,
      self: this.self,
      commits: new CommitMetrics(this.registry),
      history: this.history,
      ...(settled ? { settled: settled.writer } : {}),
      ...(gaps ? { gaps } : {}),
      audit: this.audit,
      signal,
      track: (loop) => this.loops.push(loop),
      sliceMs: this.opts.sliceMs,
    });
    this.pollers = pollers;
    for (const account of config.accounts.filter((a) => this.accounts.includes(a.name))) {
      pollers.start(account, this.upstreams.for(tokenOf(account.name)), false);
    }
    if (config.discovery.enabled)
      this.loops.push(
        startDiscovery({
          config,
          clock: this.clock,
          log,
          tokens: this.tokens,
          upstreamFor: (token) => this.upstreams.for(token),
          parse: this.answerParser,
          auth: () => this.auth,
          self: this.self,
          pollers,
          signal,
          sliceMs: this.opts.sliceMs,
        }),
      );
    log.info(
      { accounts: this.accounts, shard: config.sharding.shard, shards: config.sharding.shards },
      'polling started',
    );
    if (this.accounts.length === 0 && !config.discovery.enabled) {
      // Ready and empty is a valid state (more shards than accounts need one), but rarely the intended one.
      log.warn(
        { configured: config.accounts.length, shard: config.sharding.shard, shards: config.sharding.shards },
        'this shard owns none of the configured accounts: it polls nothing',
      );
    }
  }

  /**
   * Stops polling within about `graceMs` + 1 s of real time: nothing new is sent, requests in flight get up to
   * `graceMs` to finish and their windows are counted (the app keeps serving meanwhile), the rest are cancelled.
   * Then one last checkpoint (CursorBook.close): the next run continues from everything counted.
   */
  async stop(graceMs = 5000): Promise<void> {
    const until = Date.now() + graceMs;
    this.controller.abort();
    const settled = Promise.allSettled(this.loops);
    if (!(await settledWithin(settled, graceMs)))
      this.log.warn({ graceMs }, 'requests still in flight at shutdown: cancelled');
    // Each step bounded: a closing agent or worker that hangs must not hold the process past its bound.
    await settledWithin(this.agent.destroy(), 250);
    await settledWithin(settled, 250);
    await settledWithin(this.parser.close(), 250);
    await settledWithin(this.answerParser.close(), 250);
    // Counting what the applier holds helps only a scrape that still comes; never past the grace.
    const traffic = this.traffic;
    if (traffic) await settledWithin(traffic.idle(), Math.max(0, until - Date.now()));
    // Windows queued for the receiver get what is left of the grace; the acknowledged state is saved. What is
    // still queued is read again by the next run (src/settled/writer.ts).
    if (this.settled)
      await settledWithin(
        this.settled.close(this.clock.now() + Math.max(0, until - Date.now())),
        Math.max(250, until - Date.now() + 250),
      );
    await settledWithin(this.cursors.close(), 250);
    if (this.gaps) await settledWithin(this.gaps.flush(), 250);
    if (this.rankingSaver) await settledWithin(this.rankingSaver.flush(), 250);
  }

  /**
   * The traffic pipeline from `metrics`, `api` and `limits`, counting under traffic's ledger inside the store's
   * render lock (each exposition shows whole windows and carries their counted cursors), its counters and revisits
   * restored from the cursor book and tied to its checkpoints (src/state-file/checkpoints.ts). Traffic is not a
   * module of the API table: docs/architecture.md, "The API table", says why.
   */
  private openTraffic(): TrafficPipeline {
    const { config, store, cursors } = this;
    const traffic = new TrafficPipeline(
      store,
      trafficOptions(config, () => store.size, {
        backoff: this.opts.backoff,
        authBackoff: this.opts.authBackoff,
        parse: this.parser.traffic,
      }),
      new CountingLedger(store),
    );
    tieStateFile({
      store,
      traffic,
      cursors,
      now: this.clock.now(),
      stateFile: config.stateFile !== undefined,
    });
    return traffic;
  }

  status(): ExporterStatus {
    return this.board.status();
  }
}

/**
 * The traffic pipeline's options from the configuration's `metrics`, `api` and `limits`; `storeSize` is the series
 * store's size now (the caps read it). Defaults: TRAFFIC_BACKOFF and AUTH_BACKOFF, parsing inline.
 */
export function trafficOptions(
  config: Pick<Config, 'metrics' | 'api' | 'limits'>,
  storeSize: () => number,
  o: Pick<ExporterOptions, 'backoff' | 'authBackoff'> & { parse?: TrafficBodyParser } = {},
): TrafficPipelineOptions {
  const { metrics } = config;
  return {
    breakdown: metrics.breakdown,
    windowGauges: metrics.windowGauges,
    metrics: metrics.metrics,
    allMetrics: METRIC_NAMES,
    resources: metrics.resources,
    windowMs: metrics.windowMs,
    delayMs: metrics.delayMs,
    lookbackMs: metrics.lookbackMs,
    revisitMs: metrics.revisitMs,
    counterRetentionMs: metrics.counterRetentionMs,
    maxInFlight: Math.max(1, config.api.concurrency),
    backoff: o.backoff ?? TRAFFIC_BACKOFF,
    authBackoff: o.authBackoff ?? AUTH_BACKOFF,
    limits: { ...config.limits, storeSize },
    parse: o.parse,
  };
}
