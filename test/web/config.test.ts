/**
 * The web config file's parse, against the toolkit's documentation and its test cases: every documented key
 * parses, unknown keys are refused with their path, and the values the toolkit refuses are refused here, with the
 * key named and no secret echoed.
 */
import { describe, expect, it } from 'vitest';
import { parseGoDuration, parseWebConfig, WebConfigError } from '../../src/web/config.js';
import { buildTls } from '../../src/web/tls.js';

const FILE = '/etc/cdn-exporter/web.yml';

function issues(text: string): string[] {
  try {
    parseWebConfig(text, FILE);
  } catch (err) {
    if (err instanceof WebConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
  return [];
}

/** The toolkit's sample file (docs/web-config.yml), as published. */
const TOOLKIT_SAMPLE = `# TLS and basic authentication configuration example.
tls_server_config:
  cert_file: server.crt
  key_file: server.key

basic_auth_users:
  alice: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze
  bob: $2y$10$hLqFl9jSjoAAy95Z/zw8Ye8wkdMBM8c5Bn1ptYqP/AXyV0.oy0S8m

rate_limit:
  interval: "1s"
  burst: 20
`;

/** Every key of the toolkit's web configuration document (linked from docs/configuration.md), at once. */
const EVERY_KEY = `tls_server_config:
  cert: "-----BEGIN CERTIFICATE-----"
  key: "-----BEGIN PRIVATE KEY-----"
  client_ca: "-----BEGIN CERTIFICATE-----"
  cert_file: tls/server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [prometheus.monitoring.svc, 10.0.0.1]
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  prefer_server_cipher_suites: false
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    Content-Security-Policy: "default-src 'self'"
    X-Frame-Options: sameorigin
    X-Content-Type-Options: nosniff
    X-XSS-Protection: "1; mode=block"
    Strict-Transport-Security: max-age=31536000; includeSubDomains
basic_auth_users:
  alice: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze
rate_limit:
  interval: 250ms
  burst: 5
`;

describe('parseWebConfig', () => {
  it("parses the toolkit's sample file", () => {
    const c = parseWebConfig(TOOLKIT_SAMPLE, FILE);
    expect(c.tls?.certFile).toBe('/etc/cdn-exporter/server.crt');
    expect(c.tls?.keyFile).toBe('/etc/cdn-exporter/server.key');
    expect([...c.users.keys()]).toEqual(['alice', 'bob']);
    expect(c.rateLimit).toEqual({ intervalMs: 1000, burst: 20 });
    expect(c.http2).toBe(true);
  });

  it('parses every documented key, with paths relative to the file', () => {
    const c = parseWebConfig(EVERY_KEY, FILE);
    expect(c.tls).toMatchObject({
      certFile: '/etc/cdn-exporter/tls/server.crt',
      keyFile: '/abs/server.key',
      clientCaFile: '/etc/cdn-exporter/ca.crt',
      clientAuthType: 'RequireAndVerifyClientCert',
      clientAllowedSans: ['prometheus.monitoring.svc', '10.0.0.1'],
      minVersion: 'TLS13',
      maxVersion: 'TLS13',
      preferServerCipherSuites: false,
      curvePreferences: ['X25519', 'CurveP256'],
    });
    expect(c.http2).toBe(false);
    expect(Object.keys(c.headers)).toHaveLength(5);
    expect(c.rateLimit).toEqual({ intervalMs: 250, burst: 5 });
  });

  it("has the toolkit's defaults: no TLS, HTTP/2 on, TLS12..TLS13, server cipher order, no auth", () => {
    const empty = parseWebConfig('', FILE);
    expect(empty.tls).toBeUndefined();
    expect(empty.users.size).toBe(0);
    expect(empty.rateLimit).toBeUndefined();
    const t = parseWebConfig('tls_server_config:\n  cert_file: a\n  key_file: b\n', FILE).tls;
    expect(t).toMatchObject({
      clientAuthType: 'NoClientCert',
      minVersion: 'TLS12',
      maxVersion: 'TLS13',
      preferServerCipherSuites: true,
    });
    expect(parseWebConfig('rate_limit:\n  interval: 0\n  burst: 0\n', FILE).rateLimit).toBeUndefined();
  });

  it('refuses unknown keys with their path, at every level', () => {
    expect(issues('tls_server_config:\n  cert_filse: server.crt\n')).toEqual([
      'tls_server_config.cert_filse: unknown key',
    ]);
    expect(issues('tls_config:\n  cert_file: a\n')).toEqual(['tls_config: unknown key']);
    expect(issues('http_server_config:\n  http3: true\n')).toEqual(['http_server_config.http3: unknown key']);
    expect(issues('rate_limit:\n  brust: 1\n')).toEqual(['rate_limit.brust: unknown key']);
  });

  it("refuses what the toolkit's bad test files hold, naming the key", () => {
    const tls = 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n';
    const cases: [string, RegExp][] = [
      [
        `${tls}  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA2048]\n`,
        /^tls_server_config.cipher_suites\[0\]: unknown cipher/,
      ],
      [
        `${tls}  curve_preferences: [CurveP257]\n`,
        /^tls_server_config.curve_preferences\[0\]: unknown curve/,
      ],
      [`${tls}  min_version: TLS111\n`, /^tls_server_config.min_version: unknown TLS version "TLS111"/],
      [`${tls}  client_auth_type: Sometimes\n`, /^tls_server_config.client_auth_type: invalid ClientAuth/],
      [
        `${tls}  client_ca_file: /dev/null\n`,
        /^tls_server_config.client_auth_type: client CA's have been configured/,
      ],
      [
        'tls_server_config:\n  cert_file: ""\n  key_file: server.key\n',
        /^tls_server_config.cert_file: missing one of cert or cert_file/,
      ],
      [
        'tls_server_config:\n  cert_file: server.crt\n  key: ""\n',
        /^tls_server_config.key_file: missing one of key or key_file/,
      ],
      ['tls_server_config:\n  client_auth_type: x\n', /^tls_server_config.cert_file: missing/],
      [
        `${tls}  min_version: TLS13\n  max_version: TLS12\n`,
        /^tls_server_config.min_version: TLS13 is above max_version TLS12/,
      ],
      [
        `${tls}  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n  max_version: TLS12\n`,
        /^tls_server_config.cipher_suites: HTTP\/2 needs/,
      ],
      [
        'http_server_config:\n  headers:\n    Content-Type: foo\n',
        /^http_server_config.headers.Content-Type: HTTP header "Content-Type" can not be configured/,
      ],
      [
        'http_server_config:\n  headers:\n    X-Frame-Options: foo\n',
        /^http_server_config.headers.X-Frame-Options: invalid value: expected one of deny, sameorigin/,
      ],
      [
        'http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n',
        /^http_server_config.headers.X-Content-Type-Options: invalid value/,
      ],
      ['rate_limit:\n  interval: soon\n  burst: 1\n', /^rate_limit.interval: not a duration/],
      ['http_server_config:\n  http2: maybe\n', /^http_server_config.http2: must be true or false/],
      ['hWkNKCp3fvIx3jKnsaBI\nTuEjdwNS8A2vYdFbiKqr\n', /the file must be a YAML mapping/],
      ['tls_server_config:\n  cert_file: a\n  cert_file: b\n', /YAML error \(DUPLICATE_KEY\) at line 3/],
    ];
    for (const [text, want] of cases) {
      const got = issues(text);
      expect(got.length, text).toBeGreaterThan(0);
      expect(
        got.filter((g) => want.test(g)),
        `${text}\n${got.join('\n')}`,
      ).toHaveLength(1);
    }
  });

  it('the same cipher list is fine with http2: false, as in the toolkit', () => {
    const text =
      'tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n  max_version: TLS12\nhttp_server_config:\n  http2: false\n';
    expect(issues(text)).toEqual([]);
  });

  it('refuses a password in clear (or anything not bcrypt) without echoing it', () => {
    const got = issues(
      'basic_auth_users:\n  john: doe\n  jane: $2y$03$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze\n',
    );
    expect(got).toEqual([
      'basic_auth_users.john: not a bcrypt hash (make one with htpasswd -nBC 10 "")',
      'basic_auth_users.jane: not a bcrypt hash (make one with htpasswd -nBC 10 "")',
    ]);
    expect(got.join()).not.toContain('doe');
  });

  it("reads values the way the toolkit's YAML library does (numbers as text, YAML 1.1 booleans)", () => {
    const c = parseWebConfig('http_server_config:\n  http2: no\n  headers:\n    X-XSS-Protection: 1\n', FILE);
    expect(c.http2).toBe(false);
    expect(c.headers).toEqual({ 'X-XSS-Protection': '1' });
  });

  it('Go durations: units, fractions, sums; integers are nanoseconds', () => {
    expect(parseGoDuration('1s')).toBe(1000);
    expect(parseGoDuration('1.5m')).toBe(90_000);
    expect(parseGoDuration('1h30m')).toBe(5_400_000);
    expect(parseGoDuration('250ms')).toBe(250);
    expect(parseGoDuration('5')).toBeUndefined();
    expect(
      parseWebConfig('rate_limit:\n  interval: 2000000000\n  burst: 1\n', FILE).rateLimit?.intervalMs,
    ).toBe(2000);
  });
});

describe('buildTls (what Node can and cannot honour)', () => {
  const t = parseWebConfig('tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS10\n', FILE)
    .tls!;

  it('a cert and key that do not load are refused, naming cert_file, never printing the key', () => {
    const secret = '-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n';
    let err: unknown;
    try {
      buildTls(t, { cert: 'not a certificate', key: secret });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WebConfigError);
    expect((err as Error).message).toMatch(
      /tls_server_config.cert_file: failed to load the certificate and key/,
    );
    expect((err as Error).message).not.toContain('TOPSECRET');
  });
});
