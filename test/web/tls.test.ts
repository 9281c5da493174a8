/**
 * From a parsed `tls_server_config` to what Node's TLS server takes (src/web/tls.ts), without a server: the files
 * to watch and their reading errors named by key, the context (versions, ciphers, curves, cipher order, security
 * level 0 for TLS 1.0/1.1), Go's five client_auth_type values as Node's two switches, and the checks made after
 * the handshake with the reason a connection is refused, on certificates made at test time. What a client sees
 * over a real connection: ./server.test.ts.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClientAuthType, type TlsServerConfig, WebConfigError } from '../../src/web/config.js';
import { buildTls, loadTlsMaterial, subjectAltNames, type TlsMaterial, tlsFiles } from '../../src/web/tls.js';
import { makePki, type Pki } from '../helpers/certs.js';

function config(over: Partial<TlsServerConfig> = {}): TlsServerConfig {
  return {
    clientAuthType: 'NoClientCert',
    minVersion: 'TLS12',
    maxVersion: 'TLS13',
    cipherSuites: [],
    preferServerCipherSuites: true,
    curvePreferences: [],
    ...over,
  };
}

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebConfigError);
    return (err as WebConfigError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  return [];
}

let dir: string;
let pki: Pki;
let server: TlsMaterial;
let clientCert: X509Certificate;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-tls-'));
  pki = makePki(dir);
  const s = pki.issue('server');
  server = { cert: readFileSync(s.cert), key: readFileSync(s.key) };
  const c = pki.issue('client', {
    client: true,
    sans: ['DNS:prometheus.monitoring.svc', 'IP:10.0.0.1', 'IP:::1'],
  });
  clientCert = new X509Certificate(readFileSync(c.cert));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('tlsFiles and loadTlsMaterial', () => {
  it('lists the certificate, key and client CA files to watch; inline PEM has none', () => {
    expect(
      tlsFiles(config({ certFile: '/etc/a.crt', keyFile: '/etc/a.key', clientCaFile: '/etc/ca.crt' })),
    ).toEqual(['/etc/a.crt', '/etc/a.key', '/etc/ca.crt']);
    expect(tlsFiles(config({ cert: 'PEM', key: 'PEM' }))).toEqual([]);
  });

  it('reads the files (a file before its inline value), and the client CA only when one is given', () => {
    const read = (path: string) => Buffer.from(`content of ${path}`);
    expect(loadTlsMaterial(config({ certFile: '/c', keyFile: '/k', cert: 'ignored' }), read)).toEqual({
      cert: Buffer.from('content of /c'),
      key: Buffer.from('content of /k'),
    });
    expect(loadTlsMaterial(config({ cert: 'C', key: 'K', clientCa: 'CA' }), read)).toEqual({
      cert: 'C',
      key: 'K',
      ca: 'CA',
    });
  });

  it('names the key of every file it cannot read, with the file and the error code', () => {
    const read = (path: string): Buffer => {
      throw Object.assign(new Error(`cannot open ${path}`), { code: path === '/k' ? 'EACCES' : 'ENOENT' });
    };
    expect(
      issuesOf(() => loadTlsMaterial(config({ certFile: '/c', keyFile: '/k', clientCaFile: '/ca' }), read)),
    ).toEqual([
      'tls_server_config.cert_file: failed to read /c: ENOENT',
      'tls_server_config.key_file: failed to read /k: EACCES',
      'tls_server_config.client_ca_file: failed to read /ca: ENOENT',
    ]);
  });
});

describe('buildTls: the context', () => {
  it('passes the versions as Node names them, the cipher order, and no cipher list when none is given', () => {
    const t = buildTls(
      config({ minVersion: 'TLS13', maxVersion: 'TLS13', preferServerCipherSuites: false }),
      server,
    );
    expect(t.context).toMatchObject({
      minVersion: 'TLSv1.3',
      maxVersion: 'TLSv1.3',
      honorCipherOrder: false,
    });
    expect(t.context.ciphers).toBeUndefined();
    expect(t.context.ecdhCurve).toBeUndefined();
    expect(t.context.ca).toBeUndefined();
    expect(t.legacyVersions).toBe(false);
  });

  it("maps Go's cipher and curve names to OpenSSL's; TLS 1.3 suites are accepted and left to Node, as Go does", () => {
    const t = buildTls(
      config({
        cipherSuites: [
          'TLS_AES_128_GCM_SHA256',
          'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
          'TLS_RSA_WITH_AES_128_CBC_SHA',
        ],
        curvePreferences: ['X25519', 'CurveP256'],
      }),
      server,
    );
    expect(t.context.ciphers).toBe('ECDHE-ECDSA-AES128-GCM-SHA256:AES128-SHA');
    expect(t.context.ecdhCurve).toBe('X25519:P-256');
    const only13 = buildTls(config({ cipherSuites: ['TLS_CHACHA20_POLY1305_SHA256'] }), server);
    expect(only13.context.ciphers).toBeUndefined();
  });

  it('asks for security level 0 when TLS 1.0 or 1.1 is allowed, keeping a cipher list given', () => {
    for (const minVersion of ['TLS10', 'TLS11'] as const) {
      const t = buildTls(config({ minVersion }), server);
      expect(t.legacyVersions).toBe(true);
      expect(t.context.ciphers).toMatch(/:@SECLEVEL=0$/);
    }
    const listed = buildTls(
      config({ minVersion: 'TLS10', cipherSuites: ['TLS_RSA_WITH_AES_256_CBC_SHA'] }),
      server,
    );
    expect(listed.context.ciphers).toBe('AES256-SHA:@SECLEVEL=0');
  });

  it('refuses a certificate with a key that is not its own, naming cert_file, without the key', () => {
    const other = pki.issue('other');
    const key = readFileSync(other.key, 'utf8');
    const issues = issuesOf(() => buildTls(config(), { cert: server.cert, key }));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^tls_server_config\.cert_file: failed to load the certificate and key: /);
    const body = key.split('\n').slice(1, -2).join('');
    expect(issues[0]).not.toContain(body.slice(0, 20));
  });

  it('puts the client CA in the context when one is given', () => {
    const ca = readFileSync(pki.ca.cert);
    expect(
      buildTls(config({ clientAuthType: 'RequireAndVerifyClientCert' }), { ...server, ca }).context.ca,
    ).toBe(ca);
  });
});

/** A socket after the handshake, as checkPeer reads it. */
function socket(cert: X509Certificate | undefined, authorized: boolean, error?: string): TLSSocket {
  return {
    getPeerX509Certificate: () => cert,
    authorized,
    authorizationError: error === undefined ? undefined : new Error(error),
  } as unknown as TLSSocket;
}

