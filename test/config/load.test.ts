import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  type Config,
  ConfigError,
  checkConfigReport,
  type Env,
  formatIssue,
  loadConfig,
  redactConfig,
} from '../../src/config/index.js';

const SECRET = 'tok-9f8e7d6c5b4a';
const ACCOUNT_SECRET = 'acct-0a1b2c3d4e5f';

type Raw = Record<string, unknown> & {
  api: Record<string, unknown>;
  metrics: Record<string, unknown>;
  accounts: Record<string, unknown>[];
};

function base(): Raw {
  return {
    api: { base_url: 'https://api.cdn.example', token: SECRET },
    metrics: {},
    accounts: [{ name: 'acme' }],
  };
}

function load(text: string, env: Env = {}): Config {
  return loadConfig({ file: 'cdn.yaml', env, readFile: () => text });
}

/** The formatted issues of a configuration that must be refused. */
function problems(text: string, env: Env = {}): string[] {
  try {
    load(text, env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue);
  }
  throw new Error('configuration was accepted');
}

const TOKEN_REQUIRED = 'api.token: required (set api.token, api.token_file or CDN_API_TOKEN';

// One case per rule: a change to a valid file, and the message it must produce.
const INVALID: Array<[string, (r: Raw) => void, string]> = [
  ['unknown top-level key', (r) => (r.bogus = 1), 'bogus: unknown key'],
  ['unknown key in api', (r) => (r.api.tokn = 'x'), 'api.tokn: unknown key'],
  ['unknown key in metrics', (r) => (r.metrics.windoww = '5m'), 'metrics.windoww: unknown key'],
  ['unknown key in dvr', (r) => (r.dvr = { intervall: '1m' }), 'dvr.intervall: unknown key'],
  ['unknown key in recordings', (r) => (r.recordings = { every: '1m' }), 'recordings.every: unknown key'],
  [
    'unknown key in an account',
    (r) => (r.accounts[0]!.dvr_stream = []),
    'accounts[0].dvr_stream: unknown key',
  ],
  ['unknown key in sharding', (r) => (r.sharding = { replicas: 2 }), 'sharding.replicas: unknown key'],
  ['web is a flag, not a key', (r) => (r.web = { listen_address: ':1' }), 'web: unknown key'],
  [
    'bad duration',
    (r) => (r.api.timeout = '30 seconds'),
    'api.timeout: must be a duration like 90s, 5m or 1h30m, got "30 seconds"',
  ],
  [
    'duration units out of order',
    (r) => (r.metrics.lookback = '30m1h'),
    'metrics.lookback: must be a duration like 90s, 5m or 1h30m, got "30m1h"',
  ],
  [
    'duration without a unit',
    (r) => (r.metrics.delay = 5),
    'metrics.delay: must be a duration with a unit like 90s, 5m or 1h30m, got 5',
  ],
  [
    'duration of the wrong type',
    (r) => (r.metrics.delay = true),
    'metrics.delay: must be a duration like 90s, 5m or 1h30m, got true',
  ],
  [
    'window above 10m',
    (r) => (r.metrics.window = '15m'),
    'metrics.window: must be between 1m and 10m, got 15m',
  ],
  [
    'window below 1m',
    (r) => (r.metrics.window = '30s'),
    'metrics.window: must be between 1m and 10m, got 30s',
  ],
  [
    'window not whole minutes',
    (r) => (r.metrics.window = '1m30s'),
    'metrics.window: must be whole minutes, got 1m30s',
  ],
  [
    'delay not whole minutes',
    (r) => (r.metrics.delay = '90s'),
    'metrics.delay: must be whole minutes, got 90s',
  ],
  [
    'revisit above a day',
    (r) => (r.metrics.revisit = '25h'),
    'metrics.revisit: must be between 0s and 1d, got 25h',
  ],
  [
    'counter retention under a second',
    (r) => (r.metrics.counter_retention = '500ms'),
    'metrics.counter_retention: must be between 1s and 90d, got 500ms',
  ],
  [
    'revisit not whole minutes',
    (r) => (r.metrics.revisit = '90s'),
    'metrics.revisit: must be whole minutes, got 90s',
  ],
  [
    'lookback shorter than window',
    (r) => Object.assign(r.metrics, { window: '10m', lookback: '5m' }),
    'metrics.lookback: must be at least metrics.window (10m), got 5m',
  ],
  [
    'lookback shorter than the default window',
    (r) => (r.metrics.lookback = '2m'),
    'metrics.lookback: must be at least metrics.window (5m), got 2m',
  ],
  [
    'bad breakdown',
    (r) => (r.metrics.breakdown = 'zone'),
    'metrics.breakdown: must be one of resource, account, got "zone"',
  ],
  [
    'unknown metric name',
    (r) => (r.metrics.metrics = ['edge_status_200', 'edge_status_418']),
    'metrics.metrics[1]: unknown metric "edge_status_418": the API documents edge_|origin_ + status_<code>, ' +
      'bandwidth, requests_total, request_time, and edge_hit_ratio, edge_hit_bytes',
  ],
  [
    'origin has no hit metrics',
    (r) => (r.metrics.metrics = ['origin_hit_ratio']),
    'metrics.metrics[0]: unknown metric "origin_hit_ratio": the API documents edge_|origin_ + status_<code>, ' +
      'bandwidth, requests_total, request_time, and edge_hit_ratio, edge_hit_bytes',
  ],
  [
    'window_gauges not a boolean',
    (r) => (r.metrics.window_gauges = 'yes'),
    'metrics.window_gauges: must be true or false, got a string',
  ],
  [
    'resource id not text or a whole number',
    (r) => (r.metrics.resources = ['123', 1.5]),
    'metrics.resources[1]: must be a resource id (text or a whole number), got 1.5',
  ],
  [
    'duplicate account',
    (r) => r.accounts.push({ name: 'beta' }, { name: 'acme' }),
    'accounts[2].name: duplicate account "acme"',
  ],
  ['empty accounts', (r) => (r.accounts = []), 'accounts: must list at least one account'],
  [
    'no accounts',
    (r) => delete (r as Record<string, unknown>).accounts,
    'accounts: required (list them in the file or set CDN_ACCOUNTS)',
  ],
  ['account without a name', (r) => (r.accounts = [{ recordings: true }]), 'accounts[0].name: required'],
  ['empty account name', (r) => (r.accounts = [{ name: '' }]), 'accounts[0].name: must not be empty'],
  [
    'account named ..',
    (r) => (r.accounts = [{ name: '..' }]),
    'accounts[0].name: must not be . or .. nor hold control characters, got ".."',
  ],
  [
    'account name with a newline',
    (r) => (r.accounts = [{ name: 'a\nb' }]),
    'accounts[0].name: must not be . or .. nor hold control characters, got "a\\nb"',
  ],
  [
    'shard not below shards',
    (r) => (r.sharding = { shard: 2, shards: 2 }),
    'sharding.shard: must be less than sharding.shards (2), got 2',
  ],
  ['negative shard', (r) => (r.sharding = { shard: -1 }), 'sharding.shard: must be at least 0, got -1'],
  [
    'remote_write without state_file',
    (r) => {
      (r as Record<string, unknown>).remote_write = { url: 'http://127.0.0.1:9090/api/v1/write' };
      delete (r as Record<string, unknown>).state_file;
    },
    'remote_write: needs state_file: the settled series continue across restarts from it',
  ],
  ['zero shards', (r) => (r.sharding = { shards: 0 }), 'sharding.shards: must be at least 1, got 0'],
  [
    'fractional concurrency',
    (r) => (r.api.concurrency = 1.5),
    'api.concurrency: must be an integer, got 1.5',
  ],
  [
    'zero request rate',
    (r) => (r.api.requests_per_second = 0),
    'api.requests_per_second: must be more than 0, got 0',
  ],
  ['zero interval', (r) => (r.dvr = { interval: '0s' }), 'dvr.interval: must be between 1s and 1d, got 0s'],
  [
    'missing base_url',
    (r) => delete r.api.base_url,
    'api.base_url: required (set it in the file or CDN_API_URL)',
  ],
  [
    'base_url not http',
    (r) => (r.api.base_url = 'api.cdn.example'),
    'api.base_url: must be an http:// or https:// URL',
  ],
  [
    'both token and token_file',
    (r) => (r.api.token_file = '/run/secrets/cdn'),
    'api: set only one of token and token_file',
  ],
  [
    'both token and token_file on an account',
    (r) => (r.accounts[0] = { name: 'acme', token: 'x', token_file: '/f' }),
    'accounts[0]: set only one of token and token_file',
  ],
  ['empty token', (r) => (r.api.token = '  '), 'api.token: must not be empty'],
  // Ceilings: each value beyond one broke the process (timer overflow, busy loops, a catch-up that pins the CPU).
  [
    "dvr.interval over Node's timer",
    (r) => (r.dvr = { interval: '30d' }),
    'dvr.interval: must be between 1s and 1d, got 30d',
  ],
  [
    'recordings.interval over a day',
    (r) => (r.recordings = { interval: '25h' }),
    'recordings.interval: must be between 1s and 1d, got 25h',
  ],
  [
    'metrics.delay over a day',
    (r) => (r.metrics.delay = '30d'),
    'metrics.delay: must be at most 1d, got 30d',
  ],
  [
    'metrics.lookback over 90 days',
    (r) => (r.metrics.lookback = '1000y'),
    'metrics.lookback: must be between 1m and 90d, got 1000y',
  ],
  ['api.timeout over 10m', (r) => (r.api.timeout = '1h'), 'api.timeout: must be between 1ms and 10m, got 1h'],
  [
    'api.concurrency over 64',
    (r) => (r.api.concurrency = 1_000_000),
    'api.concurrency: must be at most 64, got 1000000',
  ],
  [
    'api.requests_per_second over 1000',
    (r) => (r.api.requests_per_second = 1e9),
    'api.requests_per_second: must be at most 1000, got 1000000000',
  ],
  [
    'sharding.shards over 1024',
    (r) => (r.sharding = { shards: 5000 }),
    'sharding.shards: must be at most 1024, got 5000',
  ],
  [
    'api.max_body_bytes over 512MiB',
    (r) => (r.api.max_body_bytes = '1GiB'),
    'api.max_body_bytes: must be between 1KiB and 512MiB, got "1GiB"',
  ],
  [
    'api.max_body_bytes not a size',
    (r) => (r.api.max_body_bytes = '64 megs'),
    'api.max_body_bytes: must be a size like 64MiB, 500MB or 1048576, got "64 megs"',
  ],
];

