/**
 * The traffic pipeline, wired in one place. One TrafficPipeline per exporter owns the traffic families, the
 * TrafficMapping that maps answers onto them and the TrafficApplier that counts windows in order; `poller()` makes
 * the traffic poller of one account (the contract: src/poll/poller.ts) from the account's upstream. A window
 * enters here and leaves through the store:
 *
 *   walker (which window, when) -> MetricsClient.fetchTraffic (./client.ts) -> the account's upstream (gate, HTTP:
 *   src/poll/upstream.ts) -> parse (./parse.ts, or src/offloop/) -> walker.handOver -> applier (in order, in time
 *   slices: ./applier.ts) -> mapping (./mapping.ts) -> store.
 *
 * What leaves traffic/ besides the store (which refreshes itself when a family is written: src/store/series-store.ts)
 * goes through the narrow TrafficPollerDeps below: the walker's status (for the status board), an audit of what an
 * answer could not give, what the caps refused, "the token was refused", and "the windows awaiting a revisit
 * changed" (for the cursor book).
 */
import type { Breakdown } from '../api/vocabulary.js';
import { type Clock, MINUTE } from '../clock.js';
import type { ParsedAnswer } from '../http/answers.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import type { Poller } from '../poll/poller.js';
import { REVISIT_PRIORITY } from '../poll/request-gate.js';
import type { Requester } from '../poll/upstream.js';
import { DepartedAccounts } from '../state-file/departed.js';
import { RevisitKeep } from '../state-file/revisit-keep.js';
import { CounterKeep, type SavedCounters } from '../state-file/saved-counters.js';
import type { SavedRevisits } from '../state-file/saved-revisits.js';
import type { Family, SeriesStoreApi } from '../store/types.js';
import type { SeriesLimits } from './admission.js';
import { TrafficApplier } from './applier.js';
import { MetricsClient, type TrafficBodyParser } from './client.js';
import { CountedBook } from './counted-book.js';
import type { CountingLock } from './counting-ledger.js';
import { anyTopResources, foldBook, rankingPeriodMs, topResourcesOf } from './fold-book.js';
import { type ApplyResult, TrafficMapping } from './mapping.js';
import { createTrafficFamilies, type TrafficFamilies } from './metrics.js';
import { ResourceRanking } from './ranking.js';
import type { TrafficResponse } from './response.js';
import type { RevisitQueue } from './revisit.js';
import { revisitReads } from './revisit-reads.js';
import { AccountWalker, type WalkerStatus } from './walker.js';

export interface TrafficPipelineOptions {
  breakdown: Breakdown;
  windowGauges: boolean;
  /** API metric names to ask for and keep; empty: every documented name is asked for and kept. */
  metrics: readonly string[];
  /** The names asked for when `metrics` is empty. */
  allMetrics: readonly string[];
  /** Resource ids to keep; empty: all. Exactly one is also asked for by `resource=`. */
  resources: readonly string[];
  windowMs: number;
  delayMs: number;
  lookbackMs: number;
  /** `metrics.revisit` (ms); 0 or undefined: off. See ./revisit.ts. */
  revisitMs?: number;
  /** `metrics.counter_retention` (ms): how long a vanished resource's counters stay; undefined: a day. */
  counterRetentionMs?: number;
  /** Windows in flight per account at most (catch-up). */
  maxInFlight: number;
  backoff: BackoffPolicy;
  authBackoff: BackoffPolicy;
  /** Caps on new series (limits.*); none when absent. */
  limits?: SeriesLimits;
  /** Reads a 2xx answer (default: inline; big ones off the event loop: src/offloop/pool.ts). */
  parse?: TrafficBodyParser;
}

