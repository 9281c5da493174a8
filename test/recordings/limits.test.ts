/**
 * Series caps for recording settings (issue 15): a 50 MB recording id is refused, a long source path truncated,
 * and new settings beyond limits.max_series are refused in the order of their ids while known ones update.
 */
import { describe, expect, it } from 'vitest';
import { RecordingsMapping, SERIES_PER_SETTING } from '../../src/recordings/mapping.js';
import { createRecordingFamilies } from '../../src/recordings/metrics.js';
import type { RecordingSetting } from '../../src/recordings/response.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';

function setting(id: string, extra: Partial<RecordingSetting> = {}): RecordingSetting {
  return { id, qualities: null, records: [], path: null, storageTime: 3, dvrEnabled: true, ...extra };
}

function setup(maxSeries: number) {
  const store = new SeriesStore();
  const p = new RecordingsMapping(createRecordingFamilies(store), {
    maxSeries,
    maxLabelLength: 1024,
    storeSize: () => store.size,
  });
  const ids = () =>
    Scrape.of(store.render('text').toString())
      .all('cdn_recording_info')
      .map((s) => s.labels.id)
      .sort();
  return { p, store, ids, scrape: () => Scrape.of(store.render('text').toString()) };
}

describe('series caps for recording settings', () => {
  it('refuses a 50 MB id and truncates a long source path, and counts both', () => {
    const { p, ids, scrape } = setup(1_000_000);
    p.apply('acme', [
      setting('x'.repeat(50 << 20)),
      setting('ok', { sourcePath: `/live/${'p'.repeat(5000)}` }),
    ]);
    expect(p.refused.label_too_long).toBeGreaterThan(0);
    expect(p.truncated).toBe(1);
    expect(ids()).toEqual(['ok']);
    const path = scrape().all('cdn_recording_info')[0]!.labels.source_path!;
    expect(Buffer.byteLength(path)).toBeLessThanOrEqual(1024);
    expect(path.endsWith('...(truncated)')).toBe(true);
  });

  it('admits new settings in id order while there is room; known ones keep updating', () => {
    // Room for two settings as the cap counts them (each at most SERIES_PER_SETTING series), not three.
    const max = 3 * SERIES_PER_SETTING - 1;
    const { p, store, ids, scrape } = setup(max);
    p.apply('acme', [setting('c'), setting('a'), setting('b'), setting('d')]);
    expect(ids()).toEqual(['a', 'b']);
    expect(p.refused).toEqual({ max_series: 2 * SERIES_PER_SETTING });
    // a and b hold fewer series than the cap reckons with: the room left is used next time, in id order again.
    p.apply('acme', [
      setting('e'),
      setting('a', { storageTime: 7 }),
      setting('b'),
      setting('d'),
      setting('c'),
    ]);
    expect(ids().slice(0, 3)).toEqual(['a', 'b', 'c']);
    expect(store.size).toBeLessThanOrEqual(max);
    expect(scrape().value('cdn_recording_storage_seconds', { id: 'a' })).toBe(7 * 86_400);
  });
});
