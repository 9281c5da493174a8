/**
 * Each account's pollers (src/poll/poller.ts: traffic from src/traffic/pipeline.ts, then one from each module of
 * the API table the account asks for: ./api-table.ts), made from the account's upstream and started and stopped
 * as one: configured accounts are started by the exporter, discovered ones are started and stopped by discovery
 * (./discovered-accounts.ts). Each account runs under its own stop signal, tied to the exporter's. What they
 * report lands here: the status board, the series refused by limits, the token re-read after a refusal.
 */
import { LoginToken } from '../auth/login-token.js';
import type { GapsRecorder } from '../backfill/gaps.js';
import type { Clock } from '../clock.js';
import type { AccountConfig, Config } from '../config/index.js';
import { inSlices } from '../discovery/slices.js';
import type { AnswerAudit } from '../http/answers.js';
import type { Logger } from '../log.js';
import type { BodyParsers, CapReport } from '../poll/api-module.js';
import type { Poller, PollReporter } from '../poll/poller.js';
import type { Upstream } from '../poll/upstream.js';
import type { CommitMetrics } from '../server/commit-metrics.js';
import type { SelfMetrics } from '../server/self-metrics.js';
import type { TrafficHistory } from '../server/traffic-history.js';
import type { CursorBook } from '../state-file/cursor-book.js';
import type { TrafficPipeline } from '../traffic/pipeline.js';
import type { TrafficResponse } from '../traffic/response.js';
import type { AccountWalker } from '../traffic/walker.js';
import { APIS, type Api, type OpenApi } from './api-table.js';
import type { StatusBoard } from './status-board.js';
import { rereadIfRefused, rereadToken } from './token-refresh.js';

/** What takes each account's settled windows (src/settled/writer.ts); declared here, where it is used. */
export interface SettledSink {
  /** The account's traffic poller started, walking from `walkFrom`; `read` reads a final window itself. */
  attach(
    account: string,
    read: (start: number, end: number) => Promise<TrafficResponse>,
    walkFrom: number,
  ): void;
  /** The account stopped: no more reads of its own. */
  detach(account: string): void;
  /** The account was away longer than metrics.counter_retention: its cursor and totals go. */
  forget(account: string): void;
  settled(account: string, start: number, end: number, response: TrafficResponse): void;
  skipped(account: string, start: number, end: number, reason: string): void;
}

/** The reason every account's loops stop with: one, not a DOMException (and its stack) per account. */
const STOPPED = new DOMException('polling stopped', 'AbortError');

export interface AccountPollersDeps {
  /** What every account's traffic poller writes into. */
  traffic: TrafficPipeline;
  /** The modules of the API table with their sinks (./api-table.ts), in the table's order. */
  apis: readonly OpenApi[];
  board: StatusBoard;
  cursors: Pick<CursorBook, 'get' | 'leave' | 'touch' | 'forget'>;
  /** Per account, the span the state file's cursor was moved over at start (older than metrics.max_catch_up). */
  clamped: ReadonlyMap<string, { from: number; to: number }>;
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** Reads the table's APIs' answers, big ones off the event loop (default: inline; src/offloop/pool.ts). */
  parse?: BodyParsers;
  /** Each module reads its own section (its interval); the limits whose refusals are logged. */
  config: Config;
  self: Pick<SelfMetrics, 'seriesRefused' | 'parseErrors'>;
  /** Where each polled account's commit is exposed (none in tests that do not look at it). */
  commits?: Pick<CommitMetrics, 'set' | 'remove'>;
  /**
   * Where each counted window's figures go for the landing page (none in tests that do not look at it): first
   * reads (`record`), then the window's final answer (`settle`, src/traffic/pipeline.ts `windowSettled`).
   */
  history?: Pick<TrafficHistory, 'record' | 'settle' | 'remove'>;
  /** Where settled windows go to be written with their own timestamps (`remote_write`; none when it is off). */
  settled?: SettledSink;
  /** Where spans skipped for good are listed for `backfill --gaps` (with state_file). */
  gaps?: Pick<GapsRecorder, 'record'>;
  audit: Pick<AnswerAudit, 'check'>;
  /** The exporter's stop signal: it stops every account's loops. */
  signal: AbortSignal;
  /** Every loop started, for the exporter's stop() to wait on. */
  track: (loop: Promise<void>) => void;
  /** Longest slice of the exporter's stop between two yields to the event loop (default SLICE_MS). */
  sliceMs?: number;
}

