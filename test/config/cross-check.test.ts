/**
 * src/config/cross-check.ts: the rules that span several keys, read from the raw document. Each finding names the
 * key to change (docs/configuration.md, the table), and the rules run even where other keys are of the wrong shape,
 * so a user sees them together with the schema's findings (test/config/load.test.ts checks the messages through
 * loadConfig; test/config/dvr-streams-cap.test.ts the dvr_streams cap; test/config/login-config.test.ts the login
 * rules). Here: crossCheck on raw documents, its tolerance and the edges of each rule.
 */
import { describe, expect, it } from 'vitest';
import { crossCheck } from '../../src/config/cross-check.js';

type Doc = Record<string, unknown>;

const API = { base_url: 'https://api.cdn.example', token: 'tok-1234567890' };
const valid = (): Doc => ({ api: { ...API }, accounts: [{ name: 'acme' }] });
const found = (doc: Doc) => crossCheck(doc).map((i) => `${i.path}: ${i.message}`);

describe('crossCheck', () => {
  it('finds nothing in a valid document, nor in one whose defaults meet each rule', () => {
    expect(crossCheck(valid())).toEqual([]);
    // Defaults: window 5m, lookback 1h; shard 0 of 1.
    expect(crossCheck({ ...valid(), metrics: { window: '10m' }, sharding: { shards: 4 } })).toEqual([]);
    expect(crossCheck({ ...valid(), metrics: { window: '1h', lookback: '1h' } })).toEqual([]);
  });

  it('reads a document of the wrong shape without throwing, and still reports what it can see', () => {
    const doc: Doc = {
      api: ['not', 'a', 'mapping'],
      metrics: 'junk',
      sharding: 7,
      accounts: ['acme', null, { name: 'beta' }, { name: 'beta' }, { name: 42 }],
      accounts_discovery: 'yes',
    };
    expect(found(doc)).toEqual([
      'accounts[3].name: duplicate account "beta"',
      expect.stringMatching(/^api\.token: required \(.*; without one: beta, beta, accounts\[4\]\)$/),
    ]);
    // Values the schema refuses (an unreadable duration, a fractional shard) are left to it.
    expect(
      crossCheck({ ...valid(), metrics: { window: 'soon', lookback: 5 }, sharding: { shard: 1.5 } }),
    ).toEqual([]);
  });

  it('lookback is at least window, the defaults standing in for a key left out', () => {
    expect(found({ ...valid(), metrics: { lookback: '3m' } })).toEqual([
      'metrics.lookback: must be at least metrics.window (5m), got 3m',
    ]);
    expect(found({ ...valid(), metrics: { window: '10m', lookback: 0 } })).toEqual([
      'metrics.lookback: must be at least metrics.window (10m), got 0s',
    ]);
    expect(found({ ...valid(), metrics: { window: '10m', lookback: '9m' } })).toEqual([
      'metrics.lookback: must be at least metrics.window (10m), got 9m',
    ]);
  });

  it('shard is below shards, the default of one shard included', () => {
    expect(found({ ...valid(), sharding: { shard: 1 } })).toEqual([
      'sharding.shard: must be less than sharding.shards (1), got 1',
    ]);
    expect(found({ ...valid(), sharding: { shard: 3, shards: 3 } })).toEqual([
      'sharding.shard: must be less than sharding.shards (3), got 3',
    ]);
    expect(crossCheck({ ...valid(), sharding: { shard: 2, shards: 3 } })).toEqual([]);
    // shards 0 is the schema's to refuse (at least 1), not a second finding here.
    expect(crossCheck({ ...valid(), sharding: { shard: 0, shards: 0 } })).toEqual([]);
  });

  it('refuses . and .. and control characters in an account name, quoting it; other dots are names', () => {
    const names = ['.', '..', 'a\nb', 'tab\there', 'c1\u0085x', 'del\u007f'];
    expect(found({ api: { ...API }, accounts: names.map((name) => ({ name })) })).toEqual(
      names.map(
        (n, i) =>
          `accounts[${i}].name: must not be . or .. nor hold control characters, got ${JSON.stringify(n)}`,
      ),
    );
    const fine = ['...', 'a.b', '.hidden', 'ünïcode', 'with space'];
    expect(crossCheck({ api: { ...API }, accounts: fine.map((name) => ({ name })) })).toEqual([]);
  });

  it('needs accounts unless discovery is enabled (true, not a string), and then a credential in api', () => {
    expect(found({ api: { ...API } })).toEqual([
      'accounts: required (list them in the file or set CDN_ACCOUNTS)',
    ]);
    expect(found({ api: { ...API }, accounts: [] })).toEqual(['accounts: must list at least one account']);
    expect(crossCheck({ api: { ...API }, accounts_discovery: { enabled: true } })).toEqual([]);
    expect(found({ api: { ...API }, accounts_discovery: { enabled: 'true' } })).toEqual([
      'accounts: required (list them in the file or set CDN_ACCOUNTS)',
    ]);
    // Discovery lists the accounts of the configuration's own credentials: with none in api, there are none.
    expect(found({ api: { base_url: API.base_url }, accounts_discovery: { enabled: true } })).toEqual([
      expect.stringMatching(/^api\.token: required \(set api\.token, api\.token_file or CDN_API_TOKEN, /),
    ]);
  });

  it('takes a login or a token file as an account credential, and names each account without one', () => {
    const doc: Doc = {
      api: { base_url: API.base_url },
      accounts: [
        { name: 'a', token_file: '/run/a' },
        { name: 'b', username: 'u', password_file: '/run/b' },
        { name: 'c' },
        { name: 'd' },
      ],
    };
    expect(found(doc)).toEqual([expect.stringMatching(/; without one: c, d\)$/)]);
    expect(crossCheck({ ...doc, accounts: (doc.accounts as Doc[]).slice(0, 2) })).toEqual([]);
  });

  it('points the missing password of an account at its own keys only (CDN_API_PASSWORD fills api alone)', () => {
    expect(found({ api: { ...API }, accounts: [{ name: 'a', username: 'u' }] })).toEqual([
      'accounts[0].password_file: required with accounts[0].username (or accounts[0].password)',
    ]);
  });

  it('remote_write needs a state_file that is not empty', () => {
    const rw = { url: 'http://127.0.0.1:9090/api/v1/write' };
    const issue = 'remote_write: needs state_file: the settled series continue across restarts from it';
    expect(found({ ...valid(), remote_write: rw })).toEqual([issue]);
    expect(found({ ...valid(), remote_write: rw, state_file: '' })).toEqual([issue]);
    expect(crossCheck({ ...valid(), remote_write: rw, state_file: '/var/lib/cdn/state.json' })).toEqual([]);
  });

  it('reports every finding of one document together', () => {
    const doc: Doc = {
      api: { base_url: API.base_url, token: 't', token_file: '/t' },
      metrics: { window: '10m', lookback: '5m' },
      sharding: { shard: 2, shards: 2 },
      accounts: [{ name: '..' }, { name: 'x', top_resources: 5 }],
      limits: { top_resources: 3 },
    };
    const paths = crossCheck({ ...doc, metrics: { ...(doc.metrics as Doc), breakdown: 'account' } }).map(
      (i) => i.path,
    );
    expect(paths).toEqual([
      'metrics.lookback',
      'sharding.shard',
      'api',
      'accounts[0].name',
      'limits.top_resources',
      'accounts[1].top_resources',
    ]);
  });
});
