/**
 * `limits.top_resources`, `limits.top_resources_period`, `accounts[].top_resources` and
 * `accounts_discovery.top_resources` (issue 35): each account's N resolved (its own, a discovered account's default,
 * or limits'), the ceilings at their edges, the rule that folding needs breakdown `resource`, and check-config's
 * output loading back the same.
 */
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ConfigError, checkConfigReport, formatIssue, loadConfig } from '../../src/config/index.js';
import { topResourcesOf } from '../../src/traffic/fold-book.js';

const loadText = (text: string) => loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text });
const load = (doc: unknown) => loadText(stringify(doc));
const API = { base_url: 'https://api.cdn.example', token: 't' };

function problems(doc: unknown): string {
  try {
    load(doc);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue).join('\n');
  }
  throw new Error('configuration was accepted');
}

describe('top_resources', () => {
  it('is off by default: nothing of it in the limits the traffic pipeline reads', () => {
    const config = load({ api: API, accounts: [{ name: 'acme' }] });
    expect(config.limits).toEqual({
      maxSeries: 2_000_000,
      maxSeriesPerAccount: 2_000_000,
      maxLabelLength: 1024,
    });
    expect(topResourcesOf(config.limits, 'acme')).toBe(0);
  });

  it("resolves each account's N: its own, else limits'; a discovered account's default, else limits'", () => {
    const config = load({
      api: API,
      accounts: [{ name: 'acme' }, { name: 'big', top_resources: 500 }, { name: 'all', top_resources: 0 }],
      accounts_discovery: { enabled: true, top_resources: 20 },
      limits: { top_resources: 100, top_resources_period: '6h' },
    });
    expect(topResourcesOf(config.limits, 'acme')).toBe(100);
    expect(topResourcesOf(config.limits, 'big')).toBe(500);
    expect(topResourcesOf(config.limits, 'all')).toBe(0);
    expect(topResourcesOf(config.limits, 'found-later')).toBe(20);
    expect(config.limits.topResourcesPeriodMs).toBe(6 * 3_600_000);
    const onlyAccount = load({ api: API, accounts: [{ name: 'acme', top_resources: 3 }, { name: 'b' }] });
    expect(topResourcesOf(onlyAccount.limits, 'acme')).toBe(3);
    expect(topResourcesOf(onlyAccount.limits, 'b')).toBe(0);
    expect(onlyAccount.limits.topResourcesPeriodMs).toBe(86_400_000);
  });

  it('takes 0 up to the ceiling of max_series, and refuses past it, a fraction or a negative, naming the key', () => {
    const at = (n: unknown) => ({ api: API, accounts: [{ name: 'acme' }], limits: { top_resources: n } });
    expect(topResourcesOf(load(at(50_000_000)).limits, 'acme')).toBe(50_000_000);
    expect(problems(at(50_000_001))).toMatch(/^limits\.top_resources: .*50000000/);
    expect(problems(at(-1))).toMatch(/^limits\.top_resources: /);
    expect(problems(at(1.5))).toMatch(/^limits\.top_resources: /);
    expect(problems({ api: API, accounts: [{ name: 'acme', top_resources: 'ten' }] })).toMatch(
      /^accounts\[0\]\.top_resources: /,
    );
  });

  it('takes a period of 1m to 90d and refuses one outside, naming the key', () => {
    const at = (p: string) => ({
      api: API,
      accounts: [{ name: 'acme' }],
      limits: { top_resources: 5, top_resources_period: p },
    });
    expect(load(at('1m')).limits.topResourcesPeriodMs).toBe(60_000);
    expect(load(at('90d')).limits.topResourcesPeriodMs).toBe(90 * 86_400_000);
    expect(problems(at('59s'))).toBe('limits.top_resources_period: must be between 1m and 90d, got 59s');
    expect(problems(at('91d'))).toBe('limits.top_resources_period: must be between 1m and 90d, got 91d');
  });

  it('needs breakdown resource: with breakdown account each key that sets an N is refused', () => {
    expect(
      problems({
        api: API,
        metrics: { breakdown: 'account' },
        accounts: [{ name: 'acme', top_resources: 5 }],
        accounts_discovery: { top_resources: 3 },
        limits: { top_resources: 0 },
      }).split('\n'),
    ).toEqual([
      'accounts_discovery.top_resources: needs metrics.breakdown: resource (with breakdown account each account has one set of series, nothing to fold)',
      'accounts[0].top_resources: needs metrics.breakdown: resource (with breakdown account each account has one set of series, nothing to fold)',
    ]);
  });

  it('check-config prints the keys, and the output loads back the same', () => {
    const config = load({
      api: API,
      accounts: [{ name: 'acme', top_resources: 7 }, { name: 'b' }],
      accounts_discovery: { enabled: false, top_resources: 9 },
      limits: { top_resources: 100, top_resources_period: '12h' },
    });
    const printed = parse(checkConfigReport(config)) as Record<string, Record<string, unknown>>;
    expect(printed.limits).toMatchObject({ top_resources: 100, top_resources_period: '12h' });
    expect((printed.accounts as unknown as Array<Record<string, unknown>>)[0]!.top_resources).toBe(7);
    expect(printed.accounts_discovery!.top_resources).toBe(9);
    const again = load({ ...printed, api: API });
    expect(again.limits).toEqual(config.limits);
    expect(again.accounts).toEqual(config.accounts);
  });
});