describe('loadConfig: each rule has its message', () => {
  it('accepts the base file the cases modify', () => {
    expect(load(stringify(base())).accounts[0]!.name).toBe('acme');
  });

  it.each(INVALID)('%s', (_name, change, message) => {
    const raw = base();
    change(raw);
    expect(problems(stringify(raw))).toContain(message);
  });

  it('missing token: names the ways to give one and the accounts without one', () => {
    const raw = base();
    delete raw.api.token;
    raw.accounts.push({ name: 'beta', token_file: '/run/secrets/beta' });
    const found = problems(stringify(raw));
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(new RegExp(`^${TOKEN_REQUIRED.replace(/[()]/g, '\\$&')}`));
    expect(found[0]).toContain('without one: acme)');
  });

  it('needs no api token when every account has its own', () => {
    const raw = base();
    delete raw.api.token;
    raw.accounts = [
      { name: 'acme', token: ACCOUNT_SECRET },
      { name: 'beta', token_file: '/run/secrets/beta' },
    ];
    const config = load(stringify(raw));
    expect(config.api.token).toBeUndefined();
    expect(config.accounts.map((a) => a.token ?? a.tokenFile)).toEqual([ACCOUNT_SECRET, '/run/secrets/beta']);
  });

  it('reports several problems together, in one error that lists them all', () => {
    const raw = base();
    raw.metrics.window = '15m';
    raw.metrics.windoww = '5m';
    raw.accounts.push({ name: 'acme' });
    let error: ConfigError | undefined;
    try {
      load(stringify(raw));
    } catch (e) {
      error = e as ConfigError;
    }
    expect(error?.issues.map(formatIssue).sort()).toEqual([
      'accounts[1].name: duplicate account "acme"',
      'metrics.window: must be between 1m and 10m, got 15m',
      'metrics.windoww: unknown key',
    ]);
    for (const issue of error!.issues) expect(error!.message).toContain(formatIssue(issue));
    expect(error!.message).toContain('cdn.yaml');
  });

  it('refuses YAML that is not a mapping, and broken YAML with its position', () => {
    expect(problems('- a\n- b\n')).toEqual(['cdn.yaml: must be a YAML mapping of keys, got a list']);
    const broken = problems(`api:\n  token: ${SECRET}\n bad: [\n`);
    expect(broken.length).toBeGreaterThan(0);
    expect(broken[0]).toMatch(/^cdn\.yaml:3:\d+: invalid YAML: /);
  });

  it('refuses a duplicate key, naming it', () => {
    expect(problems('accounts: []\naccounts: []\n')[0]).toMatch(
      /^cdn\.yaml:2:\d+: invalid YAML: duplicate key "accounts"/,
    );
    expect(problems('api:\n  timeout: 5s\n  "timeout": 6s\naccounts: []\n')[0]).toMatch(
      /^cdn\.yaml:3:\d+: invalid YAML: duplicate key "timeout"/,
    );
  });

  it('refuses a YAML alias bomb by name, before expanding it', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const [name, prev] of [
      ['b', 'a'],
      ['c', 'b'],
      ['d', 'c'],
      ['e', 'd'],
      ['f', 'e'],
      ['g', 'f'],
    ]) {
      lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const found = problems(`${lines.join('\n')}\n`);
    expect(found).toEqual([
      'cdn.yaml: invalid YAML: too many alias expansions (more than 100; an alias bomb?)',
    ]);
    expect(found.join()).not.toContain('ReferenceError');
  });

  it('accepts values at each ceiling', () => {
    const raw = base();
    Object.assign(raw.api, {
      timeout: '10m',
      concurrency: 64,
      requests_per_second: 1000,
      max_body_bytes: '512MiB',
    });
    Object.assign(raw.metrics, { delay: '1d', lookback: '90d' });
    Object.assign(raw, {
      dvr: { interval: '1d' },
      recordings: { interval: '1d' },
      sharding: { shards: 1024 },
    });
    const config = load(stringify(raw));
    expect(config.api).toMatchObject({
      timeoutMs: 600_000,
      concurrency: 64,
      maxBodyBytes: 512 * 1024 * 1024,
    });
    expect(config.metrics.lookbackMs).toBe(90 * 86_400_000);
    expect(config.dvr.intervalMs).toBe(86_400_000);
  });

  it('takes a section left empty as absent', () => {
    const config = load(
      'api: {base_url: "https://a.example", token: x}\nmetrics:\ndvr:\nsharding:\naccounts: [{name: a}]\n',
    );
    expect(config.metrics.windowMs).toBe(300_000);
    expect(config.dvr.intervalMs).toBe(60_000);
    expect(config.sharding).toEqual({ shard: 0, shards: 1 });
  });

  it('names a file it cannot read', () => {
    expect(() => loadConfig({ file: '/nonexistent/cdn.yaml', env: {} })).toThrow(
      'cannot read config file /nonexistent/cdn.yaml: ENOENT',
    );
  });
});

