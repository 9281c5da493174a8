/**
 * From a parsed `tls_server_config` to what Node's TLS server takes, and the checks Node's TLS cannot make during
 * the handshake (they run on each new connection, right after it).
 *
 * Go's client_auth_type values against Node's two switches (requestCert, rejectUnauthorized):
 *   NoClientCert                no certificate asked for
 *   RequestClientCert           asked for, not required, not verified
 *   RequireAnyClientCert        asked for, required (checked after the handshake), not verified
 *   VerifyClientCertIfGiven     asked for; one given must verify against the client CA (checked after)
 *   RequireAndVerifyClientCert  asked for, required and verified by OpenSSL in the handshake
 * Without client_ca/client_ca_file the client CA is the system's roots in Go and Node's bundled roots here.
 *
 * What Go and Node do differently, and what we do about it:
 * - TLS 1.3 cipher suites cannot be configured in Go; listed in cipher_suites they are accepted and ignored, and
 *   Node keeps its TLS 1.3 defaults, the same.
 * - TLS10/TLS11 need OpenSSL's security level 0 in Node 24 (level 1 refuses those versions); a file that asks for
 *   them gets it (`@SECLEVEL=0`), which also lets weaker keys through; the reloader logs a warning.
 * - A cipher the local OpenSSL lacks is refused with its name.
 * - client_allowed_sans with no client certificate: refused (the toolkit's check needs a certificate too).
 */
import { readFileSync } from 'node:fs';
import {
  createSecureContext,
  DEFAULT_CIPHERS,
  getCiphers,
  type SecureContextOptions,
  type TLSSocket,
} from 'node:tls';
import {
  CIPHER_SUITES,
  CURVES,
  type TlsServerConfig,
  type TlsVersionName,
  WebConfigError,
} from './config.js';

const NODE_VERSIONS: Record<TlsVersionName, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'> = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
};

/** The certificate, key and client CA as read now. */
export interface TlsMaterial {
  cert: Buffer | string;
  key: Buffer | string;
  ca?: Buffer | string;
}

export interface TlsSettings {
  /** For `tls.createSecureContext` / `server.setSecureContext`. */
  context: SecureContextOptions;
  requestCert: boolean;
  rejectUnauthorized: boolean;
  /** True when the file asks for TLS 1.0 or 1.1 (security level 0). */
  legacyVersions: boolean;
  /** After the handshake: undefined to go on, or why the connection is refused. */
  checkPeer(socket: TLSSocket): string | undefined;
}

const P = 'tls_server_config';

/** The files the TLS config names (absolute), for the reloader to watch. */
export function tlsFiles(t: TlsServerConfig): string[] {
  return [t.certFile, t.keyFile, t.clientCaFile].filter((f): f is string => f !== undefined);
}

export function loadTlsMaterial(
  t: TlsServerConfig,
  read: (path: string) => Buffer = readFileSync,
): TlsMaterial {
  const issues: { path: string; message: string }[] = [];
  const one = (
    key: string,
    file: string | undefined,
    inline: string | undefined,
  ): Buffer | string | undefined => {
    if (file === undefined) return inline;
    try {
      return read(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      issues.push({ path: `${P}.${key}`, message: `failed to read ${file}: ${code}` });
      return undefined;
    }
  };
  const cert = one('cert_file', t.certFile, t.cert);
  const key = one('key_file', t.keyFile, t.key);
  const ca = one('client_ca_file', t.clientCaFile, t.clientCa);
  if (issues.length > 0 || cert === undefined || key === undefined) throw new WebConfigError(issues);
  return ca === undefined ? { cert, key } : { cert, key, ca };
}

/** Node's subjectAltName text (`DNS:a, IP Address:1.2.3.4, URI:x, email:y`; values with commas quoted). */
export function subjectAltNames(text: string | undefined): string[] {
  if (!text) return [];
  const out: string[] = [];
  const re = /(DNS|IP Address|email|URI):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/gy;
  for (const m of text.matchAll(re)) {
    let v = m[2]!;
    if (v.startsWith('"')) v = JSON.parse(v) as string;
    out.push(m[1] === 'IP Address' ? canonicalIp(v) : v);
  }
  return out;
}

/** IPv6 written the way Go prints it (`::1`), so a SAN list from a Go exporter's file compares equal. */
function canonicalIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip;
  }
}

/**
 * Builds and checks the TLS settings: the key pair must load and match (Go's `tls.X509KeyPair`), every cipher
 * must exist in this OpenSSL. Throws WebConfigError naming the key.
 */
export function buildTls(t: TlsServerConfig, m: TlsMaterial): TlsSettings {
  const issues: { path: string; message: string }[] = [];
  const legacyVersions = t.minVersion === 'TLS10' || t.minVersion === 'TLS11';
  const available = new Set(getCiphers().map((c) => c.toUpperCase()));
  const ciphers: string[] = [];
  t.cipherSuites.forEach((name, i) => {
    const openssl = CIPHER_SUITES[name];
    if (openssl === null || openssl === undefined) return;
    if (!available.has(openssl)) {
      issues.push({
        path: `${P}.cipher_suites[${i}]`,
        message: `${name} is not available in this Node's OpenSSL`,
      });
    } else ciphers.push(openssl);
  });
  const context: SecureContextOptions = {
    cert: m.cert,
    key: m.key,
    minVersion: NODE_VERSIONS[t.minVersion],
    maxVersion: NODE_VERSIONS[t.maxVersion],
    honorCipherOrder: t.preferServerCipherSuites,
  };
  if (m.ca !== undefined) context.ca = m.ca;
  if (ciphers.length > 0 || legacyVersions) {
    const list = ciphers.length > 0 ? ciphers.join(':') : DEFAULT_CIPHERS;
    context.ciphers = legacyVersions ? `${list}:@SECLEVEL=0` : list;
  }
  if (t.curvePreferences.length > 0) context.ecdhCurve = t.curvePreferences.map((c) => CURVES[c]).join(':');
  if (issues.length > 0) throw new WebConfigError(issues);
  try {
    createSecureContext(context);
  } catch (err) {
    // OpenSSL's message names what failed (a PEM error, a key that does not match), never the key itself.
    const msg = (err as Error).message;
    const path = /ca|issuer/i.test(msg) && !/key/i.test(msg) ? `${P}.client_ca_file` : `${P}.cert_file`;
    throw new WebConfigError([{ path, message: `failed to load the certificate and key: ${msg}` }]);
  }
  const mode = t.clientAuthType;
  const allowed = t.clientAllowedSans?.map(canonicalIp);
  return {
    context,
    requestCert: mode !== 'NoClientCert',
    rejectUnauthorized: mode === 'RequireAndVerifyClientCert',
    legacyVersions,
    checkPeer(socket) {
      const cert = socket.getPeerX509Certificate();
      if (cert === undefined) {
        if (mode === 'RequireAnyClientCert' || mode === 'RequireAndVerifyClientCert')
          return 'no client certificate';
        if (allowed) return 'no client certificate (client_allowed_sans is set)';
        return undefined;
      }
      if (
        (mode === 'VerifyClientCertIfGiven' || mode === 'RequireAndVerifyClientCert') &&
        !socket.authorized
      ) {
        return `client certificate not verified: ${String(socket.authorizationError)}`;
      }
      if (allowed) {
        const sans = subjectAltNames(cert.subjectAltName);
        if (!sans.some((s) => allowed.includes(s)))
          return 'client certificate has none of client_allowed_sans';
      }
      return undefined;
    },
  };
}
