/**
 * The exporter without the process: the composition root. Configuration in; one upstream per token source (a fixed
 * token or a login, src/auth), one TrafficPipeline (src/traffic/poller.ts) with a poller per account, the DVR and
 * recordings rounds, account discovery (src/discovery), the status board, the cursor book, the series store, the
 * registry and the HTTP app out. It wires them and does nothing else. `main` owns listen, signals and shutdown;
 * tests build an Exporter on a fake clock and a loopback simulator.
 */
import type { Express } from 'express';
import { Registry } from 'prom-client';
import type { Agent } from 'undici';
import { LoginToken } from '../auth/login-token.js';
import { type AuthMetrics, createAuthMetrics } from '../auth/metrics.js';
import { type Clock, MINUTE, systemClock } from '../clock.js';
import {
  type AccountConfig,
  type Config,
  type LoginCredential,
  METRIC_NAMES,
  type TokenFs,
  type TokenSource,
  type TokenSources,
  tokenSources,
} from '../config/index.js';
import { type DiscoverySource, discoveryRound } from '../discovery/discovery.js';
import { createDvrFamilies } from '../dvr/metrics.js';
import { DvrProcess } from '../dvr/process.js';
import { AnswerAudit } from '../http/answers.js';
import { describeError } from '../http/errors.js';
import { type AgentOptions, createAgent } from '../http/request.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { pollEvery } from '../poll/interval.js';
import { createRecordingFamilies } from '../recordings/metrics.js';
import { RecordingsProcess } from '../recordings/process.js';
import { createApp } from '../server/app.js';
import { createSelfMetrics, type SelfMetrics } from '../server/self-metrics.js';
import type { ExporterStatus, SettingsSummary } from '../server/status.js';
import { accountsForShard } from '../sharding.js';
import type { RefusalReason } from '../store/limits.js';
import { refreshSoon } from '../store/refresh-soon.js';
import { SeriesStore } from '../store/series-store.js';
import { type WorkerParserOptions, WorkerTrafficParser } from '../traffic/parse-pool.js';
import { TrafficPipeline } from '../traffic/poller.js';
import type { AccountWalker } from '../traffic/walker.js';
import { CursorBook } from './cursor-book.js';
import { dvrRound, type RoundReporter, recordingsRound } from './pollers.js';
import { APIS, type Api, StatusBoard } from './status-board.js';
import { rereadIfRefused, rereadToken } from './token-refresh.js';
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
  /** Per account, the span the state file's cursor was moved over at start (older than metrics.max_catch_up). */
  private clamped = new Map<string, { from: number; to: number }>();
  private readonly audit: AnswerAudit;
  private readonly storeChanged: () => void;
  private readonly controller = new AbortController();
  private loops: Promise<void>[] = [];
  private processes: Processes | undefined;
  private walkers: AccountWalker[] = [];
  /** Every login the configuration names (src/auth): renewal loops started before the pollers. */
  private readonly logins: LoginToken[] = [];
  private readonly tokens: TokenSources;
  /** One upstream per token source (accounts sharing a credential share it), discovered accounts' included. */
  private readonly allUpstreams = new Set<Upstream>();
  /** The poll loops of each account now polled, so one account can be stopped alone (discovery). */
  private readonly running = new Map<string, AccountPollers>();
  /** Accounts polled because discovery found them (not listed in the configuration). */
  private readonly discovered = new Set<string>();
  private authMetrics: AuthMetrics | undefined;
  /** Per (api, account), the reasons its last poll refused series for (sorted, joined; '' for none). */
  private readonly refusing = new Map<string, string>();

  /** The login metrics, registered on first use: an exporter with fixed tokens and no discovery has none. */
  get auth(): AuthMetrics {
    this.authMetrics ??= createAuthMetrics(this.registry);
    return this.authMetrics;
  }

  constructor(private readonly opts: ExporterOptions) {
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
    this.self = createSelfMetrics(this.registry, {
      version: opts.version,
      apis: APIS,
      defaultMetrics: opts.defaultMetrics,
    });
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
    this.board = new StatusBoard(
      this.self,
      this.clock,
      opts.version,
      settingsSummary(this.config, owned.length),
    );
    this.parser = new WorkerTrafficParser({ log: this.log, ...opts.trafficParser });
    this.tokens = tokenSources(this.config, opts.tokenFs, (c) => this.createLogin(c));
    for (const account of owned) {
      this.upstreams.set(account.name, this.upstreamFor(this.tokens.accounts.get(account.name)!));
    }
    // The request gates of every upstream, those made later for discovered accounts included.
    this.self.trackQueueLength(() => {
      let n = 0;
      for (const u of this.allUpstreams) n += u.gate.length;
      return n;
    });
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
    // A bad state file is also shown on the landing page until the process restarts.
    this.board.problemsAtStart(...loaded.problems);
    this.clamped = loaded.clamped;
    this.board.markStarted();
    const { config, log } = this;
    const signal = this.controller.signal;
    // Logins first: the pollers' first requests then carry a token instead of failing for want of one.
    // Only the logins this replica uses (an account of another shard may name its own).
    const used = new Set<TokenSource>([...this.upstreams.values()].map((u) => u.token));
    if (config.discovery.enabled) for (const t of this.tokens.all) used.add(t);
    const logins = this.logins.filter((l) => used.has(l));
    for (const login of logins) {
      this.auth.addLogin(login.username);
      this.loops.push(login.run(signal));
    }
    await Promise.all(logins.map((l) => l.firstAttempt));
    this.processes = {
      // The store is the counting lock: each exposition shows whole windows and carries their counted cursors.
      traffic: new TrafficPipeline(
        this.store,
        {
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
          limits: { ...config.limits, storeSize: () => this.store.size },
        },
        this.store,
      ),
      dvr: new DvrProcess(createDvrFamilies(this.store)),
      recordings: new RecordingsProcess(createRecordingFamilies(this.store), {
        ...config.limits,
        storeSize: () => this.store.size,
      }),
    };
    const { traffic } = this.processes;
    traffic.restoreRevisits(this.cursors.loadedRevisits, this.clock.now());
    if (traffic.book) {
      traffic.shownCursor = (account) => this.cursors.shown(account);
      this.cursors.revisits = {
        part: (cursors, rereads) => traffic.savedRevisits(cursors, rereads),
        shown: (rereads) => traffic.rereadsShown(rereads),
      };
    }
    for (const account of config.accounts.filter((a) => this.accounts.includes(a.name))) {
      this.startAccount(account, this.upstreams.get(account.name)!);
    }
    if (config.discovery.enabled) this.startDiscovery(signal);
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
   * Stops polling, within about `graceMs` + 1 s of real time whatever is in flight: nothing new is sent,
   * requests in flight get up to `graceMs` to finish and their windows are counted (the app keeps serving
   * meanwhile: a scrape then may see them); then the rest are cancelled and connections closed. Nothing is saved
   * here: the state file holds the cursors a served scrape saw (./cursor-book.ts), so windows counted but never
   * scraped are asked for again by the next run.
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
    // Counting what the applier holds helps only a scrape that still comes; never past the grace.
    const traffic = this.processes?.traffic;
    if (traffic) await settledWithin(traffic.idle(), Math.max(0, until - Date.now()));
    await settledWithin(this.cursors.close(), 250);
  }

  status(): ExporterStatus {
    return this.board.status();
  }

  /**
   * Series a cap refused in a poll (traffic window or recordings listing): counted, shown on the landing page, and
   * logged once per account and API each time the set of reasons changes (a cap that keeps refusing the same
   * resources every window logs once). Label values truncated are counted as parse errors of the API.
   */
  private countRefused(
    account: string,
    api: 'metrics' | 'recorder-cloud',
    r: { refused?: Partial<Record<RefusalReason, number>>; truncated?: number },
    log: Logger,
  ): void {
    const refused = r.refused ?? {};
    const reasons = (Object.keys(refused) as RefusalReason[]).sort();
    for (const reason of reasons) this.self.seriesRefused.inc({ account, reason }, refused[reason]!);
    if (r.truncated) {
      this.self.parseErrors.inc({ api }, r.truncated);
      log.warn(
        { api, truncated: r.truncated, maxLabelLength: this.config.limits.maxLabelLength },
        'label values longer than limits.max_label_length were truncated',
      );
    }
    const key = `${api}\u0000${account}`;
    const changed = reasons.join(',');
    if ((this.refusing.get(key) ?? '') !== changed) {
      this.refusing.set(key, changed);
      if (changed)
        log.warn(
          { api, reasons, series: refused, limits: this.config.limits },
          'new series refused by limits: the series already exported keep updating, new ones are not exported',
        );
      else log.info({ api }, 'no more series refused by limits');
    }
    this.board.refused(api, account, refused);
  }

  /** Where a DVR or recordings round reports: the status board, and a refusal of the token re-reads it. */
  private reporter(api: Api, account: string, up: Upstream, log: Logger): RoundReporter {
    return {
      result: ({ ok, error, failures }) => {
        this.board.round(api, account, ok, error);
        rereadIfRefused(failures, up.token, log);
      },
      answer: (res) => this.audit.check(api, log, res),
    };
  }

  /**
   * Starts one account's poll loops (traffic walker, DVR, recordings) under its own stop signal, so discovery can
   * stop it alone (stopAccount). The exporter's stop() still stops it with the rest.
   */
  private startAccount(account: AccountConfig, up: Upstream): void {
    const { config, clock, log, board } = this;
    const { traffic, dvr, recordings } = this.processes!;
    const name = account.name;
    const ctl = new AbortController();
    const main = this.controller.signal;
    const onMainAbort = () => ctl.abort();
    main.addEventListener('abort', onMainAbort, { once: true });
    const signal = ctl.signal;
    const loops: Promise<void>[] = [];
    let active = true;
    const alog = log.child({ account: name });
    const token = up.token;
    board.note(name, {
      discovered: this.discovered.has(name),
      // The login's own state, not the error text: "login refused" is not a network error.
      downCause: () => {
        if (!(token instanceof LoginToken)) return undefined;
        const state = token.status.state;
        if (state === 'login-refused') return 'login refused';
        if (state === 'login-failed') return 'login failed';
        return undefined;
      },
    });
    const poller = traffic.poller(name, {
      clock,
      log: alog,
      random: this.opts.random,
      startCursor: this.cursors.get(name),
      givenUp: this.clamped.get(name),
      fetchTraffic: (o, priority) => up.call(() => up.metrics.fetchTraffic(o), priority),
      // The cursor is saved by the scrapes that show its windows (./cursor-book.ts), not here.
      onStatus: (s) => {
        // A stopped account's last status must not bring back the rows stopAccount removed.
        if (!active) return;
        board.walker(s);
      },
      audit: (answer, dropped) => this.audit.check('metrics', alog, answer, dropped),
      limited: (r) => {
        if (active) this.countRefused(name, 'metrics', r, alog);
      },
      storeChanged: this.storeChanged,
      refused: () => rereadToken(token, alog),
      revisitsChanged: () => this.cursors.touch(),
    });
    const { walker } = poller;
    board.expect('metrics', name);
    this.walkers.push(walker);
    // A renewed token ends the walker's slow auth backoff at once.
    const unsubscribe =
      token instanceof LoginToken ? token.onToken(() => poller.authRestored()) : () => undefined;
    loops.push(poller.run(signal));

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
        health: (rows, failed) => {
          board.dvr(name, rows, failed);
          this.storeChanged();
        },
      });
      loops.push(pollEvery(config.dvr.intervalMs, clock, signal, round, alog));
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
          this.countRefused(name, 'recorder-cloud', recordings, alog);
          this.storeChanged();
        },
      });
      loops.push(pollEvery(config.recordings.intervalMs, clock, signal, round, alog));
    }
    this.loops.push(...loops);
    this.running.set(name, {
      account,
      walker,
      stop: async () => {
        active = false;
        ctl.abort();
        main.removeEventListener('abort', onMainAbort);
        unsubscribe();
        await Promise.allSettled(loops);
      },
    });
  }

  /**
   * Stops one account's loops and removes its series, as those of a vanished resource go, and its rows on the
   * status board. Its cursor stays in the state file, so an account that comes back resumes where it stopped:
   * at the last cursor a served scrape saw. Its counted cursor leaves the expositions with its series
   * (TrafficPipeline.removeAccount), so no later scrape saves windows it never showed.
   */
  private async stopAccount(name: string): Promise<void> {
    const pollers = this.running.get(name);
    if (!pollers) return;
    this.running.delete(name);
    await pollers.stop();
    const { traffic, dvr, recordings } = this.processes!;
    // Windows handed over before the stop are counted first, so none lands after the removal.
    await traffic.removeAccount(name);
    // Its windows awaiting a re-read went with it: the state file's revisit part follows.
    this.cursors.touch();
    dvr.removeAccount(name, pollers.account.dvrStreams);
    recordings.removeAccount(name);
    this.board.removeAccount(name);
    for (const api of APIS) this.refusing.delete(`${api}\u0000${name}`);
    this.walkers = this.walkers.filter((w) => w !== pollers.walker);
    this.storeChanged();
  }

  /**
   * accounts_discovery: lists accounts with every credential the configuration names and starts or stops the
   * pollers of the accounts this shard owns to match (an explicitly listed account is never touched).
   */
  private startDiscovery(signal: AbortSignal): void {
    const { config, clock, log } = this;
    const listed = new Set(config.accounts.map((a) => a.name));
    const dlog = log.child({ api: 'inventory' });
    const labelOf = (token: TokenSource): string => {
      if (token instanceof LoginToken) return token.username;
      if (token === this.tokens.api) return 'token';
      const owner = [...this.tokens.accounts].find(([, t]) => t === token)?.[0];
      return owner === undefined ? 'token' : `token:${owner}`;
    };
    const sources: DiscoverySource[] = this.tokens.all.map((token) => {
      const up = this.upstreamFor(token);
      return { label: labelOf(token), token, list: () => up.call(() => up.inventory.listAccounts()) };
    });
    let applying = Promise.resolve();
    const round = discoveryRound({
      log: dlog,
      sources,
      filter: config.discovery,
      count: (label, n) => this.auth.discovered.set({ login: label }, n),
      issues: (n) => this.self.parseErrors.inc({ api: 'inventory' }, n),
      describe: describeError,
      apply: (wanted) => {
        applying = applying.then(() => this.applyDiscovered(wanted, listed, dlog));
      },
    });
    this.loops.push(
      pollEvery(
        config.discovery.intervalMs,
        clock,
        signal,
        async () => {
          await round();
          await applying;
        },
        dlog,
      ),
    );
  }

  private async applyDiscovered(
    wanted: Map<string, TokenSource>,
    listed: Set<string>,
    log: Logger,
  ): Promise<void> {
    if (this.controller.signal.aborted) return;
    const { shard, shards } = this.config.sharding;
    const mine = new Set(
      accountsForShard(
        [...wanted.keys()].filter((n) => !listed.has(n)).map((name) => ({ name })),
        shard,
        shards,
      ).map((a) => a.name),
    );
    for (const name of [...this.discovered]) {
      if (mine.has(name)) continue;
      this.discovered.delete(name);
      log.info({ account: name }, 'discovered account gone or inactive: polling stopped');
      await this.stopAccount(name);
    }
    for (const name of mine) {
      if (this.discovered.has(name)) continue;
      this.discovered.add(name);
      const up = this.upstreamFor(wanted.get(name)!);
      this.upstreams.set(name, up);
      log.info({ account: name }, 'discovered account: polling started');
      this.startAccount({ name, dvrStreams: [], recordings: this.config.discovery.recordings }, up);
    }
  }

  /** The upstream (gate, clients) of a token source: one per source, made on first use. */
  private upstreamFor(token: TokenSource): Upstream {
    for (const u of this.allUpstreams) if (u.token === token) return u;
    const upstream = createUpstream(token, {
      baseUrl: this.config.api.baseUrl,
      requestsPerSecond: this.config.api.requestsPerSecond,
      concurrency: this.config.api.concurrency,
      clock: this.clock,
      agent: this.agent,
      timeoutMs: this.config.api.timeoutMs,
      maxBodyBytes: this.config.api.maxBodyBytes,
      signal: this.controller.signal,
      onRequest: (api, code, seconds) =>
        this.self.observeRequest(api, code === 'error' ? 'error' : Number(code), seconds),
      // An answer that is not JSON, or not of the documented shape, or too big to read, is a parse error of its API.
      onError: (err) => {
        if (err.kind === 'malformed' || err.kind === 'too_large') this.self.parseErrors.inc({ api: err.api });
      },
      parseTraffic: this.parser.parse,
    });
    this.allUpstreams.add(upstream);
    return upstream;
  }

  /** One login's token source, with its metrics; its loop starts in start(). */
  private createLogin(credential: LoginCredential): TokenSource {
    const login = credential.username;
    const source = new LoginToken({
      credential,
      baseUrl: this.config.api.baseUrl,
      clock: this.clock,
      log: this.log,
      dispatcher: this.agent,
      random: this.opts.random,
      fs: this.opts.tokenFs,
      onLogin: (result) => this.auth.logins.inc({ login, result }),
      onExpiry: (at) => this.auth.setExpiry(login, at),
    });
    this.logins.push(source);
    return source;
  }
}

interface AccountPollers {
  account: AccountConfig;
  walker: AccountWalker;
  stop(): Promise<void>;
}

/** What every account's pollers feed; made in start(). */
interface Processes {
  traffic: TrafficPipeline;
  dvr: DvrProcess;
  recordings: RecordingsProcess;
}

/** Whether `p` settled within `ms` of real time. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the landing page's one-line summary shows of the configuration; never a credential. */
function settingsSummary(config: Config, owned: number): SettingsSummary {
  const { api, metrics, sharding } = config;
  return {
    shard: sharding.shard,
    shards: sharding.shards,
    accountsConfigured: config.accounts.length,
    accountsOwned: owned,
    apiHost: apiHost(api.baseUrl),
    windowMs: metrics.windowMs,
    delayMs: metrics.delayMs,
    lookbackMs: metrics.lookbackMs,
    requestsPerSecond: api.requestsPerSecond,
    concurrency: api.concurrency,
  };
}

/** The API's host (and port) for the landing page: never the user info a base_url may carry, nor path or query. */
export function apiHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return '(invalid base_url)';
  }
}
