/**
 * src/config/typed-config.ts: toConfig turns the file's schema output into the Config the exporter reads:
 * camelCase keys, every duration in whole milliseconds, sizes in bytes, bandwidths in bits per second, optional
 * keys left out rather than undefined, `limits.max_series_per_account` never above `limits.max_series`, and
 * `remote_write.instance` defaulting to the host name it is given (docs/configuration.md, src/config/README.md).
 * Parsing and refusals are the schema's (test/config/schema.test.ts), the defaults as a whole
 * Config test/config/load.test.ts; here the schema's output goes through toConfig as loadConfig passes it.
 */
import { describe, expect, it } from 'vitest';
import { fileSchema } from '../../src/config/schema.js';
import { toConfig } from '../../src/config/typed-config.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const API = { base_url: 'https://api.cdn.example', token_file: '/run/secrets/cdn' };
const typed = (doc: Record<string, unknown>, hostname?: string) => toConfig(fileSchema.parse(doc), hostname);

describe('toConfig', () => {
  it('converts every duration to exact milliseconds, under its camelCase name', () => {
    const c = typed({
      api: { ...API, timeout: '1s500ms' },
      metrics: {
        window: '10m',
        delay: 0,
        lookback: '1h30m',
        max_catch_up: '2w',
        revisit: '1d',
        counter_retention: '90d',
      },
      dvr: { interval: '1s' },
      recordings: { interval: '1h1m1s' },
      accounts_discovery: { interval: '10s' },
      limits: { top_resources: 5, top_resources_period: '36h' },
      server: {
        idle_timeout: '1m30s',
        write_timeout: '2m',
        auth_failure_limit: { burst: 3, interval: '1d' },
      },
      state_file: '/var/lib/cdn/state.json',
      remote_write: { url: 'https://mimir.example/api/v1/push', timeout: '10m' },
      accounts: [{ name: 'acme' }],
    });
    expect(c.api.timeoutMs).toBe(1500);
    expect(c.metrics).toMatchObject({
      windowMs: 10 * MINUTE,
      delayMs: 0,
      lookbackMs: 90 * MINUTE,
      maxCatchUpMs: 14 * DAY,
      revisitMs: DAY,
      // 7,776,000,000 ms: past 32 bits, still exact.
      counterRetentionMs: 90 * DAY,
    });
    expect(c.dvr.intervalMs).toBe(1000);
    expect(c.recordings.intervalMs).toBe(HOUR + MINUTE + 1000);
    expect(c.discovery.intervalMs).toBe(10_000);
    expect(c.limits.topResourcesPeriodMs).toBe(36 * HOUR);
    expect(c.server).toMatchObject({ idleTimeoutMs: 90_000, writeTimeoutMs: 2 * MINUTE });
    expect(c.server.authFailureIntervalMs).toBe(DAY);
    expect(c.remoteWrite?.timeoutMs).toBe(10 * MINUTE);
  });

  it('converts sizes to bytes exactly: binary units by 1024, decimal by 1000, a bare number as bytes', () => {
    const bytes = (max_body_bytes: unknown) =>
      typed({ api: { ...API, max_body_bytes }, accounts: [{ name: 'a' }] }).api.maxBodyBytes;
    expect(bytes('1KiB')).toBe(1024);
    expect(bytes('512MiB')).toBe(512 * 1024 * 1024);
    expect(bytes('500MB')).toBe(500_000_000);
    expect(bytes(1_048_576)).toBe(1_048_576);
  });

  it('converts a commit to bytes a month and bits per second; an empty commit is none', () => {
    const c = typed({
      api: API,
      accounts: [
        { name: 'a', commit: { monthly_transfer: '150TB', bandwidth_p95: '500Mbps' } },
        { name: 'b', commit: { monthly_transfer: '5TiB' } },
        { name: 'c', commit: {} },
      ],
      accounts_discovery: { commit: { bandwidth_p95: '2.5Gbps' } },
    });
    expect(c.accounts[0]!.commit).toEqual({ monthlyTransferBytes: 150e12, bandwidthP95BitsPerSecond: 500e6 });
    expect(c.accounts[1]!.commit).toEqual({ monthlyTransferBytes: 5 * 1024 ** 4 });
    expect(Object.hasOwn(c.accounts[2]!, 'commit')).toBe(false);
    expect(c.discovery.commit).toEqual({ bandwidthP95BitsPerSecond: 2.5e9 });
  });

  it('leaves optional keys out rather than undefined, so a compared or printed Config shows only what is set', () => {
    const c = typed({ api: API, accounts: [{ name: 'acme' }] });
    for (const key of ['token', 'username', 'password', 'passwordFile'])
      expect(Object.hasOwn(c.api, key), `api.${key}`).toBe(false);
    for (const key of ['stateFile', 'remoteWrite']) expect(Object.hasOwn(c, key), key).toBe(false);
    for (const key of ['exclude', 'commit', 'topResources'])
      expect(Object.hasOwn(c.discovery, key), `discovery.${key}`).toBe(false);
    expect(Object.keys(c.accounts[0]!).sort()).toEqual(['dvrStreams', 'name', 'recordings']);
    // Nothing anywhere is an own key holding undefined.
    const undefinedKeys: string[] = [];
    const walk = (v: unknown, at: string) => {
      if (v === null || typeof v !== 'object' || v instanceof RegExp) return;
      for (const [k, inner] of Object.entries(v)) {
        if (inner === undefined) undefinedKeys.push(`${at}.${k}`);
        walk(inner, `${at}.${k}`);
      }
    };
    walk(c, 'config');
    expect(undefinedKeys).toEqual([]);
  });

  it('keeps max_series_per_account at max_series unless set, and never above it', () => {
    const limits = (l: Record<string, unknown>) =>
      typed({ api: API, accounts: [{ name: 'a' }], limits: l }).limits;
    expect(limits({})).toMatchObject({ maxSeries: 2_000_000, maxSeriesPerAccount: 2_000_000 });
    expect(limits({ max_series: 5000 })).toMatchObject({ maxSeries: 5000, maxSeriesPerAccount: 5000 });
    expect(limits({ max_series: 5000, max_series_per_account: 2000 })).toMatchObject({
      maxSeriesPerAccount: 2000,
    });
    expect(limits({ max_series: 5000, max_series_per_account: 9000 })).toMatchObject({
      maxSeries: 5000,
      maxSeriesPerAccount: 5000,
    });
  });

  it('takes remote_write.instance from the file, else the host name it is given (an empty instance too)', () => {
    const rw = (instance: string | undefined, hostname?: string) =>
      typed(
        {
          api: API,
          accounts: [{ name: 'a' }],
          state_file: '/s',
          remote_write: {
            url: 'https://mimir.example/push',
            ...(instance === undefined ? {} : { instance }),
          },
        },
        hostname,
      ).remoteWrite!;
    expect(rw(undefined, 'exporter-0').instance).toBe('exporter-0');
    expect(rw('', 'exporter-0').instance).toBe('exporter-0');
    expect(rw('eu-1', 'exporter-0').instance).toBe('eu-1');
    expect(rw(undefined).instance).toBe('');
    expect(rw(undefined, 'h')).toEqual({
      url: 'https://mimir.example/push',
      job: 'cdn-exporter-settled',
      instance: 'h',
      externalLabels: {},
      headers: {},
      tls: { insecureSkipVerify: false },
      timeoutMs: 30_000,
      queue: { maxPendingSamples: 2_000_000, maxSamplesPerSend: 5000 },
    });
  });

  it('holds no accounts when the file lists none (discovery), and each listed account in order', () => {
    const disc = typed({ api: API, accounts_discovery: { enabled: true } });
    expect(disc.accounts).toEqual([]);
    expect(disc.discovery.enabled).toBe(true);
    const listed = typed({ api: API, accounts: [{ name: 'z' }, { name: 'a', token: 'tok-abcdefgh' }] });
    expect(listed.accounts.map((a) => a.name)).toEqual(['z', 'a']);
    expect(listed.accounts[1]!.token).toBe('tok-abcdefgh');
  });
});