/** What one account's poller needs from outside traffic/. */
export interface TrafficPollerDeps {
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** Where the walk resumes (from the state file); undefined: now - lookback. */
  startCursor: number | undefined;
  /**
   * Minutes [from, to) before `startCursor` that will never be asked for: a saved cursor older than
   * metrics.max_catch_up was moved up to it. Counted as skipped (reason catch_up_limit), not lost silently.
   */
  givenUp?: { from: number; to: number };
  /** The walker's status after every change (cursor, up, window size, errors). */
  onStatus(s: WalkerStatus): void;
  /** A counted answer: what it had that could not be used (`dropped`: records the mapping could not attribute). */
  audit(answer: ParsedAnswer, dropped: number): void;
  /**
   * What the caps refused or truncated in a counted window (`refused` absent: nothing refused). Called for every
   * counted window, so a refusal that stopped can be told.
   */
  limited?(r: ApplyResult): void;
  /** The API refused the token (401/403): it may have been rotated. */
  refused(): void;
  /** The windows awaiting a revisit changed (revisit on): the state file should be saved. */
  revisitsChanged?(): void;
  /** A window's first read was counted (revisits are not): the landing page's traffic history. Must not throw. */
  windowCounted?(start: number, end: number, response: TrafficResponse): void;
  /**
   * A window's final answer (docs/remote-write.md, "When a window is settled"): its first read when it will not be
   * revisited (revisit off, or read once its minutes were delay + revisit old), else its revisit (which may span
   * several first-read windows). Called in the order the windows are counted, after the counters took it. Must
   * not throw.
   */
  windowSettled?(start: number, end: number, response: TrafficResponse): void;
  /** A window that will have no final answer (skipped: refused by the API, given up, past the catch-up limit). */
  settledSkipped?(start: number, end: number, reason: string): void;
}

/**
 * One account's traffic poller: the walker, and with revisit on the queue of revisits. `run` runs until `signal`
 * aborts (see AccountWalker.run and RevisitQueue.run).
 */
export interface TrafficPoller extends Poller {
  readonly walker: AccountWalker;
  readonly revisits: RevisitQueue | undefined;
  /** A new token arrived: first reads and revisits waiting out the auth backoff are tried now. */
  authRestored(): void;
  /**
   * Reads a window whose minutes are final (at least delay + revisit old) through the account's upstream, at the
   * revisits' priority: the settled writer's own reads (src/settled/writer.ts), for windows no read gave it.
   */
  readFinal(start: number, end: number): Promise<TrafficResponse>;
}

export class TrafficPipeline {
  readonly mapping: TrafficMapping;
  /**
   * With `limits.top_resources` for some account: the ranking of each account's resources (./ranking.ts; its file:
   * ./ranking-state.ts). The settled side folds through `mapping.foldOf`.
   */
  readonly ranking: ResourceRanking | undefined;
  /** With revisit on: what was counted for each window awaiting its revisit. */
  readonly book: CountedBook | undefined;
  private readonly families: TrafficFamilies;
  private readonly applier: TrafficApplier;
  private readonly asked: readonly string[];
  private readonly onlyResource: string | undefined;
  private readonly queues = new Map<string, RevisitQueue>();
  /** Where windows are counted whole, with each account's counted cursor (a CountingLedger on the store). */
  readonly lock: CountingLock | undefined;
  /**
   * The state file's counter part: each account's series are set to their saved values when its poller is made
   * (the counters continue across a restart), the rest kept on save (another shard's accounts, departed ones).
   */
  private readonly counterKeep: CounterKeep;
  /** With revisit on: the state file's revisit part, from the file to the queues and back. */
  private readonly revisitKeep: RevisitKeep | undefined;
  /** Accounts stopped in this process and not back: what was kept for them (forgetAway). */
  private readonly departed: DepartedAccounts;
  /** Accounts with a poller (their series are in the families). */
  private readonly polled = new Set<string>();
  /**
   * Per account, the counted cursor of the newest exposition a scrape was given (the state file's: CursorBook);
   * -Infinity: none. Set by the exporter; a scrape hands its exposition's cursors over in the turn it renders it.
   */
  shownCursor: (account: string) => number = () => Number.POSITIVE_INFINITY;

