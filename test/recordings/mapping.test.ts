/**
 * RecordingsMapping deletes a setting's series by their exact labels (not by scanning the families): what a user
 * checks is that a setting whose labels change, loses its status, vanishes or whose account goes leaves no series
 * behind, and that the other settings keep theirs.
 */
import { describe, expect, it } from 'vitest';
import { RecordingsMapping } from '../../src/recordings/mapping.js';
import { createRecordingFamilies } from '../../src/recordings/metrics.js';
import type { RecordingSetting } from '../../src/recordings/response.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';

function setting(id: string, extra: Partial<RecordingSetting> = {}): RecordingSetting {
  return {
    id,
    qualities: null,
    records: [{ start: 1_767_261_600_000, stop: 1_767_265_200_000 }],
    path: null,
    storageTime: 3,
    dvrEnabled: true,
    dvrWindow: 600,
    sourcePath: `/live/${id}`,
    status: 'progress',
    ...extra,
  };
}

function setup() {
  const store = new SeriesStore();
  const p = new RecordingsMapping(createRecordingFamilies(store), {
    maxSeries: 1_000_000,
    maxLabelLength: 1024,
    storeSize: () => store.size,
  });
  /** Every recording series, as `name{account,id,...}` lines, sorted. */
  const series = () => {
    const s = Scrape.of(store.render('text').toString());
    return s.samples
      .filter((x) => x.name.startsWith('cdn_recording_'))
      .map((x) => `${x.name} ${JSON.stringify(x.labels)}`)
      .sort();
  };
  return { p, series };
}

describe('RecordingsMapping series lifecycle', () => {
  it('a changed label, a status gone, a setting gone and an account gone leave no series behind', () => {
    const { p, series } = setup();
    p.apply('acme', [setting('a'), setting('b'), setting('c')]);
    p.apply('beta', [setting('a')]);
    const three = series().filter((l) => l.includes('"account":"acme"'));
    // Per setting: info, 4 status states, instances, last start and stop, DVR on and window, storage.
    expect(three).toHaveLength(3 * 11);

    p.apply('acme', [setting('a', { sourcePath: '/live/moved' }), setting('b', { status: undefined })]);
    const acme = series().filter((l) => l.includes('"account":"acme"'));
    const info = acme.filter((l) => l.startsWith('cdn_recording_info '));
    expect(info).toHaveLength(2);
    expect(info.find((l) => l.includes('"id":"a"'))).toContain('"source_path":"/live/moved"');
    expect(acme.filter((l) => l.startsWith('cdn_recording_status ') && l.includes('"id":"b"'))).toEqual([]);
    expect(acme.filter((l) => l.includes('"id":"c"'))).toEqual([]);
    expect(acme).toHaveLength(11 + 7);

    p.apply('acme', [setting('b', { active: false })]);
    expect(series().filter((l) => l.includes('"account":"acme"'))).toEqual([]);
    expect(series()).toHaveLength(11);
    p.removeAccount('beta');
    expect(series()).toEqual([]);
  });
});
