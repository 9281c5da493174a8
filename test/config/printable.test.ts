/**
 * src/config/printable.ts: what `check-config` prints. The effective configuration in the file's own shape
 * (snake_case, durations and sizes as text, defaults filled in) that loads back, and never a secret: every inline
 * token and password is the marker, a base_url's user and password too, and an inline secret found anywhere else in
 * the text (a query string, a path) is masked there as well (docs/configuration.md; src/config/README.md, Secrets).
 * test/config/load.test.ts checks tokens and token files, test/config/login-config.test.ts logins,
 * test/config/remote-write-schema.test.ts the remote_write section; here: all the secrets of one configuration at
 * once, secrets that turn up outside their key, and the shape of the report.
 */
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type Config, loadConfig } from '../../src/config/index.js';
import { checkConfigReport, redactConfig } from '../../src/config/printable.js';
import { REDACTED } from '../../src/redact.js';

const API_TOKEN = 'apiTok-7Hq2Lm9Xw4';
const ACCOUNT_TOKEN = 'acctTok-Z81pQv0Rn5';
const ACCOUNT_PASSWORD = 'acct pass w0rd with spaces';
const RW_PASSWORD = 'rwPass-Gk3Jd8Vb1';
const URL_PASSWORD = 'urlPw-Nf6Ty2Cs7';
const ALL = [API_TOKEN, ACCOUNT_TOKEN, ACCOUNT_PASSWORD, RW_PASSWORD, URL_PASSWORD];

const load = (doc: unknown): Config =>
  loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => stringify(doc), hostname: 'host-1' });

function everySecret(): Record<string, unknown> {
  return {
    api: { base_url: `https://svc:${URL_PASSWORD}@api.cdn.example/v2`, token: API_TOKEN },
    accounts: [
      { name: 'acme', token: ACCOUNT_TOKEN, dvr_streams: ['live/main'] },
      { name: 'beta', username: 'beta-user', password: ACCOUNT_PASSWORD },
      { name: 'gamma', token_file: '/run/secrets/gamma' },
    ],
    state_file: '/var/lib/cdn/state.json',
    remote_write: {
      url: 'https://mimir.example/api/v1/push',
      basic_auth: { username: 'pusher', password: RW_PASSWORD },
    },
  };
}

describe('redactConfig', () => {
  it('holds no secret of the configuration, each in its key replaced by the one marker', () => {
    const printable = redactConfig(load(everySecret()));
    const text = JSON.stringify(printable);
    for (const secret of ALL) expect(text).not.toContain(secret);
    expect(printable.api.base_url).toBe(`https://${REDACTED}@api.cdn.example/v2`);
    expect(printable.api.token).toBe(REDACTED);
    expect(printable.accounts.map((a) => a.token ?? a.password ?? a.token_file)).toEqual([
      REDACTED,
      REDACTED,
      '/run/secrets/gamma',
    ]);
    // The username names a user: kept, as the paths of files are.
    expect(printable.accounts[1]!.username).toBe('beta-user');
    expect(printable.remote_write?.basic_auth).toEqual({ username: 'pusher', password: REDACTED });
  });

  it("is the file's shape: snake_case keys, durations and sizes as text, every section with its defaults", () => {
    const printable = redactConfig(
      load({ api: { base_url: 'https://a.example', token: API_TOKEN }, accounts: [{ name: 'a' }] }),
    );
    expect(Object.keys(printable).sort()).toEqual(
      [
        'accounts',
        'accounts_discovery',
        'api',
        'dvr',
        'limits',
        'metrics',
        'recordings',
        'server',
        'sharding',
      ].sort(),
    );
    expect(printable.api).toMatchObject({ timeout: '30s', max_body_bytes: '64MiB', requests_per_second: 5 });
    expect(printable.metrics).toMatchObject({
      window: '5m',
      delay: '5m',
      lookback: '1h',
      max_catch_up: '7d',
      revisit: '0s',
    });
    expect(printable.server).toMatchObject({
      idle_timeout: '30s',
      auth_failure_limit: { burst: 10, interval: '1m' },
    });
    expect(printable.accounts_discovery).toMatchObject({ enabled: false, include: '.*' });
    // Absent sections stay absent: no state file, nothing pushed.
    expect(Object.hasOwn(printable, 'state_file')).toBe(false);
    expect(Object.hasOwn(printable, 'remote_write')).toBe(false);
  });

  it('prints discovery patterns as written (the anchoring the loader adds taken off), and they load back', () => {
    const doc = {
      api: { base_url: 'https://a.example', token: API_TOKEN },
      accounts_discovery: { enabled: true, include: 'prod-.*|stage-(eu|us)', exclude: 'prod-tmp.*' },
    };
    const config = load(doc);
    const printable = redactConfig(config);
    expect(printable.accounts_discovery).toMatchObject({
      include: 'prod-.*|stage-(eu|us)',
      exclude: 'prod-tmp.*',
    });
    const again = load(printable);
    expect(again.discovery.include.source).toBe(config.discovery.include.source);
    expect(again.discovery.exclude?.source).toBe(config.discovery.exclude?.source);
  });
});

describe('checkConfigReport', () => {
  it('masks an inline secret wherever else it appears, whole or in part, as is or URL-encoded', () => {
    const doc = everySecret();
    (doc.api as Record<string, unknown>).base_url = `https://api.cdn.example/v2?key=${API_TOKEN}`;
    doc.state_file = `/var/lib/${ACCOUNT_TOKEN.slice(0, 10)}/state.json`;
    (doc.accounts as Record<string, unknown>[])[0]!.dvr_streams = [
      `live/${encodeURIComponent(ACCOUNT_PASSWORD)}`,
    ];
    const report = checkConfigReport(load(doc));
    for (const secret of ALL) expect(report).not.toContain(secret);
    expect(report).not.toContain(ACCOUNT_TOKEN.slice(0, 10));
    expect(report).not.toContain(encodeURIComponent(ACCOUNT_PASSWORD));
    expect(report).toContain(`base_url: https://api.cdn.example/v2?key=${REDACTED}`);
  });

  it('is a commented YAML document of the effective configuration; with tokens by file it loads back the same', () => {
    const doc = everySecret();
    delete (doc.api as Record<string, unknown>).token;
    (doc.api as Record<string, unknown>).base_url = 'https://api.cdn.example/v2';
    (doc.api as Record<string, unknown>).token_file = '/run/secrets/cdn';
    doc.accounts = [{ name: 'acme', dvr_streams: ['live/main'], recordings: true }];
    doc.remote_write = {
      url: 'https://mimir.example/api/v1/push',
      basic_auth: { username: 'pusher', password_file: '/run/secrets/rw' },
      external_labels: { region: 'eu' },
    };
    const config = load(doc);
    const report = checkConfigReport(config);
    expect(report.split('\n')[0]).toMatch(/^# cdn-exporter: effective configuration \(.*tokens redacted\)$/);
    expect(report.endsWith('\n')).toBe(true);
    expect(parse(report)).toEqual(redactConfig(config));
    expect(load(parse(report))).toEqual(config);
  });

  it('with inline secrets loads back to the same Config but for the secrets, which read as the marker', () => {
    const config = load(everySecret());
    const again = load(parse(checkConfigReport(config)));
    expect(again.api.token).toBe(REDACTED);
    expect(again.accounts[1]!.password).toBe(REDACTED);
    expect(again.remoteWrite?.basicAuth?.password).toBe(REDACTED);
    expect(again.accounts.map((a) => a.name)).toEqual(config.accounts.map((a) => a.name));
    expect(again.metrics).toEqual(config.metrics);
  });
});
