/**
 * `--web.config.file`: TLS, HTTP/2, security headers, basic auth and rate limit in front of everything the exporter
 * serves, in the file format of Prometheus' exporter-toolkit.
 *
 *   config.ts  parse and check the file (strict, key paths in errors)
 *   tls.ts     TLS options for Node, and the client-certificate checks made after the handshake
 *   auth.ts    rate limit, headers, basic auth with the bcrypt verdict cache
 *   source.ts  the config in force, re-read when the file or its certificates change
 *   bridge.ts  Express on HTTP/2
 *   server.ts  listen: HTTP, HTTPS, or HTTP/2 with HTTP/1.1
 */
import type { WebConfigSource } from './source.js';

export { AuthCache, basicCredentials, guard, verdictFileBeside } from './auth.js';
export { parseWebConfig, type WebConfig, WebConfigError } from './config.js';
export { startWebServer, type WebServer } from './server.js';
export { loadWebConfig, WebConfigSource, type WebState } from './source.js';

/** What `check-config` prints about the web config: its shape, never a key or a hash. */
export function webConfigReport(source: WebConfigSource): string {
  const { config } = source.current();
  const lines = [`# web config ${source.file}: valid`];
  const t = config.tls;
  if (t) {
    const cert = t.certFile ?? 'inline cert';
    const ca = t.clientCaFile ?? (t.clientCa ? 'inline client_ca' : 'system roots');
    lines.push(
      `#   tls: ${cert}; client_auth_type ${t.clientAuthType} (CA: ${ca}); ${t.minVersion}..${t.maxVersion}; http2 ${config.http2 ? 'on' : 'off'}`,
    );
  } else lines.push('#   tls: off (plain HTTP)');
  const users = [...config.users.keys()];
  lines.push(`#   basic_auth_users: ${users.length > 0 ? users.join(', ') : 'none (no basic auth)'}`);
  const headers = Object.keys(config.headers);
  if (headers.length > 0) lines.push(`#   headers: ${headers.join(', ')}`);
  if (config.rateLimit) {
    lines.push(
      `#   rate_limit: 1 request per ${config.rateLimit.intervalMs} ms, burst ${config.rateLimit.burst}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
