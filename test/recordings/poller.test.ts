/**
 * The recordings poller of one account (src/recordings/poller.ts), against the recorder-cloud simulator served
 * alone on loopback (test/helpers/sim-api.ts) on a FakeClock: a round every `recordings.interval` lists every
 * recording setting of the account, finished instances and their status included, and maps them onto the
 * recording families; a round that fails is reported as a result (never thrown), logged once per change of cause,
 * and tried again at the next interval; a stop ends the loop, also while it waits for the next round.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ParsedAnswer } from '../../src/http/answers.js';
import { ApiError } from '../../src/http/errors.js';
import type { PollResult } from '../../src/poll/poller.js';
import { type RecordingSummary, RecordingsMapping } from '../../src/recordings/mapping.js';
import { createRecordingFamilies } from '../../src/recordings/metrics.js';
import { recordingsPoller } from '../../src/recordings/poller.js';
import type { SimRecordingSeed } from '../../src/simulator/types.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { RecorderTestClient } from '../helpers/api-writes.js';
import { Arrivals } from '../helpers/arrivals.js';
import { Scrape } from '../helpers/exposition.js';
import { settle } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { startPoller } from '../helpers/module-wiring.js';
import { closeUpstreams, recorderUpstream } from '../helpers/recorded-upstream.js';
import { ACME_TOKEN, closeServed } from '../helpers/sim-api.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
/** recordings.interval. */
const INTERVAL = 60_000;

const SEEDS: SimRecordingSeed[] = [
  {
    streamName: 'live/main',
    source: 'https://src.example/live/main.m3u8',
    streamType: 'short',
    launchType: 'button',
  },
  {
    streamName: 'news',
    source: 'https://src.example/news.m3u8',
    streamType: 'long',
    launchType: 'stream_start',
  },
  {
    streamName: 'archive',
    source: 'https://src.example/archive.m3u8',
    streamType: 'long',
    launchType: 'button',
    status: 'finish',
  },
];

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
  await closeUpstreams();
  await closeServed();
});

/** The poller of `acme` over the simulator's recorder-cloud API, running until the test ends. */
async function start() {
  const creds = { token: ACME_TOKEN };
  const { clock, http, upstream, sent } = await recorderUpstream(T0, SEEDS, () => creds.token);
  const store = new SeriesStore();
  const results = new Arrivals<PollResult>();
  const answers: ParsedAnswer[] = [];
  const summaries: RecordingSummary[][] = [];
  const { log, lines } = captureLog();
  const poller = recordingsPoller('acme', upstream, {
    clock,
    log,
    intervalMs: INTERVAL,
    mapping: new RecordingsMapping(createRecordingFamilies(store)),
    report: { result: (r) => results.push(r), answer: (a) => answers.push(a) },
    summary: (rows) => summaries.push(rows),
  });
  const stopped = startPoller(poller);
  stops.push(stopped);
  const ids = () =>
    Scrape.of(store.render('text').toString())
      .all('cdn_recording_info')
      .map((s) => `${s.labels.account} ${s.labels.id}`)
      .sort();
  return { clock, http, creds, sent, results, answers, summaries, lines, ids, stopped };
}

describe('the recordings poller of one account', () => {
  it('lists every setting with its finished instances and status, and maps each onto the recording families', async () => {
    const p = await start();
    expect(await p.results.nth(1)).toEqual({ ok: true, error: undefined, failures: [] });

    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]).toMatchObject({
      api: 'recorder-cloud',
      method: 'GET',
      path: '/app/recorder-cloud/v1/acme/record',
    });
    expect(p.sent[0]!.query).toEqual(
      expect.arrayContaining([
        ['all', null],
        ['extra_fields', 'status'],
      ]),
    );
    expect(p.answers).toHaveLength(1);

    const [rows] = p.summaries;
    expect(rows).toHaveLength(SEEDS.length);
    expect(Object.fromEntries(rows!.map((r) => [r.sourcePath, r.status]))).toMatchObject({
      '/archive.m3u8': 'finish',
    });
    expect(rows!.every((r) => r.account === 'acme')).toBe(true);
    // One info series per setting, the account's own only.
    expect(p.ids()).toEqual(rows!.map((r) => `acme ${r.id}`).sort());
  });

  it('polls again every interval, not before: a setting created meanwhile appears at the next round', async () => {
    const p = await start();
    await p.results.nth(1);
    const { id } = await new RecorderTestClient(p.http).createSetting('acme', {
      streamName: 'sports',
      source: 'https://src.example/sports.m3u8',
      streamType: 'long',
      launchType: 'button',
    });

    // The loop waits on the clock for the next round; a millisecond short of it, that wait is still parked.
    await p.clock.advance(INTERVAL - 1);
    expect(p.clock.pending).toBe(1);
    expect(p.results.all).toHaveLength(1);
    expect(p.ids()).not.toContain(`acme ${id}`);

    await p.clock.advance(1);
    expect(await p.results.nth(2)).toMatchObject({ ok: true });
    expect(p.sent).toHaveLength(2);
    expect(p.ids()).toContain(`acme ${id}`);
    expect(p.ids()).toHaveLength(SEEDS.length + 1);
  });

  it('reports a failed round with its ApiError, warns once per cause, retries at the interval and says it recovered', async () => {
    const p = await start();
    expect((await p.results.nth(1)).ok).toBe(true);
    p.creds.token = 'not-a-token';
    await p.clock.advance(INTERVAL);
    const failed = await p.results.nth(2);
    expect(failed.ok).toBe(false);
    expect(failed.error).toMatch(/401/);
    expect(failed.failures).toHaveLength(1);
    expect(failed.failures[0]).toBeInstanceOf(ApiError);
    expect((failed.failures[0] as ApiError).kind).toBe('auth');

    await p.clock.advance(INTERVAL);
    expect((await p.results.nth(3)).ok).toBe(false);
    const warned = () => p.lines.filter((l) => l.includes('recordings poll failed'));
    expect(warned()).toHaveLength(1);
    expect(JSON.parse(warned()[0]!)).toMatchObject({ api: 'recorder-cloud', error: failed.error });
    // The settings mapped before the failure stay as they were.
    expect(p.ids()).toHaveLength(SEEDS.length);

    p.creds.token = ACME_TOKEN;
    await p.clock.advance(INTERVAL);
    expect(await p.results.nth(4)).toEqual({ ok: true, error: undefined, failures: [] });
    expect(p.lines.filter((l) => l.includes('recordings poll recovered'))).toHaveLength(1);
    expect(warned()).toHaveLength(1);
    expect(p.lines.join('\n')).not.toContain('not-a-token');
  });

  it('ends on stop while waiting for the next round, leaving no wait on the clock', async () => {
    const p = await start();
    await p.results.nth(1);
    await settle();
    expect(p.clock.pending).toBe(1);
    await p.stopped();
    expect(p.clock.pending).toBe(0);
    await p.clock.advance(INTERVAL);
    expect(p.results.all).toHaveLength(1);
  });
});
