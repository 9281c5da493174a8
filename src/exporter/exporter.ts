/**
 * The exporter without the process: configuration in, pollers, series store, registry and the HTTP app out.
 * `main` owns listen, signals and shutdown; tests build an Exporter on a fake clock and a loopback simulator.
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
import { DvrProcess, type StreamHealth } from '../dvr/process.js';
import { type AgentOptions, createAgent } from '../http/request.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import { pollEvery } from '../poll/interval.js';
import { createRecordingFamilies } from '../recordings/metrics.js';
import { type RecordingSummary, RecordingsProcess } from '../recordings/process.js';
import { createApp } from '../server/app.js';
import { createSelfMetrics, type SelfMetrics } from '../server/self-metrics.js';
import type { AccountStatus, DvrProblem, ExporterStatus, RecordingProblem } from '../server/status.js';
import { accountsForShard } from '../sharding.js';
import { StateFile } from '../state.js';
import { SeriesStore } from '../store/series-store.js';
import { TrafficApplier } from '../traffic/batches.js';
import { createTrafficFamilies } from '../traffic/metrics.js';
import { type WorkerParserOptions, WorkerTrafficParser } from '../traffic/parser.js';
import { TrafficProcess } from '../traffic/process.js';
import { AccountWalker, type WalkerStatus } from '../traffic/walker.js';
import { AnswerAudit } from './answers.js';
import { describeError, dvrRound, type RoundReporter, recordingsRound } from './pollers.js';
import { createUpstream, type Upstream } from './upstream.js';

export const APIS = ['metrics', 'dvr-net', 'recorder-cloud'] as const;
export type Api = (typeof APIS)[number];

/** A DVR host is listed as a problem below this coverage of its window. */
const COVERAGE_PROBLEM = 0.9;

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
  /** Where big traffic answers are parsed (default: a worker thread, src/traffic/parser.ts). */
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
  private readonly statuses = new Map<string, AccountStatus>();
  private readonly dvrHealth = new Map<string, StreamHealth[]>();
  private readonly recordingSummary = new Map<string, RecordingSummary[]>();
  private readonly cursors = new Map<string, number>();
  private readonly stateFile: StateFile | undefined;
  private readonly audit: AnswerAudit;
  private readonly startedAt: Date;
  private readonly controller = new AbortController();
  private loops: Promise<void>[] = [];
  private applier: TrafficApplier | undefined;
  private started = false;
  private walkers: AccountWalker[] = [];
  /** Every login the configuration names (src/auth): renewal loops started with the pollers. */
  private readonly logins: LoginToken[] = [];
  private readonly tokens: TokenSources;
  /** One upstream per token source (accounts sharing a credential share it), discovered accounts' included. */
  private readonly allUpstreams = new Set<Upstream>();
  /** The poll loops of each account now polled, so one account can be stopped alone (discovery). */
  private readonly running = new Map<string, AccountPollers>();
  /** Accounts polled because discovery found them (not listed in the configuration). */
  private readonly discovered = new Set<string>();
  private processes: Processes | undefined;
  private authMetrics: AuthMetrics | undefined;

  /** The login metrics, registered on first use: an exporter with fixed tokens and no discovery has none. */
  get auth(): AuthMetrics {
    this.authMetrics ??= createAuthMetrics(this.registry);
    return this.authMetrics;
  }

  constructor(private readonly opts: ExporterOptions) {
    this.config = opts.config;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log;
    this.startedAt = new Date(this.clock.now());
    this.self = createSelfMetrics(this.registry, {
      version: opts.version,
      apis: APIS,
      defaultMetrics: opts.defaultMetrics,
    });
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
    this.stateFile = this.config.stateFile ? new StateFile(this.config.stateFile) : undefined;
    this.app = createApp({
      registry: this.registry,
      store: this.store,
      status: () => this.status(),
      log: this.log,
      secrets: () =>
        [
          ...new Set([...this.allUpstreams].map((u) => safeToken(u))),
          ...this.logins.flatMap((l) => l.secrets()),
        ].filter((t) => t !== ''),
      clock: this.clock,
    });
  }

  /** Starts every poll loop; resolves once they are running (not when they end). */
  async start(): Promise<void> {
    const saved = this.stateFile ? await this.stateFile.load() : new Map<string, number>();
    // Only a started exporter saves: stop() after a failed start must not overwrite the cursors on disk.
    this.started = true;
    // Cursors of accounts this replica does not poll now (another shard's, a removed one) are kept on save.
    for (const [account, cursor] of saved) this.cursors.set(account, cursor);
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
    const traffic = new TrafficProcess(
      createTrafficFamilies(this.store, {
        breakdown: config.metrics.breakdown,
        windowGauges: config.metrics.windowGauges,
      }),
      { metrics: config.metrics.metrics, resources: config.metrics.resources },
    );
    const applier = new TrafficApplier(traffic);
    this.applier = applier;
    this.processes = {
      traffic,
      applier,
      dvr: new DvrProcess(createDvrFamilies(this.store)),
      recordings: new RecordingsProcess(createRecordingFamilies(this.store)),
      saved,
    };
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
    await this.applier?.idle();
    if (this.stateFile && this.started) await this.stateFile.save(this.cursors);
  }

  status(): ExporterStatus {
    const now = this.clock.now();
    const accounts = [...this.statuses.values()].map((s) => {
      const row: AccountStatus = s.cursor
        ? { ...s, lagSeconds: Math.max(0, (now - s.cursor.getTime()) / 1000) }
        : { ...s };
      // The login's own state, not the error text: "login refused" is not a network error.
      if (this.discovered.has(s.name)) row.discovered = true;
      const token = this.upstreams.get(s.name)?.token;
      if (!row.up && token instanceof LoginToken) {
        const state = token.status.state;
        if (state === 'login-refused') row.cause = 'login refused';
        else if (state === 'login-failed') row.cause = 'login failed';
      }
      return row;
    });
    const dvr: DvrProblem[] = [];
    for (const rows of this.dvrHealth.values()) {
      for (const r of rows) {
        if (!r.alive) dvr.push({ account: r.account, stream: r.stream, host: r.host, problem: 'not alive' });
        else if (r.coverage !== undefined && r.coverage < COVERAGE_PROBLEM) {
          dvr.push({
            account: r.account,
            stream: r.stream,
            host: r.host,
            problem: `coverage ${Math.round(r.coverage * 100)}%`,
          });
        }
      }
    }
    const recordings: RecordingProblem[] = [];
    for (const rows of this.recordingSummary.values()) {
      for (const r of rows) {
        if (r.status === 'error') {
          recordings.push({ account: r.account, id: r.id, status: r.status, problem: 'recording in error' });
        }
      }
    }
    return {
      // Before start() there are no statuses yet, and every() of nothing is true: not ready until started.
      ready: this.started && accounts.every((a) => a.tried),
      version: this.opts.version,
      startedAt: this.startedAt,
      accounts,
      problems: { dvr, recordings },
    };
  }

  private refreshPending = false;

  /** Rebuilds the store's cached text soon (coalesced), off the poll's own stack. */
  private refreshStore(): void {
    if (this.refreshPending) return;
    this.refreshPending = true;
    setImmediate(() => {
      this.refreshPending = false;
      this.store
        .refresh()
        .catch((err: unknown) => this.log.error({ err }, 'rebuilding /metrics text failed'));
    });
  }

  private setStatus(api: Api, account: string, patch: Partial<AccountStatus>): void {
    const key = `${api}\u0000${account}`;
    const prev = this.statuses.get(key) ?? { name: account, api, up: false };
    this.statuses.set(key, { ...prev, ...patch });
  }

  private onWalkerStatus(s: WalkerStatus, traffic: TrafficProcess): void {
    this.setStatus('metrics', s.account, {
      up: s.up === true,
      tried: s.tried,
      cursor: new Date(s.cursor),
      windowMinutes: s.maxWindowMinutes,
      lastError: s.lastError,
      lastSuccess: s.lastSuccess === undefined ? undefined : new Date(s.lastSuccess),
    });
    traffic.setWindowSize(s.account, s.maxWindowMinutes);
    if (s.up !== undefined)
      this.self.setPollResult('metrics', s.account, s.up, s.lastSuccess ?? this.clock.now());
    if (this.cursors.get(s.account) !== s.cursor) {
      this.cursors.set(s.account, s.cursor);
      this.stateFile
        ?.save(this.cursors)
        .catch((err: unknown) => this.log.error({ err: describeError(err) }, 'saving state_file failed'));
    }
  }

  private reporter(api: Api, account: string, up: Upstream, log: Logger): RoundReporter {
    return {
      result: (ok, error) => {
        const now = this.clock.now();
        this.setStatus(api, account, {
          up: ok,
          tried: true,
          lastError: error,
          ...(ok ? { lastSuccess: new Date(now) } : {}),
        });
        this.self.setPollResult(api, account, ok, now);
        if (!ok && error && /^40[13]:/.test(error)) this.refreshToken(up, log);
      },
      answer: (res) => this.audit.check(api, log, res),
    };
  }

  private refreshToken(up: Upstream, log: Logger): void {
    try {
      up.token.refresh();
    } catch (err) {
      // A login logs its own failures, once per change.
      if (!(up.token instanceof LoginToken))
        log.error({ error: describeError(err) }, 'reading the token again failed');
    }
  }

  /**
   * Starts one account's poll loops (traffic walker, DVR, recordings) under its own stop signal, so discovery can
   * stop it alone (stopAccount). The exporter's stop() still stops it with the rest.
   */
  private startAccount(account: AccountConfig, up: Upstream): void {
    const { config, clock, log } = this;
    const { traffic, applier, dvr, recordings, saved } = this.processes!;
    const name = account.name;
    const ctl = new AbortController();
    const main = this.controller.signal;
    const onMainAbort = () => ctl.abort();
    main.addEventListener('abort', onMainAbort, { once: true });
    const signal = ctl.signal;
    const loops: Promise<void>[] = [];
    let active = true;
    const metricNames = config.metrics.metrics.length ? config.metrics.metrics : METRIC_NAMES;
    const onlyResource = config.metrics.resources.length === 1 ? config.metrics.resources[0] : undefined;
    const alog = log.child({ account: name });
    traffic.initAccount(name, 10);
    this.setStatus('metrics', name, { up: false, tried: false });
    const walker = new AccountWalker(
      {
        account: name,
        windowMs: config.metrics.windowMs,
        delayMs: config.metrics.delayMs,
        lookbackMs: config.metrics.lookbackMs,
        startCursor: saved.get(name) ?? this.cursors.get(name),
        maxInFlight: Math.max(1, config.api.concurrency),
        backoff: this.opts.backoff ?? { baseMs: 1000, capMs: 120_000 },
        authBackoff: this.opts.authBackoff ?? { baseMs: MINUTE, capMs: 10 * MINUTE },
      },
      {
        clock,
        log: alog,
        random: this.opts.random,
        fetchWindow: (start, end) =>
          up.call(() =>
            up.metrics.fetchTraffic({
              account: name,
              start,
              end,
              metrics: metricNames,
              resource: onlyResource,
              breakdown: config.metrics.breakdown,
            }),
          ),
        // Counted in time slices, in order (a big answer must not stall /metrics); see traffic/batches.ts.
        apply: (start, end, response) =>
          applier.apply(name, start, end, response, clock.now(), (r, err) => {
            if (!r) {
              alog.error({ error: describeError(err) }, 'counting a traffic window failed');
              return;
            }
            this.audit.check('metrics', alog, response, r.dropped);
            this.refreshStore();
          }),
        skip: (start, end, reason) => {
          traffic.skip(name, (end - start) / MINUTE, reason);
          this.refreshStore();
        },
        onStatus: (s) => {
          // A stopped account's last status must not bring back the series stopAccount removed.
          if (active) this.onWalkerStatus(s, traffic);
        },
        authFailed: () => this.refreshToken(up, alog),
      },
    );
    this.walkers.push(walker);
    // A renewed token ends the walker's slow auth backoff at once.
    const unsubscribe =
      up.token instanceof LoginToken ? up.token.onToken(() => walker.authRestored()) : () => undefined;
    loops.push(walker.run(signal));

    if (account.dvrStreams.length) {
      this.setStatus('dvr-net', name, { up: false, tried: false });
      const round = dvrRound({
        account: name,
        streams: account.dvrStreams,
        clock,
        log: alog,
        getStream: (a, st) => up.call(() => up.dvr.getStream(a, st)),
        process: dvr,
        report: this.reporter('dvr-net', name, up, alog),
        health: (rows) => {
          this.dvrHealth.set(name, rows);
          this.refreshStore();
        },
      });
      loops.push(pollEvery(config.dvr.intervalMs, clock, signal, round, alog));
    }
    if (account.recordings) {
      this.setStatus('recorder-cloud', name, { up: false, tried: false });
      const round = recordingsRound({
        account: name,
        log: alog,
        list: (a) => up.call(() => up.recorder.listSettings(a, { all: true, extraFields: ['status'] })),
        process: recordings,
        report: this.reporter('recorder-cloud', name, up, alog),
        summary: (rows) => {
          this.recordingSummary.set(name, rows);
          this.refreshStore();
        },
      });
      loops.push(pollEvery(config.recordings.intervalMs, clock, signal, round, alog));
    }
    this.loops.push(...loops);
    this.running.set(name, {
      account,
      signal,
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
   * Stops one account's loops and removes its series, as those of a vanished resource go. Its cursor stays in the
   * state file, so an account that comes back resumes where it stopped.
   */
  private async stopAccount(name: string): Promise<void> {
    const pollers = this.running.get(name);
    if (!pollers) return;
    this.running.delete(name);
    await pollers.stop();
    const { traffic, applier, dvr, recordings } = this.processes!;
    // Windows handed over before the stop are counted first, so none lands after the removal.
    await applier.idle();
    traffic.removeAccount(name);
    for (const stream of pollers.account.dvrStreams) dvr.removeStream(name, stream);
    recordings.removeAccount(name);
    for (const api of APIS) {
      this.self.removeAccount(api, name);
      this.statuses.delete(`${api}\u0000${name}`);
    }
    this.dvrHealth.delete(name);
    this.recordingSummary.delete(name);
    this.walkers = this.walkers.filter((w) => w !== pollers.walker);
    this.refreshStore();
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
      signal: this.controller.signal,
      onRequest: (api, code, seconds) =>
        this.self.observeRequest(api, code === 'error' ? 'error' : Number(code), seconds),
      // An answer that is not JSON, or not of the documented shape, is a parse error of its API.
      onError: (err) => {
        if (err.kind === 'malformed') this.self.parseErrors.inc({ api: err.api });
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
  /** Its own stop signal (aborted by stopAccount or by the exporter's stop). */
  signal: AbortSignal;
  walker: AccountWalker;
  stop(): Promise<void>;
}

/** What every account's pollers feed; made in start(). */
interface Processes {
  traffic: TrafficProcess;
  applier: TrafficApplier;
  dvr: DvrProcess;
  recordings: RecordingsProcess;
  /** Cursors read from the state file at start. */
  saved: Map<string, number>;
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