describe('loadConfig: defaults', () => {
  it('a minimal file gives the documented defaults, durations in ms', () => {
    const config = load(
      'api: {base_url: "https://api.cdn.example/", token_file: /run/secrets/cdn}\naccounts: [{name: acme}]\n',
    );
    expect(config).toEqual({
      api: {
        baseUrl: 'https://api.cdn.example',
        tokenFile: '/run/secrets/cdn',
        timeoutMs: 30_000,
        requestsPerSecond: 5,
        concurrency: 4,
        maxBodyBytes: 64 * 1024 * 1024,
      },
      metrics: {
        breakdown: 'resource',
        windowMs: 5 * 60_000,
        delayMs: 5 * 60_000,
        lookbackMs: 60 * 60_000,
        maxCatchUpMs: 7 * 24 * 60 * 60_000,
        metrics: [],
        resources: [],
        windowGauges: false,
        revisitMs: 0,
        counterRetentionMs: 24 * 60 * 60_000,
      },
      dvr: { intervalMs: 60_000 },
      recordings: { intervalMs: 60_000 },
      accounts: [{ name: 'acme', dvrStreams: [], recordings: false }],
      discovery: {
        enabled: false,
        intervalMs: 600_000,
        include: /^(?:.*)$/,
        recordings: false,
        maxAccounts: 10_000,
      },
      sharding: { shard: 0, shards: 1 },
      limits: { maxSeries: 2_000_000, maxSeriesPerAccount: 2_000_000, maxLabelLength: 1024 },
      server: {
        maxConnections: 512,
        maxScrapesInFlight: 100,
        idleTimeoutMs: 30_000,
        writeTimeoutMs: 60_000,
        authFailureBurst: 10,
        authFailureIntervalMs: 60_000,
      },
    } satisfies Config);
  });

  it('reads a configuration that sets every section', () => {
    const config = load(`
api:
  base_url: https://api.cdn.example
  token_file: /run/secrets/cdn-token
  timeout: 1m30s
  requests_per_second: 2.5
  concurrency: 8
metrics:
  breakdown: account
  window: 10m
  delay: 0
  lookback: 2h
  metrics: [edge_status_2xx, edge_bandwidth, edge_status_2xx, origin_request_time, edge_hit_bytes]
  resources: ["123", 456]
  window_gauges: true
dvr: {interval: 30s}
recordings: {interval: 2m}
accounts:
  - name: acme
    token_file: /run/secrets/acme-token
    dvr_streams: [live/main, news/hd]
    recordings: true
state_file: /var/lib/cdn-exporter/state.json
sharding: {shard: 1, shards: 3}
`);
    expect(config.api.timeoutMs).toBe(90_000);
    expect(config.api.requestsPerSecond).toBe(2.5);
    expect(config.metrics).toEqual({
      breakdown: 'account',
      windowMs: 600_000,
      delayMs: 0,
      lookbackMs: 7_200_000,
      maxCatchUpMs: 7 * 86_400_000,
      metrics: ['edge_status_2xx', 'edge_bandwidth', 'origin_request_time', 'edge_hit_bytes'],
      resources: ['123', '456'],
      windowGauges: true,
      revisitMs: 0,
      counterRetentionMs: 86_400_000,
    });
    expect(config.dvr.intervalMs).toBe(30_000);
    expect(config.recordings.intervalMs).toBe(120_000);
    expect(config.accounts).toEqual([
      {
        name: 'acme',
        tokenFile: '/run/secrets/acme-token',
        dvrStreams: ['live/main', 'news/hd'],
        recordings: true,
      },
    ]);
    expect(config.stateFile).toBe('/var/lib/cdn-exporter/state.json');
    expect(config.sharding).toEqual({ shard: 1, shards: 3 });
  });
});