  /** Each polled account's windows awaiting a revisit (with revisit on), by account. */
  get revisitQueues(): ReadonlyMap<string, RevisitQueue> {
    return this.queues;
  }

  /**
   * `lock`: where windows are counted whole and each account's counted cursor is kept (a CountingLedger on the
   * series store, ./counting-ledger.ts), so that an exposition carries the cursor up to which it shows every
   * window (./applier.ts).
   */
  constructor(
    store: SeriesStoreApi,
    private readonly opts: TrafficPipelineOptions,
    lock?: CountingLock,
  ) {
    this.lock = lock;
    const revisit = (opts.revisitMs ?? 0) > 0;
    const f = createTrafficFamilies(store, {
      breakdown: opts.breakdown,
      windowGauges: opts.windowGauges,
      revisit,
    });
    if (revisit) {
      const book = new CountedBook();
      for (const side of [f.edge, f.origin]) {
        side.responses = book.wrap(side.responses);
        side.responsesByClass = book.wrap(side.responsesByClass);
        side.requests = book.wrap(side.requests, side === f.edge);
        side.transferredBytes = book.wrap(side.transferredBytes);
        if (side.cacheHitBytes) side.cacheHitBytes = book.wrap(side.cacheHitBytes);
      }
      this.book = book;
    }
    this.families = f;
    this.ranking = anyTopResources(opts.limits)
      ? new ResourceRanking(rankingPeriodMs(opts.limits))
      : undefined;
    this.counterKeep = new CounterKeep(() => this.counters());
    this.revisitKeep = this.book ? new RevisitKeep(this.book) : undefined;
    this.departed = new DepartedAccounts(
      [this.counterKeep, this.revisitKeep, this.ranking].filter((p) => p !== undefined),
    );
    this.mapping = new TrafficMapping(f, {
      metrics: opts.metrics,
      resources: opts.resources,
      limits: opts.limits,
      ...(opts.counterRetentionMs === undefined ? {} : { counterRetentionMs: opts.counterRetentionMs }),
      keepSeenSince: (account) => this.queues.get(account)?.oldestCountedAt ?? Number.POSITIVE_INFINITY,
      fold: {
        topResources: (account) => topResourcesOf(opts.limits, account),
        ranking: this.ranking,
        book: this.book ? foldBook(this.book) : undefined,
      },
    });
    this.applier = new TrafficApplier(this.mapping, { lock });
    this.asked = opts.metrics.length ? opts.metrics : opts.allMetrics;
    this.onlyResource = opts.resources.length === 1 ? opts.resources[0] : undefined;
  }

