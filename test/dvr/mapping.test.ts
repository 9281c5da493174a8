/**
 * The DVR mapping (src/dvr/mapping.ts): one poll of a stream's hosts onto the DVR families, as a user reads them on
 * /metrics (docs/metrics.md, "DVR health (dvr-net API)"): per account, stream and host whether it is alive, DVR on, its window and how
 * well its ranges cover it; a host gone from the answer loses its series at once, a figure the answer cannot give
 * has no series (never NaN), and cdn_dvr_stream_up says whether the stream's poll was answered whatever its hosts
 * say. The caps on hosts: limits.test.ts; the range arithmetic: ranges.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DvrMapping } from '../../src/dvr/mapping.js';
import { createDvrFamilies } from '../../src/dvr/metrics.js';
import type { DvrHostEntry } from '../../src/dvr/response.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';

const NOW = 1_790_000_000;

function entry(host: string, over: Partial<DvrHostEntry['dvr']> = {}, alive = true): DvrHostEntry {
  return {
    streamName: 'live/main',
    host,
    alive,
    dvr: { enabled: true, window: 3600, ranges: [{ from: NOW - 600, duration: 590 }], ...over },
  };
}

function setup() {
  const store = new SeriesStore();
  const mapping = new DvrMapping(createDvrFamilies(store));
  const scrape = () => Scrape.of(store.render('text').toString());
  /** The names of the families with a series for this host. */
  const familiesOf = (host: string) =>
    [
      ...new Set(
        scrape()
          .samples.filter((s) => s.labels.host === host)
          .map((s) => s.name),
      ),
    ].sort();
  return { store, mapping, scrape, familiesOf };
}

const PER_HOST = [
  'cdn_dvr_coverage_ratio',
  'cdn_dvr_enabled',
  'cdn_dvr_first_timestamp_seconds',
  'cdn_dvr_gap_seconds',
  'cdn_dvr_largest_gap_seconds',
  'cdn_dvr_last_timestamp_seconds',
  'cdn_dvr_ranges',
  'cdn_dvr_recorded_seconds',
  'cdn_dvr_stream_alive',
  'cdn_dvr_window_seconds',
];

