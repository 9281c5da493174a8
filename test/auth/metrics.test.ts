/**
 * The login's own metric families (src/auth/metrics.ts) against the contract of names: docs/metrics.md
 * lists `cdn_auth_token_expiry_timestamp_seconds{login}` (gauge), `cdn_auth_logins_total{login,result}`
 * (counter, results ok, too_short, refused, error, starting at 0), `cdn_discovered_accounts{login}` (gauge) and
 * `cdn_discovered_accounts_refused{reason}` (gauge). On a registry of the test's own; nothing in prom-client's
 * global registry.
 */
import { Registry, register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createAuthMetrics, LOGIN_RESULTS } from '../../src/auth/metrics.js';
import { parseExposition } from '../helpers/exposition.js';
import { readDoc, tableRow } from '../helpers/markdown.js';
import { CATALOGUE } from '../helpers/metric-catalogue.js';

const FAMILIES: Record<string, { type: string; labels: string[] }> = {
  cdn_auth_token_expiry_timestamp_seconds: { type: 'gauge', labels: ['login'] },
  cdn_auth_logins_total: { type: 'counter', labels: ['login', 'result'] },
  cdn_discovered_accounts: { type: 'gauge', labels: ['login'] },
  cdn_discovered_accounts_refused: { type: 'gauge', labels: ['reason'] },
};

describe('createAuthMetrics', () => {
  it('declares the four families of docs/metrics.md with their type, labels and help, on the registry given only', async () => {
    const globalBefore = (await register.getMetricsAsJSON()).map((m) => m.name);
    const registry = new Registry();
    const m = createAuthMetrics(registry);
    m.addLogin('monitoring@example.com');
    m.setExpiry('monitoring@example.com', 1_780_000_000_000);
    m.discovered.set({ login: 'monitoring@example.com' }, 2);
    m.refusedAccounts.set({ reason: 'max_accounts' }, 0);
    const json = await registry.getMetricsAsJSON();
    expect(json.map((f) => f.name).sort()).toEqual(Object.keys(FAMILIES).sort());
    const docs = readDoc('docs/metrics.md');
    for (const f of json) {
      const want = FAMILIES[f.name]!;
      expect(f.type, f.name).toBe(want.type);
      expect(f.help, f.name).not.toBe('');
      const row = tableRow(docs, f.name);
      expect(row, `docs/metrics.md has a row for ${f.name}`).toBeDefined();
      expect(row![2], f.name).toBe(want.type);
      expect(
        row![3]!.split(',').map((l) => l.trim()),
        f.name,
      ).toEqual(want.labels);
      for (const v of f.values) expect(Object.keys(v.labels).sort(), f.name).toEqual([...want.labels].sort());
      // The catalogue the dashboards and rules are held to, where it names the family.
      const catalogued = CATALOGUE[f.name];
      if (catalogued) expect([...catalogued], f.name).toEqual(want.labels);
    }
    expect((await register.getMetricsAsJSON()).map((m) => m.name)).toEqual(globalBefore);
  });

  it('starts every documented login result at 0 for a login, so increase() sees the first refusal', async () => {
    expect([...LOGIN_RESULTS]).toEqual(['ok', 'too_short', 'refused', 'error']);
    const row = tableRow(readDoc('docs/metrics.md'), 'cdn_auth_logins_total')!;
    for (const result of LOGIN_RESULTS) expect(row[4]).toContain(`\`${result}\``);
    const registry = new Registry();
    const m = createAuthMetrics(registry);
    m.addLogin('ops@example.com');
    m.logins.inc({ login: 'ops@example.com', result: 'refused' });
    m.addLogin('ops@example.com'); // a second call keeps what was counted
    const samples = parseExposition(await registry.metrics()).filter(
      (s) => s.name === 'cdn_auth_logins_total',
    );
    expect(Object.fromEntries(samples.map((s) => [s.labels.result, s.value]))).toEqual({
      ok: 0,
      too_short: 0,
      refused: 1,
      error: 0,
    });
  });

  it('sets the expiry in Unix seconds, and removes it for a login with no token', async () => {
    const registry = new Registry();
    const m = createAuthMetrics(registry);
    m.setExpiry('a@example.com', 1_780_000_123_500);
    m.setExpiry('b@example.com', 1_780_000_000_000);
    let text = await registry.metrics();
    expect(text).toContain('cdn_auth_token_expiry_timestamp_seconds{login="a@example.com"} 1780000123.5');
    m.setExpiry('a@example.com', undefined);
    text = await registry.metrics();
    expect(text).not.toContain('login="a@example.com"');
    expect(text).toContain('cdn_auth_token_expiry_timestamp_seconds{login="b@example.com"} 1780000000');
  });
});
