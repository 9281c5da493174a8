/**
 * One remote-write request over HTTP: POST of an encoded body (./encode.ts) with undici, and the answer sorted into
 * what the queue (./queue.ts) does next: sent, retry, or drop.
 *
 * Contracts:
 * - 2xx: sent. 5xx and 429: retry (429's Retry-After, seconds or an HTTP date, is passed on). No answer (refused
 *   connection, reset, TLS failure) or no whole answer within `remote_write.timeout`: retry, code `error`. Any other
 *   status (400 out of order / out of bounds / duplicate, 401, 403, 404, 413, a redirect: none is followed): drop.
 *   These are Prometheus' own rules for its remote-write client.
 * - The receiver's error text is kept, cut to MAX_REASON characters, with every secret masked (src/redact.ts).
 * - Credentials: `bearer_token_file` is read on every request through src/config/token.ts' FileToken (stat'ed, re-read
 *   when it changed); basic auth's `password_file` alike; an inline password is registered with SECRETS at start.
 *   A credential file that cannot be read is a retry with the file named (no request is sent).
 * - TLS files (`ca_file`, `cert_file`, `key_file`) are read once, at start; a changed certificate takes a restart.
 * - `timeout` is real time (as src/http/request.ts' deadlines): it bounds one request, not the queue's waits.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type { Clock } from '../clock.js';
import { FileToken, TokenError, type TokenFs } from '../config/token.js';
import type { RemoteWriteConfig } from '../config/typed-config.js';
import { parseRetryAfter } from '../http/errors.js';
import { redactSecrets, SECRETS } from '../redact.js';
import { REMOTE_WRITE_HEADERS } from './encode.js';

/** Longest piece of a receiver's error text kept for the log: enough for Prometheus' and Mimir's messages. */
export const MAX_REASON = 300;
/** Bytes of an error answer read; the rest is not read (the connection is closed). */
const MAX_ERROR_BODY = 4096;

export type SendResult =
  | { kind: 'sent'; status: number }
  | { kind: 'retry'; status?: number; retryAfterMs?: number; reason: string }
  | { kind: 'drop'; status: number; reason: string };

export interface ClientDeps {
  clock: Clock;
  /** For User-Agent: `cdn-exporter/<version>`. */
  version: string;
  /** Where credential files are read (tests may pass their own). */
  fs?: TokenFs;
  /** Reads a TLS file; default fs.readFileSync. */
  readFile?: (path: string) => Buffer;
}

/** A secret in a file, re-read when it changes; errors name the key, never the content. */
class SecretFile {
  readonly #file: FileToken;

  constructor(
    private readonly key: string,
    path: string,
    fs?: TokenFs,
  ) {
    this.#file = new FileToken(path, fs);
  }

  get(): string {
    try {
      return this.#file.get();
    } catch (e) {
      if (!(e instanceof TokenError)) throw e;
      throw new TokenError(e.message.replace(/^token file /, `${this.key} `));
    }
  }
}

/** Reads the TLS files named by `remote_write.tls`; a missing one is an error naming the key and the file. */
function tlsOptions(config: RemoteWriteConfig, readFile: (path: string) => Buffer) {
  const read = (key: string, path: string | undefined) => {
    if (path === undefined) return undefined;
    try {
      return readFile(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? 'cannot be read';
      throw new Error(`remote_write.tls.${key} ${path}: ${code}`);
    }
  };
  const { tls } = config;
  return {
    ca: read('ca_file', tls.caFile),
    cert: read('cert_file', tls.certFile),
    key: read('key_file', tls.keyFile),
    servername: tls.serverName,
    rejectUnauthorized: !tls.insecureSkipVerify,
  };
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** A cause's words: the error and what it wraps (undici's "fetch failed" says nothing alone). */
function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  const code = (err as { code?: unknown }).code;
  return `${err.message}${cause}${typeof code === 'string' && !err.message.includes(code) ? ` (${code})` : ''}`;
}

export class RemoteWriteClient {
  readonly #agent: Agent;
  readonly #headers: Record<string, string>;
  readonly #bearer: SecretFile | undefined;
  readonly #password: SecretFile | undefined;
  /** Inline secrets, for masking what a receiver echoes. */
  readonly #inline: string[] = [];

