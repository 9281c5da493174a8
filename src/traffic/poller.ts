/**
 * The traffic pipeline, wired in one place. One TrafficPipeline per exporter owns the traffic families, the
 * TrafficProcess that maps answers onto them and the TrafficApplier that counts windows in order; `poller()` builds
 * the AccountWalker of one account. A window enters here and leaves through the store:
 *
 *   walker (which window, when) -> fetchTraffic (gate, HTTP, parse: ./client.ts, ./parse-pool.ts, ./parse.ts)
 *   -> walker.handOver -> applier (in order, in time slices: ./applier.ts) -> process (./process.ts) -> store.
 *
 * What leaves traffic/ besides the store goes through the narrow TrafficPollerDeps below: the walker's status (for
 * the status board and the cursor book), an audit of what an answer could not give, "the store changed", and
 * "the token was refused".
 */
import type { Breakdown } from '../api/vocabulary.js';
import { type Clock, MINUTE } from '../clock.js';
import type { ParsedAnswer } from '../http/answers.js';
import { describeError } from '../http/errors.js';
import type { Logger } from '../log.js';
import type { BackoffPolicy } from '../poll/backoff.js';
import type { CountingLock, SeriesStoreApi } from '../store/types.js';
import { TrafficApplier } from './applier.js';
import type { FetchTrafficOptions } from './client.js';
import { createTrafficFamilies } from './metrics.js';
import { type ApplyResult, type SeriesLimits, TrafficProcess } from './process.js';
import type { TrafficResponse } from './response.js';
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
  /** Windows in flight per account at most (catch-up). */
  maxInFlight: number;
  backoff: BackoffPolicy;
  authBackoff: BackoffPolicy;
  /** Caps on new series (limits.*); none when absent. */
  limits?: SeriesLimits;
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
  /** One metrics API request, through the token's request gate; failures are ApiError values. */
  fetchTraffic(o: FetchTrafficOptions): Promise<TrafficResponse>;
  /** The walker's status after every change (cursor, up, window size, errors). */
  onStatus(s: WalkerStatus): void;
  /** A counted answer: what it had that could not be used (`dropped`: records the process could not attribute). */
  audit(answer: ParsedAnswer, dropped: number): void;
  /**
   * What the caps refused or truncated in a counted window (`refused` absent: nothing refused). Called for every
   * counted window, so a refusal that stopped can be told.
   */
  limited?(r: ApplyResult): void;
  /** The store changed (a window counted or skipped). */
  storeChanged(): void;
  /** The API refused the token (401/403): it may have been rotated. */
  refused(): void;
}

export class TrafficPipeline {
  readonly process: TrafficProcess;
  private readonly applier: TrafficApplier;
  private readonly asked: readonly string[];
  private readonly onlyResource: string | undefined;

  /**
   * `lock`: where windows are counted whole and each account's counted cursor is kept (the series store), so
   * that an exposition carries the cursor up to which it shows every window (./applier.ts).
   */
  constructor(
    store: SeriesStoreApi,
    private readonly opts: TrafficPipelineOptions,
    lock?: CountingLock,
  ) {
    this.process = new TrafficProcess(
      createTrafficFamilies(store, { breakdown: opts.breakdown, windowGauges: opts.windowGauges }),
      { metrics: opts.metrics, resources: opts.resources, limits: opts.limits },
    );
    this.applier = new TrafficApplier(this.process, { lock });
    this.asked = opts.metrics.length ? opts.metrics : opts.allMetrics;
    this.onlyResource = opts.resources.length === 1 ? opts.resources[0] : undefined;
  }

  /** The walker of one account: run it with `run(signal)`. */
  poller(account: string, d: TrafficPollerDeps): AccountWalker {
    const { opts, process, applier } = this;
    process.initAccount(account, 10);
    // The span the state file's cursor was moved over at start: counted as skipped at once. The counted cursor
    // starts past it (startAt below), at the walker's first cursor.
    if (d.givenUp) process.skip(account, (d.givenUp.to - d.givenUp.from) / MINUTE, 'catch_up_limit');
    const walker = new AccountWalker(
      {
        account,
        windowMs: opts.windowMs,
        delayMs: opts.delayMs,
        lookbackMs: opts.lookbackMs,
        startCursor: d.startCursor,
        maxInFlight: opts.maxInFlight,
        backoff: opts.backoff,
        authBackoff: opts.authBackoff,
      },
      {
        clock: d.clock,
        log: d.log,
        random: d.random,
        fetchWindow: (start, end) =>
          d.fetchTraffic({
            account,
            start,
            end,
            metrics: this.asked,
            resource: this.onlyResource,
            breakdown: opts.breakdown,
          }),
        // Counted in time slices, in order (a big answer must not stall /metrics); see ./applier.ts.
        handOver: (start, end, response) =>
          applier.apply(account, start, end, response, d.clock.now(), (r, err) => {
            if (!r) {
              d.log.error({ error: describeError(err) }, 'counting a traffic window failed');
              return;
            }
            d.audit(response, r.dropped);
            d.limited?.(r);
            d.storeChanged();
          }),
        // In its turn after the windows queued before it: the counted cursor moves in order.
        skip: (start, end, reason) =>
          applier.skip(account, start, end, () => {
            process.skip(account, (end - start) / MINUTE, reason);
            d.storeChanged();
          }),
        onStatus: (s) => {
          d.onStatus(s);
          process.setWindowSize(s.account, s.maxWindowMinutes);
        },
        authFailed: d.refused,
      },
    );
    applier.startAt(account, walker.current.cursor);
    return walker;
  }

  /**
   * The account is no longer polled (its walker stopped): once the windows it handed over are counted, so none
   * lands after the removal, every traffic series of the account goes.
   */
  async removeAccount(account: string): Promise<void> {
    await this.applier.idle();
    // In the counting lock, with its counted cursor: an exposition either shows the account's series with its
    // cursor or neither. A cursor left behind would let a later scrape save windows it never showed.
    await this.applier.remove(account, () => this.process.removeAccount(account));
  }

  /** Resolves once every window handed over so far has been counted. */
  idle(): Promise<void> {
    return this.applier.idle();
  }
}
