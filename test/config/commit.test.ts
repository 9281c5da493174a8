/**
 * The per-account commit (docs/metrics.md, "Cost"): units as contracts write them (decimal SI: 50TB is
 * 50 * 10^12 bytes, 2Gbps is 2 * 10^9 bit/s; binary units read too), refused with the key named, printed back by
 * check-config in the same units, and exposed as cdn_commit_* gauges for configured and discovered accounts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';

import { ConfigError, checkConfigReport, formatIssue, loadConfig } from '../../src/config/index.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { DEMO_PASSWORD, DEMO_USER, demoWorld } from '../../src/simulator/world.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { type Stack, startStack } from '../helpers/stack.js';

const load = (doc: unknown) => {
  const text = stringify(doc);
  return loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text });
};

const withCommit = (commit: unknown, discovery?: unknown) => ({
  api: { base_url: 'https://api.cdn.example', token: 't' },
  accounts: [{ name: 'acme', commit }],
  ...(discovery === undefined ? {} : { accounts_discovery: { enabled: true, commit: discovery } }),
});

function problems(doc: unknown): string[] {
  try {
    load(doc);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue);
  }
  throw new Error('configuration was accepted');
}

describe('commit in the configuration', () => {
  it.each([
    ['50TB', 50e12],
    ['800GB', 800e9],
    ['2PB', 2e15],
    ['10TiB', 10 * 1024 ** 4],
    [1_000_000, 1_000_000],
  ])('monthly_transfer %s is %d bytes', (text, bytes) => {
    expect(load(withCommit({ monthly_transfer: text })).accounts[0]!.commit).toEqual({
      monthlyTransferBytes: bytes,
    });
  });

  it.each([
    ['2Gbps', 2e9],
    ['500Mbps', 500e6],
    ['1.5Gbps', 1.5e9],
    ['100kbps', 100e3],
    ['1Tbps', 1e12],
  ])('bandwidth_p95 %s is %d bit/s', (text, bits) => {
    expect(load(withCommit({ bandwidth_p95: text })).accounts[0]!.commit).toEqual({
      bandwidthP95BitsPerSecond: bits,
    });
  });

  it.each([
    [{ monthly_transfer: '50 terabytes' }, 'accounts[0].commit.monthly_transfer: must be a volume above 0'],
    [{ monthly_transfer: '0TB' }, 'accounts[0].commit.monthly_transfer: must be a volume above 0'],
    [{ monthly_transfer: '-5TB' }, 'got "-5TB"'],
    [{ bandwidth_p95: '2GB' }, 'accounts[0].commit.bandwidth_p95: must be a bandwidth above 0'],
    [{ bandwidth_p95: 2000 }, 'accounts[0].commit.bandwidth_p95: must be a bandwidth above 0 like 2Gbps'],
    [{ bandwidth_p95: '2 gigabit' }, 'got "2 gigabit"'],
    [{ p95: '2Gbps' }, 'accounts[0].commit.p95: unknown key'],
  ])('refuses %j naming the key', (commit, message) => {
    expect(problems(withCommit(commit)).join('\n')).toContain(message);
  });

  it('refuses a bad default of discovered accounts naming its key', () => {
    expect(problems(withCommit(undefined, { bandwidth_p95: 'fast' })).join('\n')).toContain(
      'accounts_discovery.commit.bandwidth_p95: must be a bandwidth above 0',
    );
  });

  it('check-config prints the commit in the units a contract uses, and it loads back the same', () => {
    const config = load({
      ...withCommit({ monthly_transfer: '50TB', bandwidth_p95: '2Gbps' }, { monthly_transfer: '5TiB' }),
    });
    const printed = parse(checkConfigReport(config)) as {
      accounts: Array<{ commit?: unknown }>;
      accounts_discovery: { commit?: unknown };
    };
    expect(printed.accounts[0]!.commit).toEqual({ monthly_transfer: '50TB', bandwidth_p95: '2Gbps' });
    expect(printed.accounts_discovery.commit).toEqual({ monthly_transfer: '5497558138880B' });
    const again = load({ ...printed, api: { base_url: 'https://api.cdn.example', token: 't' } });
    expect(again.accounts[0]!.commit).toEqual(config.accounts[0]!.commit);
    expect(again.discovery.commit).toEqual(config.discovery.commit);
  });

  it('an account without commit has none', () => {
    expect(load(withCommit(undefined)).accounts[0]!.commit).toBeUndefined();
  });
});

describe('cdn_commit_* gauges', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.stop();
    stack = undefined;
  });

  it('configured accounts show their own commit, discovered ones the default, none without', async () => {
    const T0 = Date.UTC(2026, 6, 1, 0, 0, 0);
    const clock = new FakeClock(T0);
    const extra: SimAccount = {
      ...demoWorld()[1]!,
      name: 'prod-a',
      token: 'prod-a-token',
      streams: [],
      recordings: [],
    };
    stack = await startStack({
      clock,
      sim: { accounts: [...demoWorld(), extra] },
      config: {
        api: { token: undefined, username: DEMO_USER, password: DEMO_PASSWORD },
        metrics: { lookback: '10m', delay: '0m' },
        accounts: [
          { name: 'demo', commit: { monthly_transfer: '50TB', bandwidth_p95: '2Gbps' } },
          { name: 'acme' },
        ],
        accounts_discovery: {
          enabled: true,
          interval: '1m',
          include: 'prod-.*',
          commit: { bandwidth_p95: '500Mbps' },
        },
      },
    });
    let sc = await stack.scrape();
    for (
      let i = 0;
      i < 120 && sc.value('cdn_commit_bandwidth_bits_per_second', { account: 'prod-a' }) === undefined;
      i++
    ) {
      await clock.advance(1000);
      await new Promise((r) => setTimeout(r, 1));
      if (i % 10 === 9) sc = await stack.scrape();
    }
    sc = await stack.scrape();
    expect(sc.value('cdn_commit_transfer_bytes', { account: 'demo' })).toBe(50e12);
    expect(sc.value('cdn_commit_bandwidth_bits_per_second', { account: 'demo' })).toBe(2e9);
    expect(sc.value('cdn_commit_bandwidth_bits_per_second', { account: 'prod-a' })).toBe(500e6);
    expect(sc.value('cdn_commit_transfer_bytes', { account: 'prod-a' })).toBeUndefined();
    expect(sc.all('cdn_commit_transfer_bytes').map((s) => s.labels.account)).toEqual(['demo']);
    expect(sc.all('cdn_commit_bandwidth_bits_per_second').some((s) => s.labels.account === 'acme')).toBe(
      false,
    );
  }, 60_000);
});
