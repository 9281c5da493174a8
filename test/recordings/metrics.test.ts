/**
 * The recording families (src/recordings/metrics.ts) against the contract of names (the design's section
 * "Recordings"; as test/helpers/metric-catalogue.ts keeps it): every `cdn_recording_*` name of the contract and no
 * other, each a gauge labelled account and id first (info: the setting's source; status: the state set), declared
 * on the series store it is given and nowhere in prom-client's global registry. The type and label cells of
 * docs/metrics.md are held to the code by test/docs/reference.test.ts.
 */
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createRecordingFamilies } from '../../src/recordings/metrics.js';
import { RECORDING_STATUSES } from '../../src/recordings/response.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { CATALOGUE } from '../helpers/metric-catalogue.js';

const CONTRACT = Object.entries(CATALOGUE).filter(([name]) => name.startsWith('cdn_recording_'));

describe('createRecordingFamilies', () => {
  const before = register.getMetricsAsArray().length;
  const families = createRecordingFamilies(new SeriesStore());
  const specs = Object.values(families).map((f) => f.spec);

  it("declares the contract's recording families, gauges with its labels, and nothing in prom-client's registry", () => {
    expect(CONTRACT.length).toBe(8);
    expect(specs.map((s) => [s.name, s.labelNames]).sort()).toEqual([...CONTRACT].sort());
    for (const s of specs) expect(s.labelNames.slice(0, 2), s.name).toEqual(['account', 'id']);
    expect(specs.every((s) => s.type === 'gauge')).toBe(true);
    expect(register.getMetricsAsArray()).toHaveLength(before);
  });

  it('helps on one line each, saying what the design writes down (the state set, -1 kept forever)', () => {
    for (const s of specs) expect(s.help, s.name).toMatch(/^[^\n]{10,}$/);
    // The state set names every status the parser knows.
    expect(RECORDING_STATUSES.length).toBe(4);
    for (const status of RECORDING_STATUSES) expect(families.status.spec.help).toContain(status);
    expect(families.storage.spec.help).toMatch(/86400.*-1 means kept forever/);
    expect(families.info.spec.help).toMatch(/always 1/);
  });
});
