/**
 * The recorder-cloud API as one value of the exporter's API table (src/recordings/module.ts; the contract
 * src/poll/api-module.ts, docs/architecture.md "The API table"), wired as the exporter wires it, against the
 * simulator's recorder-cloud API served alone on loopback: polled for an account with `recordings: true` only; its
 * sink makes the `cdn_recording_*` families on the store under the caps given; its poller, from the account's
 * upstream and the configuration, lists the settings at once and again each `recordings.interval`, through the
 * body parser of the module's own codec, and hands each round's rows and what the caps refused to the status
 * board; removing the account removes its series; its problem table lists the recordings in `error`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/index.js';
import { recordingsCodec } from '../../src/recordings/codec.js';
import { type RecordingSummary, SERIES_PER_SETTING } from '../../src/recordings/mapping.js';
import { recordingProblems, recordingsModule } from '../../src/recordings/module.js';
import type { SimRecordingSeed } from '../../src/simulator/types.js';
import { moduleConfig, wireModule } from '../helpers/module-wiring.js';
import { closeUpstreams, recorderUpstream } from '../helpers/recorded-upstream.js';
import { ACME_TOKEN, closeServed } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const MIN = 60_000;

const SEEDS: SimRecordingSeed[] = [
  {
    streamName: 'live/main',
    source: 'https://src.example/live/main.m3u8',
    streamType: 'short',
    launchType: 'button',
  },
  {
    streamName: 'broken',
    source: 'https://src.example/broken.m3u8',
    streamType: 'long',
    launchType: 'button',
    status: 'error',
    resourceId: '1004',
  },
  { streamName: 'third', source: 'https://src.example/third.m3u8', streamType: 'long', launchType: 'button' },
];

afterEach(async () => {
  await closeUpstreams();
  await closeServed();
});

/** The configuration (acme with recordings). */
function config(): Config {
  return moduleConfig(
    ACME_TOKEN,
    'recordings: { interval: 3m }',
    `  - name: acme
    recordings: true
  - name: other
    dvr_streams: [live/main]
`,
  );
}

describe('recordingsModule', () => {
  it('polls an account with recordings: true, and no other', () => {
    const [acme, other] = config().accounts;
    expect(recordingsModule.api).toBe('recorder-cloud');
    expect(recordingsModule.codec).toBe(recordingsCodec);
    expect(recordingsModule.polls(acme!)).toBe(true);
    expect(recordingsModule.polls(other!)).toBe(false);
  });

  it("wired as the exporter wires it: rounds every recordings.interval through its codec's parser, rows and caps to the board", async () => {
    const { clock, upstream, sent } = await recorderUpstream(T0, SEEDS);
    const cfg = config();
    const acme = cfg.accounts[0]!;
    // Room for two settings' series: the third is refused whole.
    const w = wireModule(recordingsModule, {
      account: acme,
      upstream,
      clock,
      config: cfg,
      maxSeries: 2 * SERIES_PER_SETTING,
    });
    expect(w.asked).toEqual([recordingsCodec]);
    await w.whileRunning(async () => {
      const [rows, caps] = await w.rounds.nth(1);
      expect(sent.map((s) => [s.path, s.query])).toEqual([
        [
          '/app/recorder-cloud/v1/acme/record',
          [
            ['all', null],
            ['extra_fields', 'status'],
          ],
        ],
      ]);
      expect(w.results.map((r) => r.ok)).toEqual([true]);
      expect(rows.map((r) => [r.account, r.status, r.sourcePath])).toEqual([
        ['acme', 'wait', '/live/main.m3u8'],
        ['acme', 'error', '/broken.m3u8'],
      ]);
      expect(caps).toEqual({ refused: { max_series: SERIES_PER_SETTING }, truncated: 0 });
      expect(w.scrape().all('cdn_recording_info', { account: 'acme' })).toHaveLength(2);

      // recordings.interval later (3m, the configuration's, not the default 1m), the next round.
      await w.nextRound(3 * MIN);
      expect(sent).toHaveLength(2);
    });

    w.removeAccount();
    expect(w.store.size).toBe(0);
  });
});

describe("the recordings problem table (recordingsModule.problems, table 'recordings')", () => {
  it("lists every account's recordings in error, and nothing else", () => {
    expect(recordingsModule.problems?.table).toBe('recordings');
    expect(recordingsModule.problems?.problems).toBe(recordingProblems);
    const row = (account: string, id: string, status?: RecordingSummary['status']): RecordingSummary => ({
      account,
      id,
      status,
      sourcePath: `/${id}.m3u8`,
      sourceDomain: 'src.example',
      resourceId: '1004',
    });
    const rows = new Map([
      ['acme', [row('acme', 'a', 'wait'), row('acme', 'b', 'error'), row('acme', 'c')]],
      ['beta', [row('beta', 'd', 'error'), row('beta', 'e', 'finish')]],
    ]);
    expect(recordingProblems(rows)).toEqual([
      { ...row('acme', 'b', 'error'), problem: 'recording in error' },
      { ...row('beta', 'd', 'error'), problem: 'recording in error' },
    ]);
    expect(recordingProblems(new Map())).toEqual([]);
  });
});
