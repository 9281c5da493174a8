/**
 * The web config in force, re-read when its file or the files it names change, without a restart.
 *
 * The toolkit re-reads the file on every request and every TLS handshake. Here each new connection and each
 * request first compares the files' identity (inode, size, change times, from one `stat` each: cheap next to a
 * TLS handshake) with the last read, and reads again only when one changed. So a certificate replaced by
 * cert-manager (a Kubernetes Secret volume swaps a symlink: new inode) is presented by the next handshake, and a
 * user added to the file can log in on the next request.
 *
 * A broken new file (or a certificate and key that do not match, half-written) keeps the last good one in force and
 * is logged once per change; a broken file at start throws (the caller refuses to start). Two things need a
 * restart, as in the toolkit: `http2`, and turning TLS on or off; a changed file asking for either is logged and
 * refused.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from '../log.js';
import { parseWebConfig, type WebConfig, WebConfigError } from './config.js';
import { buildTls, loadTlsMaterial, type TlsSettings, tlsFiles } from './tls.js';

export interface WebState {
  config: WebConfig;
  tls?: TlsSettings;
  /** Increments with each configuration taken into use. */
  version: number;
}

export interface SourceDeps {
  readFile?: (path: string) => Buffer;
  /** A string that changes when the file changes; undefined when it cannot be read. */
  identity?: (path: string) => string | undefined;
}

function fileIdentity(path: string): string | undefined {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/** Reads and checks the file and everything it names. Throws WebConfigError (its message names the file). */
export function loadWebConfig(
  file: string,
  readFile: (path: string) => Buffer = readFileSync,
): Omit<WebState, 'version'> {
  let text: string;
  try {
    text = readFile(file).toString('utf8');
  } catch (err) {
    throw new WebConfigError(
      [
        {
          path: '',
          message: `cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        },
      ],
      file,
    );
  }
  const config = parseWebConfig(text, file);
  if (!config.tls) return { config };
  try {
    return { config, tls: buildTls(config.tls, loadTlsMaterial(config.tls, readFile)) };
  } catch (err) {
    if (err instanceof WebConfigError) throw new WebConfigError([...err.issues], file);
    throw err;
  }
}

export class WebConfigSource {
  private state: WebState;
  private seen: string;
  private readonly readFile: (path: string) => Buffer;
  private readonly identity: (path: string) => string | undefined;

  /** Loads the file now; throws WebConfigError when it is unusable. */
  constructor(
    readonly file: string,
    private readonly log: Logger,
    deps: SourceDeps = {},
  ) {
    this.readFile = deps.readFile ?? readFileSync;
    this.identity = deps.identity ?? fileIdentity;
    this.state = { ...loadWebConfig(file, this.readFile), version: 1 };
    this.seen = this.signature(this.state);
    if (this.state.tls?.legacyVersions) this.warnLegacy();
  }

  /** The configuration in force, re-read first if a file changed. */
  current(): WebState {
    const now = this.signature(this.state);
    if (now === this.seen) return this.state;
    this.seen = now;
    let next: Omit<WebState, 'version'>;
    try {
      next = loadWebConfig(this.file, this.readFile);
    } catch (err) {
      if (!(err instanceof WebConfigError)) throw err;
      this.log.error(
        { file: this.file, err: err.message },
        'web config changed but cannot be used; the last good one stays in force',
      );
      return this.state;
    }
    if (Boolean(next.tls) !== Boolean(this.state.tls)) {
      this.log.error(
        { file: this.file },
        'web config changed TLS on or off: that needs a restart; not applied',
      );
      return this.state;
    }
    if (next.config.http2 !== this.state.config.http2) {
      this.log.warn({ file: this.file }, 'web config changed http2: that takes effect at the next restart');
      next.config.http2 = this.state.config.http2;
    }
    this.state = { ...next, version: this.state.version + 1 };
    // The new file may name other files; watch those from now on.
    this.seen = this.signature(this.state);
    if (this.state.tls?.legacyVersions) this.warnLegacy();
    this.log.info(
      {
        file: this.file,
        version: this.state.version,
        users: this.state.config.users.size,
        tls: Boolean(next.tls),
      },
      'web config reloaded',
    );
    return this.state;
  }

  private signature(state: WebState): string {
    const files = [this.file, ...(state.config.tls ? tlsFiles(state.config.tls) : [])];
    return files.map((f) => `${f}=${this.identity(f) ?? 'missing'}`).join('|');
  }

  private warnLegacy(): void {
    this.log.warn(
      { file: this.file },
      'web config allows TLS 1.0/1.1: OpenSSL security level 0 is in force for this server (weaker keys accepted)',
    );
  }
}