/** One account's run: its configuration, its walker, and how its loops end. */
interface AccountRun {
  account: AccountConfig;
  walker: AccountWalker;
  /** Ends its loops (the exporter's stop does, for all, through one listener), reporting nothing more. */
  abort(): void;
  stop(): Promise<void>;
}

export class AccountPollers {
  private readonly runs = new Map<string, AccountRun>();
  /** Per (api, account), the reasons its last poll refused series for (sorted, joined; '' for none). */
  private readonly refusing = new Map<string, string>();

  constructor(private readonly d: AccountPollersDeps) {
    // One listener for all accounts: an EventTarget checks its listeners on every add and remove, so one per
    // account made starting and stopping N accounts cost O(N^2) (100,000 discovered accounts: minutes). The
    // accounts are aborted in slices: each wakes its loops and drops its waiting requests, and 10,000 of them in
    // one block held the event loop 7 s, SIGTERM's grace with it (issue 25, row 7).
    d.signal.addEventListener('abort', () => {
      const aborting = inSlices(this.runs.values(), (r) => r.abort(), { sliceMs: d.sliceMs });
      d.track(aborting.then(() => undefined));
    });
  }

  /** The walkers of the accounts now polled (tests read their cursors). */
  get walkers(): AccountWalker[] {
    return [...this.runs.values()].map((r) => r.walker);
  }

  /** Accounts polled now. */
  get size(): number {
    return this.runs.size;
  }

  /**
   * Starts one account's poll loops under its own stop signal, so it can be stopped alone (stop). The exporter's
   * stop signal still stops it with the rest.
   */
  start(account: AccountConfig, up: Upstream, discovered: boolean): void {
    const { d } = this;
    const { clock, board } = d;
    const { traffic } = d;
    const name = account.name;
    const ctl = new AbortController();
    if (d.signal.aborted) ctl.abort(STOPPED);
    const signal = ctl.signal;
    // The account's requests, through its token's upstream: those waiting for their turn go when it stops alone.
    const requests = up.forAccount(signal);
    const loops: Promise<void>[] = [];
    let active = true;
    const alog = d.log.child({ account: name });
    const token = up.token;
    board.note(name, {
      discovered,
      // The login's own state, not the error text: "login refused" is not a network error.
      downCause: () => {
        if (!(token instanceof LoginToken)) return undefined;
        const state = token.status.state;
        if (state === 'login-refused') return 'login refused';
        if (state === 'login-failed') return 'login failed';
        if (state === 'lifetime-too-short') return 'token lifetime too short';
        return undefined;
      },
    });
    const poller = traffic.poller(name, requests, {
      clock,
      log: alog,
      random: d.random,
      startCursor: d.cursors.get(name),
      givenUp: d.clamped.get(name),
      // The cursor is saved by the scrapes that show its windows (src/state-file/cursor-book.ts), not here.
      onStatus: (s) => {
        // A stopped account's last status must not bring back the rows stop() removed.
        if (!active) return;
        board.walker(s);
      },
      audit: (answer, dropped) => d.audit.check('metrics', alog, answer, dropped),
      limited: (r) => {
        if (active) this.countRefused(name, 'metrics', r, alog);
      },
      refused: () => rereadToken(token, alog),
      revisitsChanged: () => d.cursors.touch(),
      windowCounted: (start, end, response) => {
        if (active) d.history?.record(name, start, end, response);
      },
      windowSettled: (start, end, response) => {
        if (!active) return;
        d.history?.settle(name, start, end, response);
        d.settled?.settled(name, start, end, response);
      },
      settledSkipped: (start, end, reason) => {
        if (!active) return;
        d.settled?.skipped(name, start, end, reason);
        // With remote_write the settled series step over the span with their totals: a gap run of backfill
        // inside it would not meet them at a reset (docs/backfill.md, "Gaps"). Listed only without it.
        if (!d.settled) d.gaps?.record(name, start, end, reason);
      },
    });
    const { walker } = poller;
    d.settled?.attach(name, poller.readFinal, walker.current.cursor);
    board.expect('metrics', name);
    d.commits?.set(name, account.commit);
    // A renewed token ends the walker's slow auth backoff at once.
    const unsubscribe =
      token instanceof LoginToken ? token.onToken(() => poller.authRestored()) : () => undefined;
    const pollers: Poller[] = [poller];
    for (const m of d.apis) {
      if (!m.polls(account)) continue;
      board.expect(m.api, name);
      pollers.push(
        m.poller(account, requests, {
          clock,
          log: alog,
          config: d.config,
          parse: d.parse,
          report: this.reporter(m.api, name, up, alog),
          rounded: (rows, caps) => {
            board.rows(m.api, name, rows);
            this.countRefused(name, m.api, caps, alog);
          },
        }),
      );
    }
    for (const p of pollers) {
      const loop = p.run(signal);
      loops.push(loop);
      d.track(loop);
    }
    this.runs.set(name, {
      account,
      walker,
      abort: () => {
        // The exporter stops: what the loops report on their way out is not shown anywhere.
        active = false;
        ctl.abort(STOPPED);
      },
      stop: async () => {
        active = false;
        ctl.abort(STOPPED);
        unsubscribe();
        await Promise.allSettled(loops);
      },
    });
  }