  /**
   * The poller of one account, asking through `upstream` (the account's: its token's gate and HTTP client,
   * src/poll/upstream.ts): run it with `run(signal)`.
   */
  poller(account: string, upstream: Requester, d: TrafficPollerDeps): TrafficPoller {
    const { opts, mapping, applier, book } = this;
    mapping.initAccount(account, 10);
    this.polled.add(account);
    this.departed.back(account);
    // Back after a stop in this process: its windows awaiting a revisit, numbered before its series come back.
    this.revisitKeep?.returning(account, d.clock.now());
    const nowMs = d.clock.now();
    this.counterKeep.continueAccount(
      account,
      (family, labels, value, startMs) =>
        mapping.restoreCounter(account, family, labels, value, startMs, nowMs),
      d.log,
    );
    // The span the state file's cursor was moved over at start: counted as skipped at once. The counted cursor
    // starts past it (startAt below), at the walker's first cursor.
    if (d.givenUp) mapping.skip(account, (d.givenUp.to - d.givenUp.from) / MINUTE, 'catch_up_limit');
    const revisitMs = opts.revisitMs ?? 0;
    const client = new MetricsClient(upstream, opts.parse);
    const fetchWindow = (start: number, end: number, priority?: number) =>
      client.fetchTraffic(
        {
          account,
          start,
          end,
          metrics: this.asked,
          resource: this.onlyResource,
          breakdown: opts.breakdown,
        },
        priority,
      );
    const queue = book
      ? revisitReads(
          {
            opts,
            mapping,
            applier,
            families: this.families,
            book,
            lock: this.lock,
            shownCursor: (a) => this.shownCursor(a),
            revisitCounted: (a, n, held) => this.revisitKeep?.revisitCounted(a, n, held),
          },
          account,
          d,
          fetchWindow,
        )
      : undefined;
    if (queue) {
      for (const w of this.revisitKeep?.take(account) ?? []) queue.add(w);
      this.queues.set(account, queue);
    }
    // Windows of this account handed to the applier and not yet counted (the walker's backlog).
    let uncounted = 0;
    const walker: AccountWalker = new AccountWalker(
      {
        account,
        windowMs: opts.windowMs,
        delayMs: opts.delayMs,
        lookbackMs: opts.lookbackMs,
        revisitMs,
        startCursor: d.startCursor,
        maxInFlight: opts.maxInFlight,
        backoff: opts.backoff,
        authBackoff: opts.authBackoff,
      },
      {
        clock: d.clock,
        log: d.log,
        random: d.random,
        fetchWindow,
        // Counted in time slices, in order (a big answer must not stall /metrics); see ./applier.ts.
        backlog: () => uncounted,
        handOver: (start, end, response, readAt) => {
          // Read while its minutes were younger than delay + revisit: it will be revisited.
          const toRevisit =
            queue !== undefined && book !== undefined && readAt < end + opts.delayMs + revisitMs;
          const now = d.clock.now();
          uncounted++;
          applier.apply(
            account,
            start,
            end,
            response,
            now,
            (r, err) => {
              uncounted--;
              walker.windowCounted();
              const counted = toRevisit ? book.endRecord() : undefined;
              if (!r) {
                book?.abort();
                d.log.error({ error: describeError(err) }, 'counting a traffic window failed');
                return;
              }
              if (counted && queue)
                queue.add({ start, end, counted, countedAt: now, foldEpoch: mapping.foldEpoch(account) });
              d.audit(response, r.dropped);
              d.limited?.(r);
              d.windowCounted?.(start, end, response);
              if (!toRevisit) d.windowSettled?.(start, end, response);
            },
            book ? { prepare: () => (toRevisit ? book.beginRecord(account) : book.abort()) } : {},
          );
        },
        // In its turn after the windows queued before it: the counted cursor moves in order.
        skip: (start, end, reason) =>
          applier.skip(account, start, end, () => {
            mapping.skip(account, (end - start) / MINUTE, reason);
            d.settledSkipped?.(start, end, reason);
          }),
        onStatus: (s) => {
          d.onStatus(s);
          mapping.setWindowSize(s.account, s.maxWindowMinutes);
        },
        authFailed: d.refused,
        crowded: () => upstream.crowded?.() === true,
      },
    );
    applier.startAt(account, walker.current.cursor);
    // Resumed at a saved cursor: the exposition shows it from now on, with the counters continued at it (one
    // scrape, one moment). Shown only from the first window counted, a scrape would read those counters, which may
    // hold windows the last process counted after its last scrape, against the older cursor that scrape showed.
    const f = this.families;
    if (d.startCursor !== undefined)
      f.windowEnd.set(f.windowEnd.slot([account]), walker.current.cursor / 1000);
    return {
      walker,
      revisits: queue,
      // The walker's own loop when revisit is off: no frame of its own per account (10,000 accounts: issue 25, row 7).
      run: (signal) =>
        queue
          ? Promise.all([walker.run(signal), queue.run(signal)]).then(() => undefined)
          : walker.run(signal),
      authRestored: () => {
        walker.authRestored();
        queue?.authRestored();
      },
      readFinal: (start, end) => fetchWindow(start, end, REVISIT_PRIORITY),
    };
  }

