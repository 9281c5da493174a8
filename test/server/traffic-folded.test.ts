/**
 * The account page's top resources with folding (issue 35): the resources the exporter counted under
 * `resource="__other__"` (TrafficHistory.foldBy: the mapping's decision) are one row, "other resources (N)", ranked
 * by their sums like any resource, and never a resource named `__other__`; the card says how many the window
 * folded. Checked on hand-made answers; test/server/landing-folded.test.ts checks it against /metrics.
 */
import { describe, expect, it } from 'vitest';
import { type TopResource, TrafficHistory } from '../../src/server/traffic-history.js';
import { accountBody, trafficSection } from '../../src/server/traffic-page.js';
import { answer, rec } from './history-answers.js';

const MIN = 60_000;

const t = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A table's rows as [first cell, second cell, the rest of the figures]. */
function rows(html: string, label: string): string[][] {
  const at = html.indexOf(`aria-label="${label}"`);
  if (at < 0) return [];
  const body = html.slice(at, html.indexOf('</table>', at));
  return [...body.matchAll(/<tr(?: class="other")?>((?:<td[^>]*>[^<]*<\/td>)+)<\/tr>/g)].map((m) =>
    [...m[1]!.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((c) => c[1]!),
  );
}

const brief = (list: TopResource[]) => list.map((r) => (r.folded ? `other:${r.folded}` : r.resource));

describe('top resources with folded resources', () => {
  // r1..r3 keep series of their own; f1..f4 are folded (out of the top N): their sums rank between r1 and r2.
  const window = answer(
    rec('r1', 1000, 9e6, 5),
    rec('f1', 100, 1e6, 10),
    rec('r2', 800, 4e6, 1),
    rec('f2', 100, 1e6, 10),
    rec('r3', 600, 3e6, 0),
    rec('f3', 100, 2e6, 20),
    rec('f4', 100, 1e6, 0),
  );
  const folded = new Set(['f1', 'f2', 'f3', 'f4']);

  it('ranks the folded resources as one entry by their sums, never each on its own', () => {
    const h = new TrafficHistory();
    const asked: string[] = [];
    h.foldBy((account, resource, records) => {
      expect(account).toBe('acme');
      expect(records).toBe(window.records);
      asked.push(resource);
      return folded.has(resource);
    });
    h.record('acme', 0, 5 * MIN, window);
    const got = h.get('acme')!;
    expect(got.resources).toBe(7);
    expect(got.folded).toBe(4);
    // Bandwidth: r1 9e6, the folded 5e6, r2 4e6, r3 3e6.
    expect(brief(got.topByTraffic)).toEqual(['r1', 'other:4', 'r2', 'r3']);
    expect(got.topByTraffic[1]).toEqual({
      resource: '',
      name: '',
      bandwidthBitsPerSecond: 5e6,
      requests: 400,
      errors5xx: 40,
      folded: 4,
    });
    // 5xx: the folded 40, r1 5, r2 1 (r3 none: not listed).
    expect(brief(got.topBy5xx)).toEqual(['other:4', 'r1', 'r2']);
    // The window's figures count every record, folded or not.
    expect(got.figures.bandwidthBitsPerSecond.at(-1)).toBe(21e6);
    expect(asked.sort()).toEqual(['f1', 'f2', 'f3', 'f4', 'r1', 'r2', 'r3']);
  });

  it('shows the entry as "other resources (N)" on the account page and the card, and never __other__', () => {
    const h = new TrafficHistory();
    h.foldBy((_a, resource) => folded.has(resource));
    h.record('acme', 0, 5 * MIN, window);
    const page = accountBody('acme', h.get('acme'), t);
    expect(rows(page, 'top resources by traffic').map((r) => r[0])).toEqual([
      'r1',
      'other resources (4)',
      'r2',
      'r3',
    ]);
    const other = rows(page, 'top resources by traffic')[1]!;
    expect(other).toEqual([
      'other resources (4)',
      'without series of their own, counted together',
      '5.00 Mbit/s',
      '400',
      '10.0%',
    ]);
    expect(rows(page, 'top resources by 5xx')[0]).toEqual([
      'other resources (4)',
      'without series of their own, counted together',
      '40',
      '10.0%',
      '400',
    ]);
    expect(page).toContain('7 resources, other resources (4) among them');
    const card = trafficSection(['acme'], (a) => h.get(a), t, new Date(0));
    expect(card).toContain('7 resources, other resources (4) among them');
    for (const html of [page, card]) {
      expect(html).not.toContain('__other__');
      expect(html).not.toMatch(/>f[1-4]</);
    }
  });

  it('folds a record the API itself names __other__, without a decision given', () => {
    const h = new TrafficHistory();
    h.record('acme', 0, 5 * MIN, answer(rec('r1', 10, 1e3), rec('__other__', 50, 5e3, 2)));
    const got = h.get('acme')!;
    expect(got.folded).toBe(1);
    expect(brief(got.topByTraffic)).toEqual(['other:1', 'r1']);
    const page = accountBody('acme', got, t);
    expect(rows(page, 'top resources by traffic')[0]![0]).toBe('other resources (1)');
    expect(page).not.toContain('__other__');
  });

  it('shows no other row and says nothing of folding when nothing is folded', () => {
    const h = new TrafficHistory();
    h.foldBy(() => false);
    h.record('acme', 0, 5 * MIN, window);
    const got = h.get('acme')!;
    expect(got.folded).toBe(0);
    expect(got.topByTraffic.every((r) => r.folded === undefined)).toBe(true);
    const page = accountBody('acme', got, t);
    expect(page).not.toContain('other resources');
    expect(trafficSection(['acme'], (a) => h.get(a), t, new Date(0))).not.toContain('other resources');
  });

  it('takes the folding of a settled revisit, which replaces the newest lists', () => {
    const h = new TrafficHistory();
    h.foldBy((_a, resource) => folded.has(resource));
    h.record('acme', 0, 5 * MIN, answer(rec('r1', 10, 1e3), rec('f1', 10, 2e3)));
    expect(h.get('acme')!.folded).toBe(1);
    h.settle('acme', 0, 5 * MIN, window);
    const got = h.get('acme')!;
    expect(got.folded).toBe(4);
    expect(brief(got.topByTraffic)).toEqual(['r1', 'other:4', 'r2', 'r3']);
  });
});