describe('loadConfig: environment', () => {
  const quick: Env = {
    CDN_API_URL: 'https://api.cdn.example',
    CDN_API_TOKEN: `${SECRET}\n`,
    CDN_ACCOUNTS: 'acme, beta,,gamma ',
  };

  it('starts from the environment alone', () => {
    const config = loadConfig({ env: quick });
    expect(config.api.baseUrl).toBe('https://api.cdn.example');
    expect(config.api.token).toBe(SECRET);
    expect(config.accounts.map((a) => a.name)).toEqual(['acme', 'beta', 'gamma']);
    expect(config.metrics.windowMs).toBe(300_000);
  });

  it('without file or environment, says what to set', () => {
    expect(() => loadConfig({ env: {} })).toThrow(ConfigError);
    try {
      loadConfig({ env: { CDN_API_URL: '' } });
    } catch (e) {
      expect((e as ConfigError).issues.map(formatIssue)).toEqual([
        'api.base_url: required (set it in the file or CDN_API_URL)',
        'accounts: required (list them in the file or set CDN_ACCOUNTS)',
        expect.stringMatching(/^api\.token: required \(set api\.token, api\.token_file or CDN_API_TOKEN/),
      ]);
    }
  });

  it('fills only what the file leaves out', () => {
    const env: Env = { ...quick, CDN_API_URL: 'https://other.example' };
    const full = load(
      'api: {base_url: "https://file.example", token_file: /run/secrets/cdn}\naccounts: [{name: filed}]\n',
      env,
    );
    expect(full.api.baseUrl).toBe('https://file.example');
    expect(full.api.tokenFile).toBe('/run/secrets/cdn');
    expect(full.api.token).toBeUndefined();
    expect(full.accounts.map((a) => a.name)).toEqual(['filed']);

    const gaps = load('metrics: {window: 2m}\n', env);
    expect(gaps.api.baseUrl).toBe('https://other.example');
    expect(gaps.api.token).toBe(SECRET);
    expect(gaps.accounts.map((a) => a.name)).toEqual(['acme', 'beta', 'gamma']);
    expect(gaps.metrics.windowMs).toBe(120_000);
  });

  it('says when a bad value came from the environment', () => {
    expect(problems('{}', { ...quick, CDN_API_URL: 'api.cdn.example', CDN_ACCOUNTS: 'a,a' })).toEqual([
      'api.base_url: must be an http:// or https:// URL (from CDN_API_URL)',
      'accounts[1].name: duplicate account "a" (from CDN_ACCOUNTS)',
    ]);
  });

  it('SHARD and SHARDS override the file', () => {
    const file = 'sharding: {shard: 0, shards: 1}\n';
    expect(load(file, { ...quick, SHARD: '2', SHARDS: '4' }).sharding).toEqual({ shard: 2, shards: 4 });
    expect(load(file, { ...quick, SHARDS: '3' }).sharding).toEqual({ shard: 0, shards: 3 });
    expect(loadConfig({ env: { ...quick, SHARD: '1', SHARDS: '2' } }).sharding).toEqual({
      shard: 1,
      shards: 2,
    });
  });

  it('refuses bad SHARD / SHARDS by name', () => {
    expect(problems('{}', { ...quick, SHARD: 'pod-1', SHARDS: '0' })).toEqual([
      'SHARD: must be an integer >= 0, got "pod-1"',
      'SHARDS: must be an integer >= 1, got "0"',
    ]);
    expect(problems('{}', { ...quick, SHARD: '3', SHARDS: '3' })).toEqual([
      'sharding.shard: must be less than sharding.shards (3), got 3 (from SHARD)',
    ]);
  });
});

describe('secrets', () => {
  function withTokens(): Raw {
    const raw = base();
    raw.accounts.push(
      { name: 'beta', token: ACCOUNT_SECRET },
      { name: 'gamma', token_file: '/run/secrets/gamma' },
    );
    return raw;
  }

  it('redactConfig and checkConfigReport hide every token and keep token_file paths', () => {
    const config = load(stringify(withTokens()));
    const printable = JSON.stringify(redactConfig(config));
    const report = checkConfigReport(config);
    for (const text of [printable, report]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(ACCOUNT_SECRET);
      expect(text).toContain('/run/secrets/gamma');
    }
    const printed = parse(report) as Raw;
    expect(printed.api.token).toBe('<redacted>');
    expect(printed.accounts[1]!.token).toBe('<redacted>');
    expect(printed.accounts[0]!.token).toBeUndefined();
  });

  it('redacts a token that came from the environment', () => {
    const report = checkConfigReport(
      loadConfig({ env: { CDN_API_URL: 'https://a.example', CDN_API_TOKEN: SECRET, CDN_ACCOUNTS: 'acme' } }),
    );
    expect(report).not.toContain(SECRET);
    expect(report).toContain('<redacted>');
  });

  it('redacts the user and password of a base_url, which still loads back', () => {
    const raw = withTokens();
    raw.api.base_url = 'https://svc-user:pa@ss-W0rd@api.cdn.example:8443/prefix';
    const report = checkConfigReport(load(stringify(raw)));
    expect(report).not.toContain('pa@ss-W0rd');
    expect(report).not.toContain('svc-user');
    expect((parse(report) as Raw).api.base_url).toBe('https://<redacted>@api.cdn.example:8443/prefix');
    expect(load(report).api.baseUrl).toMatch(/@api\.cdn\.example:8443\/prefix$/);
    // Without credentials the URL is printed as it is.
    expect(checkConfigReport(load(stringify(withTokens())))).toContain(
      `base_url: ${withTokens().api.base_url}`,
    );
  });

  it('the report is a valid configuration that loads back to the same Config', () => {
    const raw = withTokens();
    delete raw.api.token;
    raw.api.token_file = '/run/secrets/cdn';
    raw.accounts[1] = { name: 'beta', token_file: '/run/secrets/beta' };
    Object.assign(raw.metrics, { window: '3m', lookback: '1h30m', metrics: ['edge_hit_ratio'] });
    raw.dvr = { interval: '45s' };
    raw.state_file = '/var/lib/state.json';
    const config = load(stringify(raw));
    expect(load(checkConfigReport(config))).toEqual(config);
  });

  const LEAKY: Array<[string, string]> = [
    [
      'other errors in a file with a token',
      `api: {token: ${SECRET}}\nmetrics: {window: 15m}\naccounts: []\n`,
    ],
    [
      'a token of the wrong type (a list)',
      `api: {base_url: "https://a.example", token: [${SECRET}]}\naccounts: [{name: a}]\n`,
    ],
    ['a numeric token', 'api: {base_url: "https://a.example", token: 987654321987}\naccounts: [{name: a}]\n'],
    [
      'a numeric account token',
      'api: {base_url: "https://a.example"}\naccounts: [{name: a, token: 987654321987}]\n',
    ],
    ['broken YAML around the token', `api:\n  token: ${SECRET}\n   base_url: [\n`],
    [
      'token in a base_url',
      `api: {base_url: "ftp://user:${SECRET}@host", token: x}\naccounts: [{name: a}]\n`,
    ],
  ];

  it.each(LEAKY)('no error message shows the token: %s', (_name, text) => {
    let message = '';
    try {
      load(text);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^invalid configuration/);
    expect(message).not.toContain(SECRET);
    expect(message).not.toContain('987654321987');
  });
});
