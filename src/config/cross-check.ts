/**
 * Rules that span several keys (lookback >= window, shard < shards, unique account names, where the token comes
 * from). `crossCheck` reads the raw document tolerantly, so that its findings are reported together with the
 * schema's (./schema.ts) even when other keys are bad.
 */
import { isRecord } from '../http/parse.js';
import { formatDuration, parseDuration } from './duration.js';
import { DEFAULTS } from './schema.js';
import { topResourcesIssues } from './top-resources-schema.js';

/** One problem with the configuration: a dotted path (`metrics.window`, `accounts[1].name`) and what is wrong. */
export interface ConfigIssue {
  path: string;
  message: string;
}

const hasKey = (o: Record<string, unknown>, key: string) => o[key] !== undefined;

/** A duration in the raw document, or `fallback` when absent; undefined when unreadable (the schema reports it). */
function rawDuration(section: Record<string, unknown>, key: string, fallback: string): number | undefined {
  const v = section[key];
  if (v === undefined) return parseDuration(fallback);
  if (v === 0) return 0;
  return typeof v === 'string' ? parseDuration(v) : undefined;
}

const TOKEN_KEYS = ['token', 'token_file'] as const;
const LOGIN_KEYS = ['username', 'password', 'password_file'] as const;

/**
 * Most streams one account may list in `dvr_streams`: a round polls each stream once, one request each, and the
 * account's requests go through its token's gate at `api.requests_per_second` at most, so more streams than
 * `requests_per_second` x `dvr.interval` can never be polled in one interval (docs/configuration.md). The rate is a
 * decimal the user wrote, and its product in binary floating point can land a hair under a whole number
 * (0.29 x 100 = 28.999999999999996): a product within a billionth of a whole number is that number.
 */
export function dvrStreamsCap(requestsPerSecond: number, intervalMs: number): number {
  const exact = (requestsPerSecond * intervalMs) / 1000;
  const whole = Math.round(exact);
  return Math.abs(exact - whole) <= 1e-9 * Math.max(1, whole) ? whole : Math.floor(exact);
}

/** The issue of an account listing more `dvr_streams` than dvrStreamsCap; read tolerantly (the schema reports the rest). */
function dvrStreamsIssue(raw: Record<string, unknown>, account: Record<string, unknown>, at: string) {
  const streams = account.dvr_streams;
  if (!Array.isArray(streams)) return undefined;
  const api = isRecord(raw.api) ? raw.api : {};
  const dvr = isRecord(raw.dvr) ? raw.dvr : {};
  const rps = api.requests_per_second ?? DEFAULTS.api.requests_per_second;
  const interval = rawDuration(dvr, 'interval', DEFAULTS.interval);
  if (typeof rps !== 'number' || !(rps > 0) || interval === undefined || !(interval >= 1000))
    return undefined;
  const cap = dvrStreamsCap(rps, interval);
  // The schema drops repeated names: counted once (the Set only when the list is over the cap).
  if (streams.length <= cap) return undefined;
  const n = new Set(streams.map((s) => (typeof s === 'string' ? s : JSON.stringify(s)))).size;
  if (n <= cap) return undefined;
  return {
    path: `${at}.dvr_streams`,
    message:
      `must list at most ${cap} streams, got ${n}: a round polls each stream once, and at most ${cap} requests ` +
      `fit in dvr.interval (${formatDuration(interval)}) at api.requests_per_second (${rps}); raise one of them ` +
      '(if the CDN allows that rate), or list fewer streams',
  };
}

function hasCredential(o: Record<string, unknown>): boolean {
  return [...TOKEN_KEYS, ...LOGIN_KEYS].some((k) => hasKey(o, k));
}

/** One place (api, or one account) names at most one credential: a token or a complete login, never both. */
function credentialIssues(o: Record<string, unknown>, at: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (hasKey(o, 'token') && hasKey(o, 'token_file')) {
    issues.push({ path: at, message: 'set only one of token and token_file' });
  }
  if (hasKey(o, 'password') && hasKey(o, 'password_file')) {
    issues.push({ path: at, message: 'set only one of password and password_file' });
  }
  const tokenKey = TOKEN_KEYS.find((k) => hasKey(o, k));
  const loginKey = LOGIN_KEYS.find((k) => hasKey(o, k));
  if (tokenKey && loginKey) {
    issues.push({
      path: `${at}.${loginKey}`,
      message: `a token (${at}.${tokenKey}) and a login cannot be set in one place: use one or the other`,
    });
  } else if (loginKey) {
    if (!hasKey(o, 'username')) {
      issues.push({ path: `${at}.username`, message: `required with ${at}.${loginKey}` });
    } else if (!hasKey(o, 'password') && !hasKey(o, 'password_file')) {
      issues.push({
        path: `${at}.password_file`,
        message: `required with ${at}.username (or ${at}.password${at === 'api' ? ' / CDN_API_PASSWORD' : ''})`,
      });
    }
  }
  return issues;
}

