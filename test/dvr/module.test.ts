/**
 * The dvr-net API as one value of the exporter's API table (src/dvr/module.ts; the contract src/poll/api-module.ts,
 * docs/architecture.md "The API table"), wired as the exporter wires it, against the simulator's dvr-net API served
 * alone on loopback: polled for an account that lists `dvr_streams` only; its sink makes the `cdn_dvr_*` families on
 * the store; its poller, from the account's upstream and the configuration, polls every stream at once and again
 * each `dvr.interval`, through the body parser of the module's own codec, and hands each round's rows to the
 * status board; removing the account removes its series; its problem table lists failed streams first, then the
 * hosts not alive or below COVERAGE_PROBLEM of their window.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/index.js';
import { dvrCodec } from '../../src/dvr/codec.js';
import { COVERAGE_PROBLEM, type DvrRound, dvrModule, dvrProblems } from '../../src/dvr/module.js';
import { createDvrSim } from '../../src/simulator/dvr.js';
import { moduleConfig, wireModule } from '../helpers/module-wiring.js';
import { closeUpstreams, recordedUpstream } from '../helpers/recorded-upstream.js';
import { ACME_TOKEN, closeServed, startApi, twoAccounts } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;

afterEach(async () => {
  await closeUpstreams();
  await closeServed();
});

/** The configuration (acme lists a stream the API has and one it does not know). */
function config(): Config {
  return moduleConfig(
    ACME_TOKEN,
    'dvr: { interval: 2m }',
    `  - name: acme
    dvr_streams: [live/main, gone/away]
  - name: other
    recordings: true
`,
  );
}

describe('dvrModule', () => {
  it('polls an account that lists dvr_streams, and no other', () => {
    const [acme, other] = config().accounts;
    expect(dvrModule.api).toBe('dvr-net');
    expect(dvrModule.codec).toBe(dvrCodec);
    expect(dvrModule.polls(acme!)).toBe(true);
    expect(dvrModule.polls(other!)).toBe(false);
  });

  it("wired as the exporter wires it: rounds every dvr.interval through its codec's parser, rows to the board", async () => {
    const { clock, base } = await startApi(
      '/app/dvr-net/v1',
      T0,
      (c) =>
        twoAccounts(c, 7, {
          recordings: [],
          streams: [{ name: 'live/main', hosts: ['h1', 'h2'], window: 3600 }],
        }),
      createDvrSim,
    );
    await clock.advance(30 * MIN);
    const cfg = config();
    const acme = cfg.accounts[0]!;
    const { upstream, sent } = recordedUpstream(base, clock, ACME_TOKEN);
    const w = wireModule(dvrModule, { account: acme, upstream, clock, config: cfg });
    expect(w.asked).toEqual([dvrCodec]);
    await w.whileRunning(async () => {
      const [round, caps] = await w.rounds.nth(1);
      expect(sent.map((s) => s.path)).toEqual([
        '/app/dvr-net/v1/acme/streams/live/main',
        '/app/dvr-net/v1/acme/streams/gone/away',
      ]);
      // The API answers for the account even though one stream is unknown: the round is ok (cdn_up 1).
      expect(w.results).toEqual([expect.objectContaining({ ok: true })]);
      expect(round.health.map((h) => [h.account, h.stream, h.host, h.alive])).toEqual([
        ['acme', 'live/main', 'h1', true],
        ['acme', 'live/main', 'h2', true],
      ]);
      expect([...round.failed.keys()]).toEqual(['gone/away']);
      expect(round.failed.get('gone/away')!.unknown).toBe(true);
      expect(caps).toEqual({ refused: {} });
      const scrape = w.scrape();
      expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'live/main' })).toBe(1);
      expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'gone/away' })).toBe(0);
      expect(scrape.all('cdn_dvr_stream_alive', { account: 'acme', stream: 'live/main' })).toHaveLength(2);

      // dvr.interval later (2m, the configuration's, not the default 1m), the next round.
      await w.nextRound(2 * MIN);
      expect(sent).toHaveLength(4);
    });

    w.removeAccount();
    expect(w.store.size).toBe(0);
  });
});

describe("the DVR problem table (dvrModule.problems, table 'dvr')", () => {
  const health = (host: string, alive: boolean, coverage?: number) => ({
    account: 'acme',
    stream: 'live/main',
    host,
    alive,
    enabled: true,
    coverage,
    largestGap: 0,
  });

  it('lists every failed stream first, then the hosts not alive or below COVERAGE_PROBLEM', () => {
    expect(dvrModule.problems?.table).toBe('dvr');
    expect(dvrModule.problems?.problems).toBe(dvrProblems);
    const rounds = new Map<string, DvrRound>([
      [
        'acme',
        {
          health: [
            health('dead', false, 1),
            health('full', true, COVERAGE_PROBLEM),
            health('thin', true, 0.5),
            health('edge', true, 0.896),
            health('new', true, undefined),
          ],
          failed: new Map([
            ['gone/away', { error: '404 invalid: Stream gone/away not found', unknown: true }],
          ]),
        },
      ],
      [
        'beta',
        { health: [], failed: new Map([['live/x', { error: 'dvr-net: 503 server', unknown: false }]]) },
      ],
    ]);
    expect(dvrProblems(rounds)).toEqual([
      {
        account: 'acme',
        stream: 'gone/away',
        problem: 'unknown stream (404 invalid: Stream gone/away not found)',
      },
      { account: 'beta', stream: 'live/x', problem: 'poll failed: dvr-net: 503 server' },
      { account: 'acme', stream: 'live/main', host: 'dead', problem: 'not alive' },
      { account: 'acme', stream: 'live/main', host: 'thin', problem: 'coverage 50%' },
      // Just under the threshold: it reads as under it.
      { account: 'acme', stream: 'live/main', host: 'edge', problem: 'coverage 89%' },
    ]);
  });
});
