/**
 * Series caps for DVR hosts (issue 15): a host name over limits.max_label_length is refused, and hosts new to the
 * store beyond limits.max_series are refused in the order of their names while known ones keep updating.
 */
import { describe, expect, it } from 'vitest';
import { DvrMapping } from '../../src/dvr/mapping.js';
import { createDvrFamilies } from '../../src/dvr/metrics.js';
import type { DvrHostEntry } from '../../src/dvr/response.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';

const NOW = 1_790_000_000;

function entry(host: string, alive = true): DvrHostEntry {
  return {
    streamName: 'live',
    host,
    alive,
    dvr: { enabled: true, window: 3600, ranges: [{ from: NOW - 600, duration: 590 }] },
  };
}

function setup(maxSeries: (perHost: number) => number, maxLabelLength = 1024) {
  const store = new SeriesStore();
  const families = createDvrFamilies(store);
  // The per-host families: every one but cdn_dvr_stream_up.
  const perHost = Object.keys(families).length - 1;
  const p = new DvrMapping(families, {
    maxSeries: maxSeries(perHost),
    maxLabelLength,
    storeSize: () => store.size,
  });
  const alive = () =>
    Object.fromEntries(
      Scrape.of(store.render('text').toString())
        .all('cdn_dvr_stream_alive')
        .map((s) => [s.labels.host!, s.value]),
    );
  return { p, store, perHost, alive };
}

describe('series caps for DVR hosts', () => {
  it('refuses a host name longer than limits.max_label_length, whole, and counts its series', () => {
    const { p, perHost, alive } = setup(() => 1_000_000, 64);
    p.applyStream('acme', 'live', [entry('h'.repeat(50_000)), entry('edge-1')], NOW);
    expect(Object.keys(alive())).toEqual(['edge-1']);
    expect(p.refused('acme')).toEqual({ label_too_long: perHost });
  });

  it('admits new hosts in name order while there is room; known hosts keep updating', () => {
    // Room for two hosts' series, not three.
    const { p, perHost, alive } = setup((perHost) => 3 * perHost - 1);
    p.applyStream('acme', 'live', [entry('c'), entry('a'), entry('d'), entry('b')], NOW);
    expect(alive()).toEqual({ a: 1, b: 1 });
    expect(p.refused('acme')).toEqual({ max_series: 2 * perHost });

    // A known host changes; the cap still refuses the new ones.
    p.applyStream('acme', 'live', [entry('d'), entry('a', false), entry('c'), entry('b')], NOW);
    expect(alive()).toEqual({ a: 0, b: 1 });

    // a goes away: its room goes to the first refused host by name.
    p.applyStream('acme', 'live', [entry('d'), entry('c'), entry('b')], NOW);
    expect(alive()).toEqual({ b: 1, c: 1 });
    expect(p.refused('acme')).toEqual({ max_series: perHost });
  });

  it('sums the refusals of every stream of the account, and forgets a stream that goes', () => {
    const { p, perHost } = setup((perHost) => 2 * perHost - 1);
    p.applyStream('acme', 'one', [entry('a'), entry('b')], NOW);
    p.applyStream('acme', 'two', [entry('x')], NOW);
    expect(p.refused('acme')).toEqual({ max_series: 2 * perHost });
    p.removeStream('acme', 'two');
    expect(p.refused('acme')).toEqual({ max_series: perHost });
    expect(p.refused('globex')).toEqual({});
  });
});