/** Control characters: no account name may hold one (a header, a path and a log line carry it). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Rules spanning several keys, read tolerantly from the raw document so they run even when other keys are bad. */
export function crossCheck(raw: Record<string, unknown>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const api = isRecord(raw.api) ? raw.api : {};
  const metrics = isRecord(raw.metrics) ? raw.metrics : {};

  const window = rawDuration(metrics, 'window', DEFAULTS.metrics.window);
  const lookback = rawDuration(metrics, 'lookback', DEFAULTS.metrics.lookback);
  if (window !== undefined && lookback !== undefined && lookback < window) {
    issues.push({
      path: 'metrics.lookback',
      message: `must be at least metrics.window (${formatDuration(window)}), got ${formatDuration(lookback)}`,
    });
  }

  const sharding = isRecord(raw.sharding) ? raw.sharding : {};
  const shard = sharding.shard ?? DEFAULTS.sharding.shard;
  const shards = sharding.shards ?? DEFAULTS.sharding.shards;
  if (Number.isInteger(shard) && Number.isInteger(shards) && (shards as number) >= 1 && shard >= shards) {
    issues.push({
      path: 'sharding.shard',
      message: `must be less than sharding.shards (${shards}), got ${shard}`,
    });
  }

  // The settled series' running totals continue across restarts only through the state file: without it a
  // restart would start them again over windows the receiver already holds (docs/remote-write.md).
  if (raw.remote_write !== undefined && (raw.state_file === undefined || raw.state_file === '')) {
    issues.push({
      path: 'remote_write',
      message: 'needs state_file: the settled series continue across restarts from it',
    });
  }

  issues.push(...credentialIssues(api, 'api'));
  const accounts = Array.isArray(raw.accounts) ? raw.accounts : [];
  const seen = new Set<string>();
  const withoutToken: string[] = [];
  accounts.forEach((account, i) => {
    if (!isRecord(account)) return;
    const { name } = account;
    if (typeof name === 'string' && name !== '') {
      // As discovered names are (src/discovery/discovery.ts): encodeURIComponent leaves dots alone, so `..` as a
      // path segment would send the token outside the API's prefix, and the landing page's link would be `/`.
      if (name === '.' || name === '..' || CONTROL.test(name))
        issues.push({
          path: `accounts[${i}].name`,
          message: `must not be . or .. nor hold control characters, got ${JSON.stringify(name)}`,
        });
      if (seen.has(name))
        issues.push({ path: `accounts[${i}].name`, message: `duplicate account ${JSON.stringify(name)}` });
      seen.add(name);
    }
    issues.push(...credentialIssues(account, `accounts[${i}]`));
    const streams = dvrStreamsIssue(raw, account, `accounts[${i}]`);
    if (streams) issues.push(streams);
    if (!hasCredential(account)) withoutToken.push(typeof name === 'string' ? name : `accounts[${i}]`);
  });
  const discovery = isRecord(raw.accounts_discovery) ? raw.accounts_discovery : {};
  const discovering = discovery.enabled === true;
  if (!discovering && raw.accounts === undefined) {
    issues.push({ path: 'accounts', message: 'required (list them in the file or set CDN_ACCOUNTS)' });
  } else if (!discovering && Array.isArray(raw.accounts) && accounts.length === 0) {
    issues.push({ path: 'accounts', message: 'must list at least one account' });
  }
  if (!hasCredential(api) && (withoutToken.length > 0 || accounts.length === 0)) {
    const which = withoutToken.length > 0 ? `; without one: ${withoutToken.join(', ')}` : '';
    issues.push({
      path: 'api.token',
      message:
        'required (set api.token, api.token_file or CDN_API_TOKEN, or a login with api.username and ' +
        `api.password_file, or give every account its own token or login${which})`,
    });
  }
  issues.push(...topResourcesIssues(raw));
  return issues;
}
