/**
 * The DVR health families (src/dvr/metrics.ts) against the contract of names (the design's section "DVR", as
 * test/helpers/metric-catalogue.ts keeps it): every `cdn_dvr_*` name of the contract and no other, each a gauge
 * with the contract's labels in its order (per host: account, stream, host; `cdn_dvr_stream_up` per configured
 * stream), declared on the series store it is given and nowhere in prom-client's global registry. The type and
 * label cells of docs/metrics.md are held to the code by test/docs/reference.test.ts.
 */
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createDvrFamilies } from '../../src/dvr/metrics.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { Scrape } from '../helpers/exposition.js';
import { CATALOGUE } from '../helpers/metric-catalogue.js';

const CONTRACT = Object.entries(CATALOGUE).filter(([name]) => name.startsWith('cdn_dvr_'));

describe('createDvrFamilies', () => {
  const store = new SeriesStore();
  const before = register.getMetricsAsArray().length;
  const families = createDvrFamilies(store);
  const specs = Object.values(families).map((f) => f.spec);

  it("declares the contract's DVR families, gauges with its labels, and nothing in prom-client's registry", () => {
    expect(CONTRACT.length).toBe(11);
    expect(specs.map((s) => [s.name, s.labelNames]).sort()).toEqual([...CONTRACT].sort());
    expect(specs.every((s) => s.type === 'gauge')).toBe(true);
    expect(register.getMetricsAsArray()).toHaveLength(before);
  });

  it('helps on one line each, saying what the design writes down (the window unit is assumed)', () => {
    for (const s of specs) expect(s.help, s.name).toMatch(/^[^\n]{10,}$/);
    expect(families.window.spec.help).toMatch(/seconds assumed/);
    expect(families.coverage.spec.help).toMatch(/0\.\.1/);
    expect(families.streamUp.spec.help).toMatch(/answered \(1\).*failed \(0/);
  });

  it("the store shows a written host's series under its labels, with the family's help and type", () => {
    const labels = ['acme', 'live/main', 'dvr-1.example'];
    families.alive.set(families.alive.slot(labels), 1);
    families.streamUp.set(families.streamUp.slot(['acme', 'live/main']), 0);
    const text = store.render('text').toString();
    expect(text).toContain(`# HELP cdn_dvr_stream_alive ${families.alive.spec.help}`);
    expect(text).toContain('# TYPE cdn_dvr_stream_alive gauge');
    const scrape = Scrape.of(text);
    expect(
      scrape.value('cdn_dvr_stream_alive', { account: 'acme', stream: 'live/main', host: 'dvr-1.example' }),
    ).toBe(1);
    expect(scrape.value('cdn_dvr_stream_up', { account: 'acme', stream: 'live/main' })).toBe(0);
  });
});
