/**
 * The DVR poller's round over many streams (issue 33, row 7): at most ROUND_IN_FLIGHT requests started and not yet
 * applied, whatever the number of streams (400,000 started at once held a core for minutes and outlived SIGTERM),
 * answers applied in the configured order whichever came first, a stop that ends the round without waiting for
 * what is under way, and an error line of bounded length that still sees a refusal anywhere in the round.
 */
import { describe, expect, it, vi } from 'vitest';
import { DvrMapping } from '../../src/dvr/mapping.js';
import { createDvrFamilies } from '../../src/dvr/metrics.js';
import { dvrPoller, ERROR_LINE_CHARS, ROUND_IN_FLIGHT, type StreamFailure } from '../../src/dvr/poller.js';
import type { DvrStreamResponse } from '../../src/dvr/response.js';
import { ApiError } from '../../src/http/errors.js';
import type { HttpResult, RequestSpec } from '../../src/http/request.js';
import type { PollResult } from '../../src/poll/poller.js';
import type { Requester } from '../../src/poll/upstream.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';

const NOW = Date.UTC(2026, 6, 1, 12, 0);

/** A request the test answers when it likes. */
interface Held {
  stream: string;
  answer(body: DvrStreamResponse): void;
  fail(err: unknown): void;
}

/** Requests as the dvr-net client sends them, held until the test answers; counts how many are open at once. */
class HeldRequests implements Requester {
  readonly open: Held[] = [];
  sent = 0;
  mostOpen = 0;
  private waiter: (() => void) | undefined;

  request(spec: RequestSpec): Promise<HttpResult> {
    const stream = decodeURIComponent(spec.path.split('/streams/')[1]!);
    return new Promise<HttpResult>((resolve, reject) => {
      const held: Held = {
        stream,
        answer: (body) => {
          this.close(held);
          resolve({ status: 200, body });
        },
        fail: (err) => {
          this.close(held);
          reject(err);
        },
      };
      this.open.push(held);
      this.sent++;
      this.mostOpen = Math.max(this.mostOpen, this.open.length);
      this.waiter?.();
    });
  }

  /** Resolves once at least one request is open. */
  async someOpen(): Promise<void> {
    while (this.open.length === 0) await new Promise<void>((r) => (this.waiter = r));
    this.waiter = undefined;
  }

  private close(held: Held): void {
    this.open.splice(this.open.indexOf(held), 1);
  }
}

function answerFor(stream: string): DvrStreamResponse {
  return {
    streamName: stream,
    entries: [
      {
        streamName: stream,
        host: 'edge-1',
        alive: true,
        dvr: { enabled: true, window: 3600, ranges: [{ from: NOW / 1000 - 600, duration: 590 }] },
      },
    ],
    issues: [],
    unknownKeys: [],
  };
}

function setup(streams: readonly string[], requests: Requester) {
  const store = new SeriesStore();
  const mapping = new DvrMapping(createDvrFamilies(store));
  const applied: string[] = [];
  const apply = mapping.applyStream.bind(mapping);
  vi.spyOn(mapping, 'applyStream').mockImplementation((account, stream, entries, now) => {
    applied.push(stream);
    return apply(account, stream, entries, now);
  });
  const results: PollResult[] = [];
  const failedSeen: Array<ReadonlyMap<string, StreamFailure>> = [];
  let roundDone: () => void = () => undefined;
  const round = new Promise<void>((r) => (roundDone = r));
  const { log, lines } = captureLog();
  const poller = dvrPoller('acme', streams, requests, {
    clock: new FakeClock(NOW),
    log,
    intervalMs: 60_000,
    mapping,
    report: {
      result: (r) => {
        results.push(r);
        roundDone();
      },
      answer: () => undefined,
    },
    health: (_rows, failed) => failedSeen.push(failed),
  });
  return { poller, applied, results, failedSeen, round, lines };
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `live/${i}`);

describe('a DVR round over many streams', () => {
  it(`keeps at most ${ROUND_IN_FLIGHT} requests open, and applies the answers in the configured order`, async () => {
    const streams = names(1000);
    const requests = new HeldRequests();
    const s = setup(streams, requests);
    const stop = new AbortController();
    const running = s.poller.run(stop.signal);
    // The newest open request answered first: every answer but one per step arrives before an older one.
    for (let i = 0; i < streams.length; i++) {
      await requests.someOpen();
      const newest = requests.open[requests.open.length - 1]!;
      newest.answer(answerFor(newest.stream));
    }
    await s.round;
    stop.abort();
    await running;
    expect(requests.sent).toBe(streams.length);
    expect(requests.mostOpen).toBe(ROUND_IN_FLIGHT);
    expect(s.applied).toEqual(streams);
    expect(s.results).toEqual([{ ok: true, error: undefined, failures: [] }]);
  });

  it('ends a round cut by the stop without waiting for the requests under way, and reports nothing', async () => {
    const requests = new HeldRequests();
    const s = setup(names(1000), requests);
    const stop = new AbortController();
    const running = s.poller.run(stop.signal);
    await requests.someOpen();
    stop.abort();
    // The open requests are never answered: the loop ends all the same.
    await running;
    expect(requests.sent).toBe(ROUND_IN_FLIGHT);
    expect(s.results).toEqual([]);
  });

  it('names failing streams up to the line the landing page shows, and counts the rest; a refusal anywhere makes the round down', async () => {
    const streams = names(10_000);
    const requests = new HeldRequests();
    const s = setup(streams, requests);
    const stop = new AbortController();
    const running = s.poller.run(stop.signal);
    const refused = 'live/7000';
    for (let i = 0; i < streams.length; i++) {
      await requests.someOpen();
      const r = requests.open[0]!;
      // Unknown streams (404) alone would leave the API up; one refusal of the token takes the account down.
      r.fail(
        new ApiError({
          api: 'dvr-net',
          kind: r.stream === refused ? 'auth' : 'invalid',
          status: r.stream === refused ? 403 : 404,
          endpoint: `GET /app/dvr-net/v1/acme/streams/${r.stream}`,
          description: r.stream === refused ? 'Invalid token' : 'Stream not found',
        }),
      );
    }
    await s.round;
    stop.abort();
    await running;
    const [result] = s.results;
    expect(result!.ok).toBe(false);
    expect(result!.failures.some((f) => f instanceof ApiError && f.status === 403)).toBe(true);
    const error = result!.error!;
    expect(error.startsWith('live/0: 404: Stream not found')).toBe(true);
    const named = error.split('; ').filter((part) => /^live\/\d+: /.test(part)).length;
    expect(error).toMatch(
      new RegExp(`; and ${10_000 - named} more of the 10000 streams \\(cdn_dvr_stream_up names them\\)$`),
    );
    // The named part stops at the first stream that reaches ERROR_LINE_CHARS.
    const namedPart = error.slice(0, error.indexOf('; and '));
    expect(namedPart.length).toBeGreaterThanOrEqual(ERROR_LINE_CHARS);
    expect(namedPart.length - ERROR_LINE_CHARS).toBeLessThan(`; live/9999: 404: Stream not found`.length);
    // The landing page's table still gets every failing stream.
    expect(s.failedSeen[0]!.size).toBe(10_000);
    expect(s.failedSeen[0]!.get(refused)).toEqual({ error: '403: Invalid token', unknown: false });
    expect(s.lines.filter((l) => l.includes('DVR poll failed'))).toHaveLength(1);
  });
});
