/**
 * Where an API token comes from: inline (file or environment) or a file (`token_file`, e.g. a mounted Secret).
 *
 * A file token is cached. Every `get()` does one `stat` (cheap next to the HTTP request it precedes) and re-reads
 * the file when its inode, size, mtime or ctime changed. That covers an edited file and a Kubernetes Secret
 * volume, which rotates by swapping a symlink (stat follows it, so the inode changes). No fs.watch: watchers miss
 * symlink swaps and keep handles open. `refresh()` forces a re-read; callers use it after a 401/403, when the
 * token may have been rotated without any visible change yet.
 *
 * A missing, unreadable or empty file is an error naming the file and the cause, never the content. The last good
 * token is not served after such an error: a rotated-away token would only earn 401s. Surrounding whitespace
 * (the trailing newline of `echo token > file`) is trimmed.
 */
import { readFileSync, statSync } from 'node:fs';
import { SECRETS } from '../redact.js';
import type { Config } from './typed-config.js';

export class TokenError extends Error {
  /**
   * A missing or unreadable token is a configuration problem, not a failure of the API: no request was sent.
   * Callers that sort failures by `kind` (the traffic walker) see it as such.
   */
  readonly kind = 'configuration';

  constructor(message: string) {
    super(message);
    this.name = 'TokenError';
  }
}

export interface TokenSource {
  /** The current token; throws TokenError when a token file is missing, unreadable or empty. */
  get(): string;
  /** Drops any cache and reads again (after a 401/403); returns the token as get() would. */
  refresh(): string;
  /** For logs and pages: `inline` or `file /path`. Never the token. */
  readonly description: string;
  /**
   * Counts the tokens this source has handed out (a login source renews its token; see src/auth). A request
   * refused while the generation moved on was sent with an old token and is retried with the new one at once.
   * Absent: the source never replaces its token by itself.
   */
  readonly generation?: number;
}

/** A login as the configuration gives it (api or one account): username with an inline password or a file. */
export interface LoginCredential {
  username: string;
  password?: string;
  passwordFile?: string;
}

export class InlineToken implements TokenSource {
  readonly description = 'inline';
  readonly #token: string;

  constructor(token: string) {
    const trimmed = token.trim();
    if (trimmed === '') throw new TokenError('the token is empty');
    // Every secret read is registered, so no edge of the exporter (log, page, label, error) shows it.
    SECRETS.add(trimmed);
    this.#token = trimmed;
  }

  get(): string {
    return this.#token;
  }

  refresh(): string {
    return this.#token;
  }
}

/** The minimal file system this needs; tests may pass their own. */
export interface TokenFs {
  stat(path: string): { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint };
  read(path: string): string;
}

export const nodeFs: TokenFs = {
  stat: (path) => statSync(path, { bigint: true }),
  read: (path) => readFileSync(path, 'utf8'),
};

/** Why a secret's file (token, password) cannot be read, in words: a filesystem error's code, never its path. */
export function unreadableReason(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'does not exist';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return code ?? 'cannot be read';
}

export class FileToken implements TokenSource {
  readonly description: string;
  readonly #path: string;
  readonly #fs: TokenFs;
  #token: string | undefined;
  #stamp = '';

  constructor(path: string, fs: TokenFs = nodeFs) {
    this.#path = path;
    this.#fs = fs;
    this.description = `file ${path}`;
  }

  get(): string {
    const stamp = this.#statStamp();
    if (this.#token !== undefined && stamp === this.#stamp) return this.#token;
    return this.#read(stamp);
  }

  refresh(): string {
    return this.#read(this.#statStamp());
  }

  #statStamp(): string {
    let s: ReturnType<TokenFs['stat']>;
    try {
      s = this.#fs.stat(this.#path);
    } catch (e) {
      this.#token = undefined;
      throw new TokenError(`token file ${this.#path}: ${unreadableReason(e)}`);
    }
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  }

  #read(stamp: string): string {
    this.#token = undefined;
    let text: string;
    try {
      text = this.#fs.read(this.#path);
    } catch (e) {
      throw new TokenError(`token file ${this.#path}: ${unreadableReason(e)}`);
    }
    const token = text.trim();
    if (token === '') throw new TokenError(`token file ${this.#path}: is empty`);
    SECRETS.add(token);
    this.#token = token;
    this.#stamp = stamp;
    return token;
  }
}

export function tokenSource(
  source: { token?: string; tokenFile?: string },
  fs?: TokenFs,
): TokenSource | undefined {
  if (source.token !== undefined) return new InlineToken(source.token);
  if (source.tokenFile !== undefined) return new FileToken(source.tokenFile, fs);
  return undefined;
}

/**
 * One TokenSource per account: the account's own token, token_file or login, else the api's (under the key `''`,
 * also when no account uses it). Accounts that share a
 * token share one TokenSource instance, so callers can key per-token state (the request gate) on it.
 */
export function accountTokenSources(
  config: Config,
  fs?: TokenFs,
  login?: (credential: LoginCredential) => TokenSource,
): Map<string, TokenSource> {
  return tokenSources(config, fs, login).accounts;
}

export interface TokenSources {
  /** Per listed account, its source. */
  accounts: Map<string, TokenSource>;
  /** The api section's source, if it names one (the default of discovered accounts). */
  api: TokenSource | undefined;
  /** Every distinct source the configuration names, the api's first. */
  all: TokenSource[];
}

/** As accountTokenSources, with the api's own source and the list of every distinct one (for discovery). */
export function tokenSources(
  config: Config,
  fs?: TokenFs,
  login?: (credential: LoginCredential) => TokenSource,
): TokenSources {
  const shared = new Map<string, TokenSource>();
  const pick = (src: {
    token?: string;
    tokenFile?: string;
    username?: string;
    password?: string;
    passwordFile?: string;
  }): TokenSource | undefined => {
    // A login is keyed by its user and where its password comes from: accounts naming the same login share one
    // token (one login, one renewal) and, through the upstream keyed on this instance, one request budget.
    const key =
      src.token !== undefined
        ? `t:${src.token}`
        : src.tokenFile !== undefined
          ? `f:${src.tokenFile}`
          : src.username !== undefined
            ? `l:${src.username}\u0000${src.passwordFile !== undefined ? `f:${src.passwordFile}` : `p:${src.password}`}`
            : '';
    if (key === '') return undefined;
    let ts = shared.get(key);
    if (!ts) {
      if (src.username !== undefined) {
        if (!login) throw new TokenError(`login ${JSON.stringify(src.username)}: no login client`);
        ts = login(
          withDefined({ username: src.username, password: src.password, passwordFile: src.passwordFile }),
        );
      } else ts = tokenSource(src, fs)!;
      shared.set(key, ts);
    }
    return ts;
  };
  const out = new Map<string, TokenSource>();
  const apiSource = pick(config.api);
  for (const account of config.accounts) {
    const ts = pick(account) ?? apiSource;
    // loadConfig guarantees a token for every account; a hand-built Config may not have one.
    if (!ts) throw new TokenError(`account ${JSON.stringify(account.name)}: no token or token_file`);
    out.set(account.name, ts);
  }
  return { accounts: out, api: apiSource, all: [...new Set(shared.values())] };
}

function withDefined(c: LoginCredential): LoginCredential {
  const out: LoginCredential = { username: c.username };
  if (c.password !== undefined) out.password = c.password;
  if (c.passwordFile !== undefined) out.passwordFile = c.passwordFile;
  return out;
}
