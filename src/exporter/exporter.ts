/**
 * The exporter without the process: the composition root. Configuration in; one upstream per token, one
 * TrafficPipeline (src/traffic/poller.ts) with a poller per account, the DVR and recordings rounds, the status
 * board, the cursor book, the series store, the registry and the HTTP app out. It wires them and does nothing else.
 * `main` owns listen, signals and shutdown; tests build an Exporter on a fake clock and a loopback simulator.
 */
import type { Express } from 'express';
import { Registry } from 'prom-client';
import type { Agent } from 'undici';
import { type Clock, MINUTE, systemClock } from '../clock.js';
import { accountTokenSources, type Config, METRIC_NAMES, type TokenFs } from '../config/index.js';
import { createDvrFamilies } from '../dvr/metrics.js';
import { DvrProcess } from '../dvr/process.js';
import { AnswerAudit } from '../http/answers.js';
import { isRefusal } from '../http/errors.js';
import { type AgentOptions, createAgent } from '../http/request.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { pollEvery } from '../poll/interval.js';
import { createRecordingFamilies } from '../recordings/metrics.js';
import { RecordingsProcess } from '../recordings/process.js';
import { createApp } from '../server/app.js';
import { createSelfMetrics, type SelfMetrics } from '../server/self-metrics.js';
import type { ExporterStatus } from '../server/status.js';
import { accountsForShard } from '../sharding.js';
import { refreshSoon } from '../store/refresh-soon.js';
import { SeriesStore } from '../store/series-store.js';
import { type WorkerParserOptions, WorkerTrafficParser } from '../traffic/parse-pool.js';
import { TrafficPipeline } from '../traffic/poller.js';
import { CursorBook } from './cursor-book.js';
import { dvrRound, type RoundReporter, recordingsRound } from './pollers.js';
import { APIS, type Api, StatusBoard } from './status-board.js';
import { rereadToken } from './token-refresh.js';
import { createUpstream, type Upstream } from './upstream.js';

export { APIS, type Api };

export interface ExporterOptions {
  config: Config;
  log: Logger;
  version: string;
  clock?: Clock;
  random?: () => number;
  /** Retries of failed traffic windows (default 1 s doubling to 2 min, full jitter). */
  backoff?: BackoffPolicy;
  /** Probing while a token is refused (default 1 min doubling to 10 min). */
  authBackoff?: BackoffPolicy;
  tokenFs?: TokenFs;
  agent?: AgentOptions;
  /** prom-client's process and Node.js metrics (default on). */
  defaultMetrics?: boolean;
  /** Where big traffic answers are parsed (default: a worker thread, src/traffic/parse-pool.ts). */
  trafficParser?: WorkerParserOptions;
}

export class Exporter {
  readonly registry = new Registry();
  readonly store = new SeriesStore();
  readonly self: SelfMetrics;
  readonly app: Express;
  readonly accounts: readonly string[];

  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly config: Config;
  private readonly agent: Agent;
  private readonly parser: WorkerTrafficParser;
  private readonly upstreams = new Map<string, Upstream>();
  private readonly board: StatusBoard;
  private readonly cursors: CursorBook;
  private readonly audit: AnswerAudit;
  private readonly storeChanged: () => void;
  private readonly controller = new AbortController();
  private loops: Promise<void>[] = [];
  private traffic: TrafficPipeline | undefined;

  constructor(private readonly opts: ExporterOptions) {
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
    this.self = createSelfMetrics(this.registry, {
      version: opts.version,
      apis: APIS,
      defaultMetrics: opts.defaultMetrics,
    });
    this.board = new StatusBoard(this.self, this.clock, opts.version);
    this.storeChanged = refreshSoon(this.store, this.log);
    this.audit = new AnswerAudit((api, n) => this.self.parseErrors.inc({ api }, n));
    this.agent = createAgent({
      headersTimeoutMs: this.config.api.timeoutMs,
      bodyTimeoutMs: this.config.api.timeoutMs,
      ...opts.agent,
    });
    const owned = accountsForShard(
      this.config.accounts,
      this.config.sharding.shard,
      this.config.sharding.shards,
    );
    this.accounts = owned.map((a) => a.name);
    this.parser = new WorkerTrafficParser({ log: this.log, ...opts.trafficParser });
    const tokens = accountTokenSources(this.config, opts.tokenFs);
    for (const account of owned) {
      const token = tokens.get(account.name)!;
      let upstream = [...this.upstreams.values()].find((u) => u.token === token);
      upstream ??= createUpstream(token, {
        baseUrl: this.config.api.baseUrl,
        requestsPerSecond: this.config.api.requestsPerSecond,
        concurrency: this.config.api.concurrency,
        clock: this.clock,
        agent: this.agent,
        signal: this.controller.signal,
        onRequest: (api, code, seconds) =>
          this.self.observeRequest(api, code === 'error' ? 'error' : Number(code), seconds),
        // An answer that is not JSON, or not of the documented shape, is a parse error of its API.
        onError: (err) => {
          if (err.kind === 'malformed') this.self.parseErrors.inc({ api: err.api });
        },
        parseTraffic: this.parser.parse,
      });
      this.upstreams.set(account.name, upstream);
    }
    const gates = new Set([...this.upstreams.values()].map((u) => u.gate));
    this.self.trackQueueLength(() => {
      let n = 0;
      for (const g of gates) n += g.length;
      return n;
    });
    this.cursors = new CursorBook(this.config.stateFile, this.log);
    this.app = createApp({
      registry: this.registry,
      store: this.store,
      status: () => this.status(),
      log: this.log,
      secrets: () =>
        [...new Set([...this.upstreams.values()].map((u) => safeToken(u)))].filter((t) => t !== ''),
      clock: this.clock,
    });
  }

