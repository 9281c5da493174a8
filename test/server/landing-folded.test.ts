/**
 * Folded resources on the exporter's pages (issue 35), end to end against the simulator on one FakeClock: with
 * `limits.top_resources: 3`, the account page ranks its busiest resources as /metrics ranks them, with the series
 * `resource="__other__"` shown as one row "other resources (N)", N what `cdn_folded_resources` says, and each row's
 * 5xx what the window gauges say; no page shows `__other__`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SimAccount } from '../../src/simulator/types.js';
import { demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { tableRows } from '../helpers/landing-html.js';
import { runClock, type Stack, scrapeNow, startStack } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const TOP = 3;
const RESOURCES = 14;

let stacks: Stack[] = [];
afterEach(async () => {
  for (const s of stacks) await s.stop();
  stacks = [];
});

function world(): SimAccount[] {
  const acme = demoWorld()[1]!;
  const resources = Array.from({ length: RESOURCES }, (_, i) => ({
    id: String(3001 + i),
    name: `site-${i + 1}`,
    cname: `s${i + 1}.cdn.acme.example`,
  }));
  return [{ ...acme, resources, streams: [], recordings: [] }];
}

async function get(s: Stack, path: string): Promise<string> {
  const res = await fetch(`${s.url}${path}`);
  expect(res.status, path).toBe(200);
  return res.text();
}

/** A table's rows as their cells' text; the table must be on the page. */
function rows(html: string, label: string): string[][] {
  const found = tableRows(html, label);
  expect(found.length, label).toBeGreaterThan(0);
  return found;
}

describe('landing pages: folded resources', () => {
  it('show __other__ as "other resources (N)" where /metrics ranks it, N from cdn_folded_resources', async () => {
    const clock = new FakeClock(T0);
    const s = await startStack({
      clock,
      sim: { accounts: world() },
      config: {
        metrics: { window: '5m', delay: '1m', lookback: '30m', window_gauges: true },
        limits: { top_resources: TOP },
        accounts: [{ name: 'acme', token: 'acme-token' }],
      },
    });
    stacks.push(s);

    await runClock(clock, 20_000, [s]);
    const sc = await scrapeNow(s);
    const folded = sc.value('cdn_folded_resources', { account: 'acme' })!;
    expect(folded).toBe(RESOURCES - TOP);
    const named = (resource: string) => (resource === '__other__' ? `other resources (${folded})` : resource);

    const page = await get(s, '/accounts/acme');
    // Ranked as the bandwidth gauges rank the series (ties: the smaller id, and a resource before the others).
    const ranked = sc
      .all('cdn_edge_bandwidth_bytes_per_second', { account: 'acme' })
      .filter((x) => x.value > 0)
      .sort(
        (a, b) =>
          b.value - a.value ||
          Number(a.labels.resource === '__other__') - Number(b.labels.resource === '__other__') ||
          (a.labels.resource! < b.labels.resource! ? -1 : 1),
      )
      .map((x) => named(x.labels.resource!));
    expect(ranked).toHaveLength(TOP + 1);
    expect(rows(page, 'top resources by traffic').map((r) => r[0])).toEqual(ranked);
    // Each row's 5xx as the window gauges count them, the folded resources' row included.
    const fiveXx = rows(page, 'top resources by 5xx');
    expect(fiveXx.length).toBeGreaterThan(0);
    for (const [resource, , count] of fiveXx) {
      const series = sc
        .all('cdn_edge_window_responses_by_class', { account: 'acme', class: '5xx' })
        .find((x) => named(x.labels.resource!) === resource);
      expect(series, resource).toBeDefined();
      expect(Number(count!.replace(/,/g, '')), resource).toBe(series!.value);
    }
    expect(page).toContain(`${RESOURCES} resources, other resources (${folded}) among them`);

    const landing = await get(s, '/?refresh=off');
    expect(landing).toContain(`${RESOURCES} resources, other resources (${folded}) among them`);
    for (const html of [page, landing]) expect(html).not.toContain('__other__');
  }, 60_000);
});
