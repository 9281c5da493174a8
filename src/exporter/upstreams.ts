/**
 * The exporter's upstreams (src/poll/upstream.ts): one per token source (accounts sharing a credential share its
 * request gate and HTTP client), made on first use, discovered accounts' included; and every login the
 * configuration names, whose renewal loops the exporter starts before its pollers.
 */
import type { Agent } from 'undici';
import { LoginToken } from '../auth/login-token.js';
import type { AuthMetrics } from '../auth/metrics.js';
import type { Clock } from '../clock.js';
import type { Config, LoginCredential, TokenFs, TokenSource } from '../config/index.js';
import type { Logger } from '../log.js';
import { createUpstream, type Upstream } from '../poll/upstream.js';
import type { SelfMetrics } from '../server/self-metrics.js';

export interface UpstreamsDeps {
  api: Config['api'];
  clock: Clock;
  log: Logger;
  agent: Agent;
  /** Aborts every request of every upstream (the exporter's stop). */
  signal: AbortSignal;
  self: Pick<SelfMetrics, 'observeRequest' | 'parseErrors'>;
  /** The login metrics; read only when a login is made or reports. */
  auth: () => AuthMetrics;
  random?: () => number;
  tokenFs?: TokenFs;
}

export class Upstreams {
  /** Every login made (createLogin), in configuration order; their loops start in Exporter.start(). */
  readonly logins: LoginToken[] = [];
  private readonly all = new Set<Upstream>();
  /** When this process took over from one that ran before it (RequestGate.spentAt); undefined: a first start. */
  private takenOverAt: number | undefined;

  constructor(private readonly d: UpstreamsDeps) {}

  /**
   * This process follows one that ran before it (its state file was there) and may have been killed a moment
   * ago: every gate, made now or later, starts with its budget spent at `at` (RequestGate.spentAt).
   */
  tookOver(at: number): void {
    this.takenOverAt = at;
    for (const u of this.all) u.gate.spentAt(at);
  }

  /** The requests waiting in every upstream's gate (cdn_api_queue_length). */
  queueLength(): number {
    let n = 0;
    for (const u of this.all) n += u.gate.length;
    return n;
  }

  /** Requests under way in real time in every upstream's gate (RequestGate.underWay). */
  underWay(): number {
    let n = 0;
    for (const u of this.all) n += u.gate.underWay;
    return n;
  }

  /** The upstream (gate, HTTP client) of a token source: one per source, made on first use. */
  for(token: TokenSource): Upstream {
    for (const u of this.all) if (u.token === token) return u;
    const { api, self } = this.d;
    const upstream = createUpstream(token, {
      baseUrl: api.baseUrl,
      requestsPerSecond: api.requestsPerSecond,
      concurrency: api.concurrency,
      clock: this.d.clock,
      agent: this.d.agent,
      timeoutMs: api.timeoutMs,
      maxBodyBytes: api.maxBodyBytes,
      signal: this.d.signal,
      onRequest: (name, code, seconds) =>
        self.observeRequest(name, code === 'error' ? 'error' : Number(code), seconds),
      // An answer that is not JSON, or not of the documented shape, or too big to read, is a parse error of its API.
      onError: (err) => {
        if (err.kind === 'malformed' || err.kind === 'too_large') self.parseErrors.inc({ api: err.api });
      },
    });
    this.all.add(upstream);
    if (this.takenOverAt !== undefined) upstream.gate.spentAt(this.takenOverAt);
    return upstream;
  }

  /**
   * Starts the renewal loops of the logins among `used` (a replica starts only those it uses: an account of another
   * shard may name its own), each handed to `track`, and resolves once each has made its first attempt: the
   * pollers' first requests then carry a token instead of failing for want of one.
   */
  async startLogins(
    used: ReadonlySet<TokenSource>,
    signal: AbortSignal,
    track: (loop: Promise<void>) => void,
  ): Promise<void> {
    const logins = this.logins.filter((l) => used.has(l));
    for (const login of logins) {
      this.d.auth().addLogin(login.username);
      track(login.run(signal));
    }
    await Promise.all(logins.map((l) => l.firstAttempt));
  }

  /** One login's token source, with its metrics; its loop starts in Exporter.start() (startLogins). */
  createLogin(credential: LoginCredential): TokenSource {
    const login = credential.username;
    const source = new LoginToken({
      credential,
      baseUrl: this.d.api.baseUrl,
      clock: this.d.clock,
      log: this.d.log,
      dispatcher: this.d.agent,
      timeoutMs: this.d.api.timeoutMs,
      random: this.d.random,
      fs: this.d.tokenFs,
      onLogin: (result) => this.d.auth().logins.inc({ login, result }),
      onExpiry: (at) => this.d.auth().setExpiry(login, at),
    });
    this.logins.push(source);
    return source;
  }
}