  /** Starts every poll loop; resolves once they are running (not when they end). */
  async start(): Promise<void> {
    await this.cursors.load();
    this.board.markStarted();
    const { config, clock, log, board } = this;
    const signal = this.controller.signal;
    const traffic = new TrafficPipeline(this.store, {
      breakdown: config.metrics.breakdown,
      windowGauges: config.metrics.windowGauges,
      metrics: config.metrics.metrics,
      allMetrics: METRIC_NAMES,
      resources: config.metrics.resources,
      windowMs: config.metrics.windowMs,
      delayMs: config.metrics.delayMs,
      lookbackMs: config.metrics.lookbackMs,
      revisitMs: config.metrics.revisitMs,
      maxInFlight: Math.max(1, config.api.concurrency),
      backoff: this.opts.backoff ?? { baseMs: 1000, capMs: 120_000 },
      authBackoff: this.opts.authBackoff ?? { baseMs: MINUTE, capMs: 10 * MINUTE },
    });
    this.traffic = traffic;
    traffic.restoreRevisits(this.cursors.loadedRevisits, clock.now());
    if (traffic.book) this.cursors.revisits = () => traffic.savedRevisits();
    const dvr = new DvrProcess(createDvrFamilies(this.store));
    const recordings = new RecordingsProcess(createRecordingFamilies(this.store));

    for (const account of config.accounts.filter((a) => this.accounts.includes(a.name))) {
      const name = account.name;
      const up = this.upstreams.get(name)!;
      const alog = log.child({ account: name });
      const poller = traffic.poller(name, {
        clock,
        log: alog,
        random: this.opts.random,
        startCursor: this.cursors.get(name),
        fetchTraffic: (o, priority) => up.call(() => up.metrics.fetchTraffic(o), priority),
        onStatus: (s) => {
          board.walker(s);
          this.cursors.record(s.account, s.cursor);
        },
        audit: (answer, dropped) => this.audit.check('metrics', alog, answer, dropped),
        storeChanged: this.storeChanged,
        refused: () => rereadToken(up.token, alog),
        revisitsChanged: () => this.cursors.touch(),
      });
      board.expect('metrics', name);
      this.loops.push(poller.run(signal));

      if (account.dvrStreams.length) {
        board.expect('dvr-net', name);
        const round = dvrRound({
          account: name,
          streams: account.dvrStreams,
          clock,
          log: alog,
          getStream: (a, s) => up.call(() => up.dvr.getStream(a, s)),
          process: dvr,
          report: this.reporter('dvr-net', name, up, alog),
          health: (rows) => {
            board.dvr(name, rows);
            this.storeChanged();
          },
        });
        this.loops.push(pollEvery(config.dvr.intervalMs, clock, signal, round, alog));
      }
      if (account.recordings) {
        board.expect('recorder-cloud', name);
        const round = recordingsRound({
          account: name,
          log: alog,
          list: (a) => up.call(() => up.recorder.listSettings(a, { all: true, extraFields: ['status'] })),
          process: recordings,
          report: this.reporter('recorder-cloud', name, up, alog),
          summary: (rows) => {
            board.recordings(name, rows);
            this.storeChanged();
          },
        });
        this.loops.push(pollEvery(config.recordings.intervalMs, clock, signal, round, alog));
      }
    }
    log.info(
      { accounts: this.accounts, shard: config.sharding.shard, shards: config.sharding.shards },
      'polling started',
    );
    if (this.accounts.length === 0) {
      // Ready and empty is a valid state (more shards than accounts need one), but rarely the intended one.
      log.warn(
        { configured: config.accounts.length, shard: config.sharding.shard, shards: config.sharding.shards },
        'this shard owns none of the configured accounts: it polls nothing',
      );
    }
  }

  /**
   * Stops polling: nothing new is sent, requests in flight get up to `graceMs` (real time) to finish and their
   * windows are counted; then the rest are cancelled, the cursors saved and connections closed. A window that did
   * not finish is not counted and the saved cursor stays before it, so the next run asks for it again.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.controller.abort();
    const settled = Promise.allSettled(this.loops);
    if (!(await settledWithin(settled, graceMs)))
      this.log.warn({ graceMs }, 'requests still in flight at shutdown: cancelled');
    await this.agent.destroy();
    await settledWithin(settled, 1000);
    await this.parser.close();
    // Windows the walkers handed over are counted before the cursors past them are saved.
    await this.traffic?.idle();
    await this.cursors.close();
  }

  status(): ExporterStatus {
    return this.board.status();
  }

  /** Where a DVR or recordings round reports: the status board, and a refusal of the token re-reads it. */
  private reporter(api: Api, account: string, up: Upstream, log: Logger): RoundReporter {
    return {
      result: ({ ok, error, failures }) => {
        this.board.round(api, account, ok, error);
        if (failures.some(isRefusal)) rereadToken(up.token, log);
      },
      answer: (res) => this.audit.check(api, log, res),
    };
  }
}

/** Whether `p` settled within `ms` of real time. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function safeToken(u: Upstream): string {
  try {
    return u.token.get();
  } catch {
    return '';
  }
}