describe('the DVR mapping', () => {
  it("exposes each host's health under account, stream and host, and returns it for the landing page", () => {
    const { mapping, scrape, familiesOf } = setup();
    const health = mapping.applyStream(
      'acme',
      'live/main',
      [
        entry('edge-1', {
          ranges: [
            { from: NOW - 1800, duration: 600 },
            { from: NOW - 900, duration: 880 },
          ],
        }),
        entry('edge-2', { enabled: false }, false),
      ],
      NOW,
    );
    const s = scrape();
    const host1 = { account: 'acme', stream: 'live/main', host: 'edge-1' };
    expect(familiesOf('edge-1')).toEqual(PER_HOST);
    expect(s.value('cdn_dvr_stream_alive', host1)).toBe(1);
    expect(s.value('cdn_dvr_enabled', host1)).toBe(1);
    expect(s.value('cdn_dvr_window_seconds', host1)).toBe(3600);
    expect(s.value('cdn_dvr_ranges', host1)).toBe(2);
    expect(s.value('cdn_dvr_recorded_seconds', host1)).toBe(1480);
    expect(s.value('cdn_dvr_first_timestamp_seconds', host1)).toBe(NOW - 1800);
    expect(s.value('cdn_dvr_last_timestamp_seconds', host1)).toBe(NOW - 20);
    expect(s.value('cdn_dvr_largest_gap_seconds', host1)).toBe(300);
    expect(s.value('cdn_dvr_coverage_ratio', host1)).toBeCloseTo(1480 / 3600, 12);
    expect(s.value('cdn_dvr_stream_alive', { host: 'edge-2' })).toBe(0);
    expect(s.value('cdn_dvr_enabled', { host: 'edge-2' })).toBe(0);
    expect(health).toEqual([
      {
        account: 'acme',
        stream: 'live/main',
        host: 'edge-1',
        alive: true,
        enabled: true,
        coverage: 1480 / 3600,
        largestGap: 300,
        lastEnd: NOW - 20,
      },
      expect.objectContaining({ host: 'edge-2', alive: false, enabled: false }),
    ]);
  });

  it('gives a figure the answer cannot give no series at all: no window, no coverage; no ranges, no timestamps', () => {
    const { mapping, familiesOf } = setup();
    mapping.applyStream('acme', 'live/main', [entry('edge-1', { window: undefined, ranges: [] })], NOW);
    expect(familiesOf('edge-1')).toEqual([
      'cdn_dvr_enabled',
      'cdn_dvr_gap_seconds',
      'cdn_dvr_largest_gap_seconds',
      'cdn_dvr_ranges',
      'cdn_dvr_recorded_seconds',
      'cdn_dvr_stream_alive',
    ]);
    // Once the answer has them again, they come back.
    mapping.applyStream('acme', 'live/main', [entry('edge-1')], NOW);
    expect(familiesOf('edge-1')).toEqual(PER_HOST);
  });

  it('drops every series of a host gone from the newest answer at once, and keeps the others', () => {
    const { mapping, familiesOf } = setup();
    mapping.applyStream('acme', 'live/main', [entry('edge-1'), entry('edge-2')], NOW);
    mapping.applyStream('acme', 'live/main', [entry('edge-2')], NOW + 60);
    expect(familiesOf('edge-1')).toEqual([]);
    expect(familiesOf('edge-2')).toEqual(PER_HOST);
  });

  it('takes the first entry of a host listed twice', () => {
    const { mapping, scrape } = setup();
    const health = mapping.applyStream(
      'acme',
      'live/main',
      [entry('edge-1'), entry('edge-1', {}, false)],
      NOW,
    );
    expect(health).toHaveLength(1);
    expect(scrape().all('cdn_dvr_stream_alive')).toHaveLength(1);
    expect(scrape().value('cdn_dvr_stream_alive', { host: 'edge-1' })).toBe(1);
  });

  it('keeps the same host of two streams and of two accounts apart', () => {
    const { mapping, scrape } = setup();
    mapping.applyStream('acme', 'live/main', [entry('edge-1')], NOW);
    mapping.applyStream('acme', 'news', [entry('edge-1', {}, false)], NOW);
    mapping.applyStream('other', 'live/main', [entry('edge-1', { window: 60 })], NOW);
    mapping.applyStream('acme', 'news', [], NOW);
    const s = scrape();
    expect(s.all('cdn_dvr_stream_alive').map((x) => `${x.labels.account} ${x.labels.stream}`)).toEqual([
      'acme live/main',
      'other live/main',
    ]);
    expect(s.value('cdn_dvr_window_seconds', { account: 'acme' })).toBe(3600);
    expect(s.value('cdn_dvr_window_seconds', { account: 'other' })).toBe(60);
  });

  it("says with cdn_dvr_stream_up whether a stream's poll was answered; a stream removed keeps it, an account removed not", () => {
    const { mapping, scrape, familiesOf } = setup();
    mapping.applyStream('acme', 'live/main', [entry('edge-1')], NOW);
    mapping.streamPolled('acme', 'live/main', true);
    mapping.streamPolled('acme', 'news', false);
    mapping.applyStream('other', 'live/main', [entry('edge-9')], NOW);
    mapping.streamPolled('other', 'live/main', true);
    expect(scrape().value('cdn_dvr_stream_up', { account: 'acme', stream: 'live/main' })).toBe(1);
    expect(scrape().value('cdn_dvr_stream_up', { account: 'acme', stream: 'news' })).toBe(0);

    // A stream that no longer exists: its hosts' series go; the stream is still configured, and failing.
    mapping.removeStream('acme', 'live/main');
    mapping.streamPolled('acme', 'live/main', false);
    expect(familiesOf('edge-1')).toEqual([]);
    expect(scrape().value('cdn_dvr_stream_up', { account: 'acme', stream: 'live/main' })).toBe(0);

    mapping.removeAccount('acme', ['live/main', 'news']);
    const s = scrape();
    expect(s.all('cdn_dvr_stream_up', { account: 'acme' })).toEqual([]);
    expect(s.value('cdn_dvr_stream_up', { account: 'other' })).toBe(1);
    expect(familiesOf('edge-9')).toEqual(PER_HOST);
  });
});