  constructor(
    private readonly config: RemoteWriteConfig,
    private readonly deps: ClientDeps,
  ) {
    this.#headers = {
      ...config.headers,
      ...REMOTE_WRITE_HEADERS,
      'user-agent': `cdn-exporter/${deps.version}`,
    };
    if (config.bearerTokenFile !== undefined)
      this.#bearer = new SecretFile('remote_write.bearer_token_file', config.bearerTokenFile, deps.fs);
    const basic = config.basicAuth;
    if (basic?.passwordFile !== undefined)
      this.#password = new SecretFile('remote_write.basic_auth.password_file', basic.passwordFile, deps.fs);
    if (basic?.password !== undefined) {
      SECRETS.add(basic.password);
      this.#inline.push(basic.password);
    }
    this.#agent = new Agent({
      connect: tlsOptions(config, deps.readFile ?? readFileSync),
      // One request in flight at a time (./queue.ts): one connection, kept alive between requests.
      connections: 1,
      keepAliveTimeout: 30_000,
    });
  }

  /** The Authorization header, read now; throws TokenError when a credential file cannot be read. */
  #authorization(): string | undefined {
    if (this.#bearer) return `Bearer ${this.#bearer.get()}`;
    const basic = this.config.basicAuth;
    if (!basic) return undefined;
    const password = this.#password ? this.#password.get() : (basic.password ?? '');
    return `Basic ${Buffer.from(`${basic.username}:${password}`, 'utf8').toString('base64')}`;
  }

  /** The receiver's words (or ours), cut and with every secret in use masked. */
  #reason(text: string): string {
    const one = text.replace(/\s+/g, ' ').trim();
    const cut = one.length > MAX_REASON ? `${one.slice(0, MAX_REASON)}…` : one;
    return redactSecrets(cut, this.#inline, 'remote-write');
  }

  /** Sends one body; never throws. `onAnswer` gets the status, or `error` when no answer came. */
  async send(
    body: Uint8Array,
    signal: AbortSignal,
    onAnswer: (code: number | 'error') => void,
  ): Promise<SendResult> {
    let authorization: string | undefined;
    try {
      authorization = this.#authorization();
    } catch (e) {
      return { kind: 'retry', reason: this.#reason((e as Error).message) };
    }
    const headers = authorization ? { ...this.#headers, authorization } : this.#headers;
    const ctl = new AbortController();
    const { timeoutMs } = this.config;
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      ctl.abort(new Error(`no whole answer within ${timeoutMs}ms (remote_write.timeout)`));
    }, timeoutMs);
    timer.unref();
    const stop = () => ctl.abort(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    try {
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(this.config.url, {
          method: 'POST',
          headers,
          body,
          dispatcher: this.#agent,
          signal: ctl.signal,
        });
      } catch (err) {
        onAnswer('error');
        const why = late ? `no whole answer within ${timeoutMs}ms (remote_write.timeout)` : errorText(err);
        return { kind: 'retry', reason: this.#reason(why) };
      }
      const status = res.statusCode;
      onAnswer(status);
      // The status decides; a body cut off after it changes nothing (a 2xx was taken in whole).
      let text = '';
      try {
        if (status >= 200 && status < 300) await res.body.dump({ limit: MAX_ERROR_BODY });
        else text = await readSome(res.body, MAX_ERROR_BODY);
      } catch {
        text = '';
      }
      if (status >= 200 && status < 300) return { kind: 'sent', status };
      const reason = this.#reason(`${status}${text.trim() === '' ? '' : `: ${text}`}`);
      if (status === 429 || status >= 500) {
        const retryAfterMs =
          status === 429
            ? parseRetryAfter(headerValue(res.headers['retry-after']), this.deps.clock.now())
            : undefined;
        return { kind: 'retry', status, reason, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
      }
      return { kind: 'drop', status, reason };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    }
  }

  /** Closes the connection at once (a request in flight was aborted by the caller's signal). */
  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

/** At most `max` bytes of a body as text; the rest is not read (destroying the body ends the request). */
async function readSome(body: AsyncIterable<Buffer> & { destroy(): unknown }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= max) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks, size).subarray(0, max).toString('utf8');
}
