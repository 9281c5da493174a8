/**
 * An inventory gone hostile or broken (issue 25, rows 7-10), driven through the simulator's `setInventoryBody`:
 * 100,000 accounts, names of 10 kB, names that are `.` and `..`, a body of nothing but `[`. What a user checks:
 * at most `accounts_discovery.max_accounts` accounts polled, the rest counted in
 * cdn_discovered_accounts_refused and logged once, the exporter answering while it starts them, no request to a
 * path outside the APIs' prefixes, and a body that cannot be parsed in bounded memory refused before parsing.
 */
import { describe, expect, it } from 'vitest';
import type { AccountPollers } from '../../src/exporter/account-pollers.js';
import { DEMO_PASSWORD, DEMO_USER } from '../../src/simulator/world.js';
import type { Scrape } from '../helpers/exposition.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { inventoryBody } from '../helpers/inventory.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { type Stack, scrapeNow, waitFor } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);

const started = perTest();

const pollersOf = (s: Stack) => (s.exporter as unknown as { pollers: AccountPollers }).pollers;

/** A stack whose inventory answers `body` from its first round on. */
async function discover(body: string, discovery: Record<string, unknown> = {}) {
  const clock = new FakeClock(T0);
  const { log, lines } = captureLog();
  const sim = await started.simulator({ seed: 7, clock, slowMs: 300 });
  sim.setInventoryBody(body);
  const stack = await started.stack({
    clock,
    simulator: sim,
    config: {
      api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
      metrics: { lookback: '10m', delay: '0m', window: '5m' },
      accounts_discovery: { enabled: true, interval: '10m', ...discovery },
      accounts: [],
    },
    exporter: { log },
  });
  return { s: stack, clock, lines };
}

const refused = (sc: Scrape, reason: string) => sc.value('cdn_discovered_accounts_refused', { reason });

describe('a hostile inventory', () => {
  it('row 7: 100,000 accounts: max_accounts polled, the rest refused and logged once; the loop yields while starting', async () => {
    const names = Array.from({ length: 100_000 }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
    const { s, lines } = await discover(inventoryBody(names), { max_accounts: 2000 });
    // Sizes seen between turns of the event loop while the accounts start: some lie strictly between 0 and the
    // cap only if starting them yields to the loop.
    const seen = new Set<number>();
    let sampling = true;
    const sample = () => {
      seen.add(pollersOf(s)?.size ?? 0);
      if (sampling) setImmediate(sample);
    };
    sample();
    await waitFor(() => pollersOf(s)?.size === 2000, 60_000, '2000 accounts polled');
    sampling = false;
    expect([...seen].some((n) => n > 0 && n < 2000)).toBe(true);
    const sc = await scrapeNow(s);
    expect(refused(sc, 'max_accounts')).toBe(98_000);
    // The first 2000 by name are kept.
    const polled = new Set(s.exporter.status().accounts.map((a) => a.name));
    expect(polled.has('acct-001999')).toBe(true);
    expect(polled.has('acct-002000')).toBe(false);
    expect(lines.filter((l) => l.includes('accounts_discovery.max_accounts'))).toHaveLength(1);
    // No line of the log carries the list: a few names each.
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(10_000);
  });

  it('row 7: the exporter stops within its bound while discovery is starting 10,000 accounts', async () => {
    const names = Array.from({ length: 100_000 }, (_, i) => `acct-${String(i).padStart(6, '0')}`);
    const { s, lines } = await discover(inventoryBody(names));
    await waitFor(() => (pollersOf(s)?.size ?? 0) > 0, 60_000, 'accounts starting');
    await s.stopExporter();
    // Every loop, discovery's included, ended within the stop's grace: nothing was left to cancel.
    expect(lines.some((l) => l.includes('still in flight at shutdown'))).toBe(false);
    // Discovery stopped starting accounts at the stop, short of the 10,000 (the default cap) it was starting.
    expect(pollersOf(s).size).toBeLessThan(10_000);
  });

  it('row 8: names longer than limits.max_label_length are refused: nothing of them on /metrics, the page or the log', async () => {
    const long = Array.from({ length: 5000 }, (_, i) => `${String(i).padStart(5, '0')}${'x'.repeat(10_000)}`);
    const { s, lines } = await discover(inventoryBody([...long, 'fine']));
    await waitFor(async () => refused(await scrapeNow(s), 'name_too_long') === 5000, 30_000, 'names refused');
    await waitFor(() => pollersOf(s).size === 1, 30_000, 'the one good account polled');
    const text = await s.text();
    expect(text.length).toBeLessThan(1_000_000);
    expect(text).not.toContain('x'.repeat(100));
    const page = await (await fetch(`${s.url}/`)).text();
    expect(page).not.toContain('x'.repeat(100));
    const logged = lines.join('\n');
    expect(logged.length).toBeLessThan(100_000);
    expect(lines.filter((l) => l.includes('discovered accounts refused'))).toHaveLength(1);
    // Its two waits are bounded themselves; the test's own bound leaves room for both on a loaded machine.
  }, 120_000);

  it('row 9: accounts named . and .. are refused: no request leaves the APIs prefixes', async () => {
    const { s } = await discover(inventoryBody(['..', '.', 'demo']), { recordings: true });
    await waitFor(async () => refused(await scrapeNow(s), 'name_invalid') === 2, 30_000, 'names refused');
    await waitFor(
      () => s.sim.requestLog.some((r) => r.api === 'recorder-cloud'),
      30_000,
      'a recordings request of demo',
    );
    const prefixes = ['/app/metrics/v1/', '/app/dvr-net/v1/', '/app/recorder-cloud/v1/', '/app/oauth/v1/'];
    for (const r of s.sim.requestLog) {
      if (r.api === 'inventory') continue;
      expect(prefixes.some((p) => r.path.startsWith(p))).toBe(true);
      expect(r.path).not.toMatch(/\/\.\.?(\/|$)/);
    }
    expect(s.sim.requestLog.some((r) => r.query.account?.includes('..'))).toBe(false);
  });

  it('row 10: a body of 10 MB of `[` is refused before parsing, counted as a parse error', async () => {
    const { s, lines } = await discover('['.repeat(10_000_000));
    await waitFor(
      async () =>
        ((await scrapeNow(s)).value('cdn_exporter_parse_errors_total', { api: 'inventory' }) ?? 0) > 0,
      30_000,
      'the inventory answer counted as a parse error',
    );
    expect(lines.some((l) => l.includes('nested deeper than 64 levels'))).toBe(true);
  });
});
