/**
 * The traffic families (src/traffic/metrics.ts) against the contract of names (the design's section "Traffic", as
 * test/helpers/metric-catalogue.ts keeps it), option by option: with `breakdown: resource` every traffic family of
 * the contract with its labels, the window gauges only with `metrics.window_gauges`, the revisit counters only
 * with `metrics.revisit`; with `breakdown: account` the `resource` label absent everywhere and no family that only
 * a resource has; a counter's name ends in `_total`; nothing in prom-client's global registry. The type and label
 * cells of docs/metrics.md are held to the code by test/docs/reference.test.ts.
 */
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesStore } from '../../src/store/series-store.js';
import type { FamilySpec } from '../../src/store/types.js';
import { createTrafficFamilies } from '../../src/traffic/metrics.js';
import { CATALOGUE } from '../helpers/metric-catalogue.js';

/** The contract's traffic families: the resource's, each side's and the window bookkeeping. */
const CONTRACT = Object.entries(CATALOGUE).filter(([name]) =>
  /^cdn_(resource_info|folded_resources|edge_|origin_|metrics_)/.test(name),
);
const WINDOW_GAUGE = /^cdn_(edge|origin)_window_/;
const REVISIT = ['cdn_metrics_revisions_total', 'cdn_metrics_revisit_edge_requests_total'];
const RESOURCE_ONLY = ['cdn_resource_info', 'cdn_folded_resources'];

type Options = Parameters<typeof createTrafficFamilies>[1];

/** The specs of every family the factory made (they nest: edge.window.requests, ...). */
function specs(opts: Options): FamilySpec[] {
  const out: FamilySpec[] = [];
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    if ('spec' in v) out.push((v as { spec: FamilySpec }).spec);
    else for (const x of Object.values(v)) walk(x);
  };
  walk(createTrafficFamilies(new SeriesStore(), opts));
  return out;
}

const byName = (list: FamilySpec[]) => list.map((s) => [s.name, s.labelNames] as const).sort();

describe('createTrafficFamilies', () => {
  it("with every option on: the contract's traffic families with its labels, nothing in prom-client's registry", () => {
    const before = register.getMetricsAsArray().length;
    const all = specs({ breakdown: 'resource', windowGauges: true, revisit: true });
    expect(CONTRACT.length).toBeGreaterThan(30);
    expect(byName(all)).toEqual([...CONTRACT].sort());
    expect(register.getMetricsAsArray()).toHaveLength(before);
  });

  it('window gauges only with window_gauges, the revisit counters only with revisit', () => {
    const plain = specs({ breakdown: 'resource', windowGauges: false });
    const expected = CONTRACT.filter(([n]) => !WINDOW_GAUGE.test(n) && !REVISIT.includes(n));
    expect(byName(plain)).toEqual([...expected].sort());
    const gauges = specs({ breakdown: 'resource', windowGauges: true, revisit: false }).map((s) => s.name);
    expect(gauges.filter((n) => WINDOW_GAUGE.test(n))).toHaveLength(9);
    expect(gauges.filter((n) => REVISIT.includes(n))).toEqual([]);
  });

  it('with breakdown account: no resource label anywhere, and no family only a resource has', () => {
    const account = specs({ breakdown: 'account', windowGauges: true, revisit: true });
    const expected = CONTRACT.filter(([n]) => !RESOURCE_ONLY.includes(n)).map(
      ([n, labels]) => [n, labels.filter((l) => l !== 'resource')] as const,
    );
    expect(byName(account)).toEqual([...expected].sort());
  });

  it('a counter is named ..._total and a gauge is not; each helps on one line', () => {
    for (const s of specs({ breakdown: 'resource', windowGauges: true, revisit: true })) {
      expect(s.type, s.name).toBe(s.name.endsWith('_total') ? 'counter' : 'gauge');
      expect(s.help, s.name).toMatch(/^[^\n]{10,}$/);
    }
  });
});
