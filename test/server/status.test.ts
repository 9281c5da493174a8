/**
 * The status snapshot as the landing page and /readyz read it (src/server/status.ts): which state a row shows
 * (pending before a first poll, down while cdn_up is 0, failing while the API answers but the last poll failed in
 * part, up), when a row waits on a login for a token, and the one-line reason /readyz gives while not ready.
 */
import { describe, expect, it } from 'vitest';
import {
  type AccountStatus,
  accountState,
  accountTried,
  type ExporterStatus,
  notReadyReason,
  waitingOnLogin,
} from '../../src/server/status.js';

const at = new Date(Date.UTC(2026, 0, 1));
const row = (over: Partial<AccountStatus> & { name: string }): AccountStatus => ({
  api: 'metrics',
  up: false,
  ...over,
});
const status = (accounts: AccountStatus[]): ExporterStatus => ({
  ready: false,
  version: 'test',
  startedAt: at,
  accounts,
  problems: { dvr: [], recordings: [] },
});

describe('accountTried and accountState', () => {
  it('a row is pending until its first poll was tried, answered or failed', () => {
    expect(accountState(row({ name: 'a' }))).toBe('pending');
    expect(accountTried(row({ name: 'a' }))).toBe(false);
    // Without `tried`, a success or an error says a poll was tried.
    expect(accountTried(row({ name: 'a', lastError: '503: busy' }))).toBe(true);
    expect(accountTried(row({ name: 'a', lastSuccess: at }))).toBe(true);
    // `tried` says so when it is given, either way.
    expect(accountState(row({ name: 'a', tried: true }))).toBe('down');
    expect(accountState(row({ name: 'a', tried: false, up: true, lastSuccess: at }))).toBe('pending');
  });

  it('down while the last poll failed, failing while it answers with errors since the success, else up', () => {
    expect(accountState(row({ name: 'a', tried: true, up: false, errorsSinceSuccess: 0 }))).toBe('down');
    expect(accountState(row({ name: 'a', tried: true, up: true, errorsSinceSuccess: 2 }))).toBe('failing');
    expect(accountState(row({ name: 'a', tried: true, up: true, errorsSinceSuccess: 0 }))).toBe('up');
    expect(accountState(row({ name: 'a', up: true, lastSuccess: at }))).toBe('up');
  });

  it('waits on a login only when its login was refused or failed', () => {
    expect(waitingOnLogin(row({ name: 'a', cause: 'login refused' }))).toBe(true);
    expect(waitingOnLogin(row({ name: 'a', cause: 'login failed' }))).toBe(true);
    expect(waitingOnLogin(row({ name: 'a', cause: 'token file missing' }))).toBe(false);
    expect(waitingOnLogin(row({ name: 'a' }))).toBe(false);
  });
});

describe('notReadyReason', () => {
  it('names the rows still waiting for a first poll as account/api, five at most, and counts the rest', () => {
    const waiting = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((name) => row({ name }));
    const reason = notReadyReason(status([row({ name: 'z', tried: true, up: true }), ...waiting]));
    expect(reason).toBe(
      'not ready: waiting for the first poll of 7 of 8 (a/metrics, b/metrics, c/metrics, d/metrics, e/metrics, and 2 more)',
    );
    expect(notReadyReason(status([row({ name: 'a', api: 'dvr-net' })]))).toBe(
      'not ready: waiting for the first poll of 1 of 1 (a/dvr-net)',
    );
  });

  it('once every row was tried, names the accounts without a token, each once, and the cause', () => {
    const noToken = (name: string, api: string) =>
      row({ name, api, tried: true, cause: 'login refused', lastError: '401' });
    const reason = notReadyReason(
      status([noToken('acme', 'metrics'), noToken('acme', 'dvr-net'), noToken('globex', 'metrics')]),
    );
    expect(reason).toBe('not ready: no token for 2 account(s) (acme, globex): login refused');
    const many = ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => noToken(n, 'metrics'));
    expect(notReadyReason(status(many))).toBe(
      'not ready: no token for 6 account(s) (a, b, c, d, e, and 1 more): login refused',
    );
  });

  it('a row waiting for its first poll comes before a missing token; with neither it is starting', () => {
    const reason = notReadyReason(
      status([row({ name: 'a', tried: true, cause: 'login failed' }), row({ name: 'b' })]),
    );
    expect(reason).toBe('not ready: waiting for the first poll of 1 of 2 (b/metrics)');
    expect(notReadyReason(status([row({ name: 'a', tried: true, up: true })]))).toBe('not ready: starting');
  });
});