describe("buildTls: client_auth_type, Go's five values", () => {
  const modes: [ClientAuthType, boolean, boolean][] = [
    ['NoClientCert', false, false],
    ['RequestClientCert', true, false],
    ['RequireAnyClientCert', true, false],
    ['VerifyClientCertIfGiven', true, false],
    ['RequireAndVerifyClientCert', true, true],
  ];

  it('asks for a certificate in every mode but NoClientCert; only RequireAndVerifyClientCert has OpenSSL verify it', () => {
    for (const [mode, requestCert, rejectUnauthorized] of modes) {
      const t = buildTls(config({ clientAuthType: mode }), server);
      expect([t.requestCert, t.rejectUnauthorized], mode).toEqual([requestCert, rejectUnauthorized]);
    }
  });

  it('after the handshake: refuses no certificate where one is required, and one that does not verify where it must', () => {
    const want: Record<ClientAuthType, [string | undefined, string | undefined, string | undefined]> = {
      // [no certificate, an unverified one, a verified one]
      NoClientCert: [undefined, undefined, undefined],
      RequestClientCert: [undefined, undefined, undefined],
      RequireAnyClientCert: ['no client certificate', undefined, undefined],
      VerifyClientCertIfGiven: [
        undefined,
        'client certificate not verified: Error: UNABLE_TO_GET_ISSUER_CERT',
        undefined,
      ],
      RequireAndVerifyClientCert: [
        'no client certificate',
        'client certificate not verified: Error: UNABLE_TO_GET_ISSUER_CERT',
        undefined,
      ],
    };
    for (const [mode] of modes) {
      const t = buildTls(config({ clientAuthType: mode }), server);
      expect(
        [
          t.checkPeer(socket(undefined, false)),
          t.checkPeer(socket(clientCert, false, 'UNABLE_TO_GET_ISSUER_CERT')),
          t.checkPeer(socket(clientCert, true)),
        ],
        mode,
      ).toEqual(want[mode]);
    }
  });

  it('client_allowed_sans: a certificate must carry one of them (IPv6 compared as Go prints it); none at all is refused', () => {
    const check = (sans: string[], s: TLSSocket) =>
      buildTls(
        config({ clientAuthType: 'RequireAndVerifyClientCert', clientAllowedSans: sans }),
        server,
      ).checkPeer(s);
    const verified = socket(clientCert, true);
    expect(check(['grafana', 'prometheus.monitoring.svc'], verified)).toBeUndefined();
    expect(check(['10.0.0.1'], verified)).toBeUndefined();
    expect(check(['0:0:0:0:0:0:0:1'], verified)).toBeUndefined();
    expect(check(['grafana', '10.0.0.2'], verified)).toBe(
      'client certificate has none of client_allowed_sans',
    );
    const relaxed = buildTls(
      config({ clientAuthType: 'RequestClientCert', clientAllowedSans: ['grafana'] }),
      server,
    );
    expect(relaxed.checkPeer(socket(undefined, false))).toBe(
      'no client certificate (client_allowed_sans is set)',
    );
  });
});

describe('subjectAltNames', () => {
  it("reads Node's subjectAltName text: every kind, quoted values with commas, IPv6 in Go's short form", () => {
    expect(subjectAltNames(undefined)).toEqual([]);
    expect(subjectAltNames('')).toEqual([]);
    expect(
      subjectAltNames(
        'DNS:a.example, IP Address:10.0.0.1, IP Address:0:0:0:0:0:0:0:1, URI:spiffe://mon/prometheus, email:ops@example.com, DNS:"b,c.example"',
      ),
    ).toEqual(['a.example', '10.0.0.1', '::1', 'spiffe://mon/prometheus', 'ops@example.com', 'b,c.example']);
    expect(subjectAltNames(clientCert.subjectAltName)).toEqual([
      'prometheus.monitoring.svc',
      '10.0.0.1',
      '::1',
    ]);
  });
});
