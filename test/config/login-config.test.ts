/**
 * A credential is a token or a login, never both in one place; a login needs its username and one password
 * source; the environment fills only what the file leaves out; check-config never shows a password.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  ConfigError,
  checkConfigReport,
  type Env,
  loadConfig,
  tokenSources,
} from '../../src/config/index.js';

function load(raw: Record<string, unknown>, env: Env = {}) {
  const text = stringify(raw);
  return loadConfig({ file: 'cdn.yml', env, readFile: () => text });
}

function problems(raw: Record<string, unknown>, env: Env = {}): string[] {
  try {
    load(raw, env);
  } catch (e) {
    if (e instanceof ConfigError) return e.issues.map((i) => `${i.path}: ${i.message}`);
    throw e;
  }
  return [];
}

const api = { base_url: 'https://api.example' };

describe('login configuration', () => {
  it('takes a login in api and per account, exactly parallel to token and token_file', () => {
    const c = load({
      api: { ...api, username: 'mon', password_file: '/run/pw' },
      accounts: [
        { name: 'a' },
        { name: 'b', username: 'other', password: 'pw-b' },
        { name: 'c', token: 't' },
      ],
    });
    expect(c.api).toMatchObject({ username: 'mon', passwordFile: '/run/pw' });
    expect(c.accounts[1]).toMatchObject({ username: 'other', password: 'pw-b' });
  });

  it('refuses a token and a login in one place, naming the key', () => {
    expect(
      problems({ api: { ...api, token: 't', username: 'u', password: 'p' }, accounts: [{ name: 'a' }] }),
    ).toEqual([
      'api.username: a token (api.token) and a login cannot be set in one place: use one or the other',
    ]);
    expect(
      problems({
        api: { ...api, token: 't' },
        accounts: [{ name: 'a', token_file: '/t', password_file: '/p' }],
      }),
    ).toEqual([
      'accounts[0].password_file: a token (accounts[0].token_file) and a login cannot be set in one place: use one or the other',
    ]);
  });

  it('needs a username with a password, a password with a username, and one password source', () => {
    expect(problems({ api: { ...api, username: 'u' }, accounts: [{ name: 'a' }] })).toEqual([
      'api.password_file: required with api.username (or api.password / CDN_API_PASSWORD)',
    ]);
    expect(problems({ api: { ...api, password_file: '/p' }, accounts: [{ name: 'a' }] })).toEqual([
      'api.username: required with api.password_file',
    ]);
    expect(
      problems({
        api: { ...api, username: 'u', password: 'p', password_file: '/p' },
        accounts: [{ name: 'a' }],
      }),
    ).toEqual(['api: set only one of password and password_file']);
  });

  it('reads CDN_API_USERNAME and CDN_API_PASSWORD only where the file names no credential', () => {
    const env = { CDN_API_USERNAME: 'envuser', CDN_API_PASSWORD: 'env-pw', CDN_API_TOKEN: 'env-token' };
    const fromEnv = load({ api, accounts: [{ name: 'a' }] }, env);
    // A token and a login from the environment: the token wins, as a file naming both would be refused.
    expect(fromEnv.api.token).toBe('env-token');
    expect(fromEnv.api.username).toBeUndefined();
    const login = load(
      { api, accounts: [{ name: 'a' }] },
      { CDN_API_USERNAME: 'envuser', CDN_API_PASSWORD: 'env-pw' },
    );
    expect(login.api).toMatchObject({ username: 'envuser', password: 'env-pw' });
    const fileUser = load({ api: { ...api, username: 'fileuser' }, accounts: [{ name: 'a' }] }, env);
    expect(fileUser.api).toMatchObject({ username: 'fileuser', password: 'env-pw' });
    expect(fileUser.api.token).toBeUndefined();
  });

  it('check-config shows <redacted> for a password and keeps the username and password_file', () => {
    const c = load({
      api: { ...api, username: 'mon', password: 's3cret-pw' },
      accounts: [{ name: 'a', username: 'u2', password_file: '/run/pw2' }],
    });
    const report = checkConfigReport(c);
    expect(report).not.toContain('s3cret-pw');
    expect(report).toContain('password: <redacted>');
    expect(report).toContain('username: mon');
    expect(report).toContain('password_file: /run/pw2');
    // A bad value under a password key is not echoed either.
    expect(
      problems({ api: { ...api, username: 'u', password: 123456 }, accounts: [{ name: 'a' }] }).join(),
    ).not.toContain('123456');
  });

  it('gives accounts that share a login one token source', () => {
    const c = load({
      api: { ...api, username: 'mon', password_file: '/pw' },
      accounts: [
        { name: 'a' },
        { name: 'b', username: 'mon', password_file: '/pw' },
        { name: 'c', username: 'x', password: 'y' },
      ],
    });
    const made: string[] = [];
    const sources = tokenSources(c, undefined, (cred) => {
      made.push(cred.username);
      return { description: cred.username, get: () => 't', refresh: () => 't' };
    });
    expect(made).toEqual(['mon', 'x']);
    expect(sources.accounts.get('a')).toBe(sources.accounts.get('b'));
    expect(sources.accounts.get('c')).not.toBe(sources.accounts.get('a'));
    expect(sources.api).toBe(sources.accounts.get('a'));
    expect(sources.all).toHaveLength(2);
  });

  it('takes accounts_discovery, and no accounts when it is enabled', () => {
    const c = load({
      api: { ...api, token: 't' },
      accounts_discovery: { enabled: true, include: 'prod-.*', exclude: 'prod-test' },
    });
    expect(c.accounts).toEqual([]);
    expect(c.discovery.include.test('prod-a')).toBe(true);
    expect(c.discovery.include.test('xprod-a')).toBe(false);
    expect(c.discovery.exclude!.test('prod-test')).toBe(true);
    expect(c.discovery.exclude!.test('prod-test2')).toBe(false);
    expect(problems({ api: { ...api, token: 't' }, accounts_discovery: { include: '(' } })[0]).toMatch(
      /^accounts_discovery.include: must be a regular expression/,
    );
    expect(problems({ api: { ...api, token: 't' } })).toEqual([
      'accounts: required (list them in the file or set CDN_ACCOUNTS)',
    ]);
  });
});
