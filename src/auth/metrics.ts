/**
 * The login's own metrics (prom-client, on the exporter's registry). `login` is the username: it names a user of
 * the CDN, not a secret, and it is what an operator looks for when a login is refused.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LoginResult } from './login-token.js';

export const LOGIN_RESULTS: readonly LoginResult[] = ['ok', 'too_short', 'refused', 'error'];

export interface AuthMetrics {
  /** cdn_auth_token_expiry_timestamp_seconds{login}: absent for a fixed token and while there is no token. */
  readonly expiry: Gauge<'login'>;
  readonly logins: Counter<'login' | 'result'>;
  /** cdn_discovered_accounts{login}: accounts the inventory lists and the filters keep. */
  readonly discovered: Gauge<'login'>;
  /** cdn_discovered_accounts_refused{reason}: accounts the inventory lists that are not polled, by reason. */
  readonly refusedAccounts: Gauge<'reason'>;
  /** Starts a login's counters at 0, so `increase()` sees its first refusal. */
  addLogin(login: string): void;
  setExpiry(login: string, expiresAt: number | undefined): void;
}

export function createAuthMetrics(registry: Registry): AuthMetrics {
  const registers = [registry];
  const expiry = new Gauge({
    name: 'cdn_auth_token_expiry_timestamp_seconds',
    help: 'Unix time at which the current token of this login expires (absent for a fixed token).',
    labelNames: ['login'] as const,
    registers,
  });
  const logins = new Counter({
    name: 'cdn_auth_logins_total',
    help:
      'Login requests, by result: ok, too_short (a token that expires before the limit of 20 logins a minute ' +
      'allows its renewal), refused (wrong credentials or a banned user), error (no usable answer).',
    labelNames: ['login', 'result'] as const,
    registers,
  });
  const discovered = new Gauge({
    name: 'cdn_discovered_accounts',
    help: 'Accounts found through the inventory API with this login or token and kept by the filters.',
    labelNames: ['login'] as const,
    registers,
  });
  const refusedAccounts = new Gauge({
    name: 'cdn_discovered_accounts_refused',
    help:
      'Accounts the inventory lists (active, kept by the filters) that are not polled, by reason: name_too_long ' +
      '(over limits.max_label_length), name_invalid (. or .. or a control character), max_accounts ' +
      '(over accounts_discovery.max_accounts).',
    labelNames: ['reason'] as const,
    registers,
  });
  return {
    expiry,
    logins,
    discovered,
    refusedAccounts,
    addLogin(login) {
      for (const result of LOGIN_RESULTS) logins.inc({ login, result }, 0);
    },
    setExpiry(login, expiresAt) {
      if (expiresAt === undefined) expiry.remove({ login });
      else expiry.set({ login }, expiresAt / 1000);
    },
  };
}