  /**
   * The revisit part of the state file (undefined with revisit off): for the exposition of these counted cursors
   * and revisit number, nothing newer (RevisitKeep.save).
   */
  savedRevisits(cursors?: ReadonlyMap<string, number>, revisitCount?: number): SavedRevisits | undefined {
    return this.revisitKeep?.save(this.queues, cursors, revisitCount);
  }

  /** A scrape was given an exposition that includes revisits up to number `revisitCount` (RevisitKeep.shown). */
  revisitsShown(revisitCount: number): void {
    this.revisitKeep?.shown(revisitCount);
  }

  /**
   * Takes the windows awaiting a revisit from the state file (before any poller is made). With revisit off they
   * are dropped: their late part is not read.
   */
  restoreRevisits(saved: SavedRevisits | undefined, now: number): void {
    this.revisitKeep?.restore(saved, now);
  }

  /** Every counter family of the pipeline (what the state file's counter part holds). */
  private counters(): Family[] {
    const f = this.families;
    const out: Family[] = [f.windows, f.skippedSeconds];
    for (const s of [f.edge, f.origin]) {
      out.push(s.responses, s.responsesByClass, s.requests, s.transferredBytes);
      if (s.cacheHitBytes) out.push(s.cacheHitBytes);
    }
    if (f.revisions) out.push(f.revisions);
    if (f.revisitEdgeRequests) out.push(f.revisitEdgeRequests);
    return out;
  }

  /** Takes the counter part of the state file (before any poller is made). */
  restoreCounters(saved: SavedCounters | undefined): void {
    this.counterKeep.restore(saved);
  }

  /**
   * The counter part of the state file: every counter series' value now (call it with no window half counted,
   * SeriesStore.whole), and the kept part of accounts not polled here.
   */
  savedCounters(): SavedCounters {
    return this.counterKeep.save(this.polled);
  }

  /**
   * The account is no longer polled (its walker and revisits stopped): once the windows it handed over are
   * counted, so none lands after the removal, every traffic series of the account goes from the exposition. Its
   * counter values are kept (in memory and in the state file's counter part, as for an account another replica
   * polls): if it comes back it resumes at the cursor they go with, and they continue. Started again at 0, they
   * could pass their old values before the next scrape (a catch-up after a long absence): a reset no scraper
   * sees, which would hide from increase() everything the account had shown. `left` is given that cursor
   * (undefined: it had counted nothing), inside the counting lock. `atMs`: when it stopped (see forgetAway).
   */
  async removeAccount(
    account: string,
    left?: (cursor: number | undefined) => void,
    atMs?: number,
  ): Promise<void> {
    await this.applier.idle();
    // Its windows awaiting a revisit are kept with its counters: if it comes back they are revisited then.
    const pending = this.queues.get(account)?.pending ?? [];
    this.queues.delete(account);
    this.revisitKeep?.leave(account);
    this.polled.delete(account);
    // In the counting lock: the counters kept and the cursor are of one moment, and an exposition either shows
    // the account's series with its cursor or neither. `left` runs there too: no checkpoint can be taken between
    // the counters kept and the cursor they go with.
    await this.applier.remove(account, () => {
      const cursor = this.lock?.countedOf?.(account);
      const each = (fn: (family: Family, labels: readonly string[]) => void) =>
        this.mapping.eachCounter(account, fn);
      this.revisitKeep?.keep(account, pending, each);
      this.counterKeep.keep(account, each);
      this.mapping.removeAccount(account);
      this.book?.forget(account);
      left?.(cursor);
    });
    if (atMs !== undefined) this.departed.left(account, atMs);
  }

  /**
   * Forgets what was kept for the accounts that stopped before `beforeMs` and are not back (DepartedAccounts):
   * after `metrics.counter_retention`. Returns their names (their cursors go too: CursorBook.forget).
   */
  forgetAway(beforeMs: number): string[] {
    return this.departed.forgetAway(beforeMs);
  }

  /** Resolves once every window handed over so far has been counted. */
  idle(): Promise<void> {
    return this.applier.idle();
  }
}
