/**
 * One account's poll loops (traffic walker, DVR round, recordings round), started and stopped as one: configured
 * accounts are started by the exporter, discovered ones are started and stopped by discovery
 * (./discovered-accounts.ts). Each account runs under its own stop signal, tied to the exporter's.
 */
import { LoginToken } from '../auth/login-token.js';
import type { Clock } from '../clock.js';
import type { AccountConfig, Config } from '../config/index.js';
import type { AnswerAudit } from '../http/answers.js';
import type { Logger } from '../log.js';
import { pollEvery } from '../poll/interval.js';
import type { CommitMetrics } from '../server/commit-metrics.js';
import type { SelfMetrics } from '../server/self-metrics.js';
import type { TrafficHistory } from '../server/traffic-history.js';
import type { RefusalReason } from '../store/limits.js';
import type { AccountWalker } from '../traffic/walker.js';
import type { CursorBook } from './cursor-book.js';
import { dvrRound, type RoundReporter, recordingsRound } from './pollers.js';
import type { Processes } from './processes.js';
import { APIS, type Api, type StatusBoard } from './status-board.js';
import { rereadIfRefused, rereadToken } from './token-refresh.js';
import type { Upstream } from './upstream.js';

export interface AccountPollersDeps {
  processes: Processes;
  board: StatusBoard;
  cursors: Pick<CursorBook, 'get' | 'touch'>;
  /** Per account, the span the state file's cursor was moved over at start (older than metrics.max_catch_up). */
  clamped: ReadonlyMap<string, { from: number; to: number }>;
  clock: Clock;
  log: Logger;
  random?: () => number;
  intervals: { dvrMs: number; recordingsMs: number };
  limits: Config['limits'];
  self: Pick<SelfMetrics, 'seriesRefused' | 'parseErrors'>;
  /** Where each polled account's commit is exposed (none in tests that do not look at it). */
  commits?: Pick<CommitMetrics, 'set' | 'remove'>;
  /** Where each counted window's figures go for the landing page (none in tests that do not look at it). */
  history?: Pick<TrafficHistory, 'record' | 'remove'>;
  audit: Pick<AnswerAudit, 'check'>;
  storeChanged: () => void;
  /** The exporter's stop signal: it stops every account's loops. */
  signal: AbortSignal;
  /** Every loop started, for the exporter's stop() to wait on. */
  track: (loop: Promise<void>) => void;
}

interface Running {
  account: AccountConfig;
  walker: AccountWalker;
  stop(): Promise<void>;
}

export class AccountPollers {
  /** The walkers of the accounts now polled (tests read their cursors). */
  walkers: AccountWalker[] = [];
  private readonly running = new Map<string, Running>();
  /** Per (api, account), the reasons its last poll refused series for (sorted, joined; '' for none). */
  private readonly refusing = new Map<string, string>();

  constructor(private readonly d: AccountPollersDeps) {}

  /**
   * Starts one account's poll loops under its own stop signal, so it can be stopped alone (stop). The exporter's
   * stop signal still stops it with the rest.
   */
  start(account: AccountConfig, up: Upstream, discovered: boolean): void {
    const { d } = this;
    const { clock, board } = d;
    const { traffic, dvr, recordings } = d.processes;
    const name = account.name;
    const ctl = new AbortController();
    const main = d.signal;
    const onMainAbort = () => ctl.abort();
    main.addEventListener('abort', onMainAbort, { once: true });
    const signal = ctl.signal;
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
        return undefined;
      },
    });
    const poller = traffic.poller(name, {
      clock,
      log: alog,
      random: d.random,
      startCursor: d.cursors.get(name),
      givenUp: d.clamped.get(name),
      fetchTraffic: (o, priority) => up.call(() => up.metrics.fetchTraffic(o), priority),
      // The cursor is saved by the scrapes that show its windows (./cursor-book.ts), not here.
      onStatus: (s) => {
        // A stopped account's last status must not bring back the rows stop() removed.
        if (!active) return;
        board.walker(s);
      },
      audit: (answer, dropped) => d.audit.check('metrics', alog, answer, dropped),
      limited: (r) => {
        if (active) this.countRefused(name, 'metrics', r, alog);
      },
      storeChanged: d.storeChanged,
      refused: () => rereadToken(token, alog),
      revisitsChanged: () => d.cursors.touch(),
      windowCounted: (start, end, response) => {
        if (active) d.history?.record(name, start, end, response);
      },
    });
    const { walker } = poller;
    board.expect('metrics', name);
    d.commits?.set(name, account.commit);
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
          this.countRefused(name, 'dvr-net', { refused: dvr.refused(name) }, alog);
          d.storeChanged();
        },
      });
      loops.push(pollEvery(d.intervals.dvrMs, clock, signal, round, alog));
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
          d.storeChanged();
        },
      });
      loops.push(pollEvery(d.intervals.recordingsMs, clock, signal, round, alog));
    }
    for (const loop of loops) d.track(loop);
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
  async stop(name: string): Promise<void> {
    const pollers = this.running.get(name);
    if (!pollers) return;
    this.running.delete(name);
    await pollers.stop();
    const { d } = this;
    const { traffic, dvr, recordings } = d.processes;
    // Windows handed over before the stop are counted first, so none lands after the removal.
    await traffic.removeAccount(name);
    // Its windows awaiting a re-read went with it: the state file's revisit part follows.
    d.cursors.touch();
    dvr.removeAccount(name, pollers.account.dvrStreams);
    recordings.removeAccount(name);
    d.board.removeAccount(name);
    d.commits?.remove(name);
    d.history?.remove(name);
    for (const api of APIS) this.refusing.delete(`${api}\u0000${name}`);
    this.walkers = this.walkers.filter((w) => w !== pollers.walker);
    d.storeChanged();
  }

  /**
   * Series a cap refused in a poll (traffic window, DVR round or recordings listing): counted, shown on the landing page, and
   * logged once per account and API each time the set of reasons changes (a cap that keeps refusing the same
   * resources every window logs once). Label values truncated are counted as parse errors of the API.
   */
  private countRefused(
    account: string,
    api: 'metrics' | 'dvr-net' | 'recorder-cloud',
    r: { refused?: Partial<Record<RefusalReason, number>>; truncated?: number },
    log: Logger,
  ): void {
    const { self, limits } = this.d;
    const refused = r.refused ?? {};
    const reasons = (Object.keys(refused) as RefusalReason[]).sort();
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

  /** Where a DVR or recordings round reports: the status board, and a refusal of the token re-reads it. */
  private reporter(api: Api, account: string, up: Upstream, log: Logger): RoundReporter {
    return {
      result: ({ ok, error, failures }) => {
        this.d.board.round(api, account, ok, error);
        rereadIfRefused(failures, up.token, log);
      },
      answer: (res) => this.d.audit.check(api, log, res),
    };
  }
}