  /**
   * Stops one account's loops, removes its series from the exposition and its rows from the status board. Its
   * counter values are kept with the counted cursor they go with (TrafficPipeline.removeAccount, CursorBook.leave),
   * in memory and in the state file, so an account that comes back resumes at that cursor and its counters
   * continue.
   */
  async stop(name: string): Promise<void> {
    const run = this.runs.get(name);
    if (!run) return;
    this.runs.delete(name);
    await run.stop();
    const { d } = this;
    // Windows handed over before the stop are counted first, so none lands after the removal. Its counters are
    // kept with the cursor they go with; the state file follows (and its revisit part, without the account's).
    await d.traffic.removeAccount(name, (cursor) => d.cursors.leave(name, cursor), d.clock.now());
    d.cursors.touch();
    for (const m of d.apis) m.removeAccount(run.account);
    d.board.removeAccount(name);
    d.commits?.remove(name);
    d.history?.remove(name);
    d.settled?.detach(name);
    for (const api of APIS) this.refusing.delete(`${api}\u0000${name}`);
  }

  /**
   * What was kept for accounts stopped more than `metrics.counter_retention` ago and not back (counters, revisits,
   * cursor) is forgotten, in memory and in the state file: a departed account costs nothing for good.
   */
  forgetAway(): void {
    const { d } = this;
    const gone = d.traffic.forgetAway(d.clock.now() - d.config.metrics.counterRetentionMs);
    for (const name of gone) {
      d.cursors.forget(name);
      d.settled?.forget(name);
    }
    if (gone.length > 0) {
      d.log.info(
        { count: gone.length },
        'stopped accounts away longer than metrics.counter_retention: forgotten',
      );
      d.cursors.touch();
    }
  }

  /**
   * Series a cap refused in a poll (a traffic window, a round of an API of the table): counted, shown on the landing page, and
   * logged once per account and API each time the set of reasons changes (a cap that keeps refusing the same
   * resources every window logs once). Label values truncated are counted as parse errors of the API.
   */
  private countRefused(account: string, api: Api, r: CapReport, log: Logger): void {
    const { self } = this.d;
    const { limits } = this.d.config;
    const refused = r.refused ?? {};
    const reasons = (Object.keys(refused) as Array<keyof typeof refused>).sort();
    for (const reason of reasons) self.seriesRefused.inc({ account, reason }, refused[reason]!);
    if (r.truncated) {
      self.parseErrors.inc({ api }, r.truncated);
      log.warn(
        { api, truncated: r.truncated, maxLabelLength: limits.maxLabelLength },
        'label values longer than limits.max_label_length were truncated',
      );
    }
    const key = `${api}\u0000${account}`;
    const changed = reasons.join(',');
    if ((this.refusing.get(key) ?? '') !== changed) {
      this.refusing.set(key, changed);
      if (changed)
        log.warn(
          { api, reasons, series: refused, limits },
          'new series refused by limits: the series already exported keep updating, new ones are not exported',
        );
      else log.info({ api }, 'no more series refused by limits');
    }
    this.d.board.refused(api, account, refused);
  }

  /** Where a round of an API of the table reports: the status board, and a refusal of the token re-reads it. */
  private reporter(api: Api, account: string, up: Upstream, log: Logger): PollReporter {
    return {
      result: ({ ok, error, failures }) => {
        this.d.board.round(api, account, ok, error);
        rereadIfRefused(failures, up.token, log);
      },
      answer: (res) => this.d.audit.check(api, log, res),
    };
  }
}
