/**
 * The exporter behind a web config, over real TLS on loopback: basic auth (with a $2y$ hash from Debian's
 * htpasswd), HTTP/2, the toolkit's client_auth_type values, SANs, TLS versions and ciphers, headers, the rate limit,
 * and a certificate or a file changed while the server runs. Certificates are made by openssl at test time.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { type KeyPair, makePki, type Pki } from '../helpers/certs.js';
import { captureLog } from '../helpers/log-capture.js';
import { findTool } from '../helpers/tools.js';
import { alpnChoice, get, get2, htpasswd, type Served, serve, writeFile } from './harness.js';

let dir: string;
let pki: Pki;
let other: Pki;
let client: KeyPair;
let stranger: KeyPair;
let ca: Buffer;
let hash: string;
const running: Served[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-'));
  pki = makePki(dir);
  other = makePki(dir, 'other-ca');
  pki.issue('server');
  client = pki.issue('prometheus', { client: true, sans: ['DNS:prometheus', 'URI:spiffe://mon/prometheus'] });
  stranger = other.issue('stranger', { client: true });
  ca = readFileSync(pki.ca.cert);
  hash = htpasswd('alice', 'correct horse');
});

afterEach(async () => {
  for (const s of running.splice(0)) await s.web.close(100);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function start(
  name: string,
  yaml: string,
  openPaths: string[] = [],
  log = silentLogger,
): Promise<Served> {
  const s = await serve(writeFile(dir, name, yaml), log, openPaths);
  running.push(s);
  return s;
}

const tlsBlock = () => `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n`;
const refused = (p: Promise<unknown>) =>
  expect(p).rejects.toThrow(/ECONNRESET|socket hang up|alert|certificate/i);

describe('basic auth over HTTPS', () => {
  it('a $2y$ hash from htpasswd lets its user in; a wrong password, an unknown user or none get the same 401', async () => {
    expect(hash.startsWith('$2y$10$')).toBe(true);
    const s = await start('auth.yml', `${tlsBlock()}basic_auth_users:\n  alice: ${hash}\n`);
    const ok = await get(s.url, '/metrics', { ca, user: 'alice', password: 'correct horse' });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('cdn_edge_requests_total');
    const answers = await Promise.all([
      get(s.url, '/metrics', { ca, user: 'alice', password: 'wrong' }),
      get(s.url, '/metrics', { ca, user: 'mallory', password: 'correct horse' }),
      get(s.url, '/metrics', { ca }),
    ]);
    for (const a of answers) {
      expect(a.status).toBe(401);
      expect(a.headers['www-authenticate']).toBe('Basic');
      expect(a.body).toBe(answers[0]!.body);
    }
    for (const path of ['/', '/readyz', '/healthz']) {
      expect((await get(s.url, path, { ca })).status, path).toBe(401);
      expect((await get(s.url, path, { ca, user: 'alice', password: 'correct horse' })).status, path).toBe(
        200,
      );
    }
  });

  it('bcrypt runs once per distinct credential, then the verdict is cached', async () => {
    const s = await start('cache.yml', `${tlsBlock()}basic_auth_users:\n  alice: ${hash}\n`);
    for (let i = 0; i < 4; i++) {
      expect((await get(s.url, '/metrics', { ca, user: 'alice', password: 'correct horse' })).status).toBe(
        200,
      );
      expect((await get(s.url, '/metrics', { ca, user: 'alice', password: 'nope' })).status).toBe(401);
    }
    expect(s.cache.bcryptRuns).toBe(2);
  });

  it('/healthz answers without credentials only when the flag opens it', async () => {
    const s = await start('open.yml', `${tlsBlock()}basic_auth_users:\n  alice: ${hash}\n`, ['/healthz']);
    expect((await get(s.url, '/healthz', { ca })).status).toBe(200);
    expect((await get(s.url, '/metrics', { ca })).status).toBe(401);
    expect((await get(s.url, '/readyz', { ca })).status).toBe(401);
  });

  it('basic auth works without TLS too (plain HTTP), as in the toolkit', async () => {
    const s = await start('plain.yml', `basic_auth_users:\n  alice: ${hash}\n`);
    expect(s.web.scheme).toBe('http');
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(401);
    const auth = `Basic ${Buffer.from('alice:correct horse').toString('base64')}`;
    expect((await fetch(`${s.url}/metrics`, { headers: { authorization: auth } })).status).toBe(200);
  });
});

describe('HTTP/2 and headers', () => {
  it('http2 (the default) answers HTTP/2 and HTTP/1.1, with the configured headers and auth on both', async () => {
    const s = await start(
      'h2.yml',
      `${tlsBlock()}http_server_config:\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=31536000\nbasic_auth_users:\n  alice: ${hash}\n`,
    );
    const h2 = await get2(s.url, '/metrics', { ca, user: 'alice', password: 'correct horse' });
    expect(h2.alpn).toBe('h2');
    expect(h2.status).toBe(200);
    expect(h2.body).toContain('cdn_edge_requests_total');
    expect(h2.headers['x-frame-options']).toBe('deny');
    expect((await get2(s.url, '/metrics', { ca })).status).toBe(401);
    expect((await get2(s.url, '/nope', { ca, user: 'alice', password: 'correct horse' })).status).toBe(404);
    expect(await alpnChoice(s.url, ca)).toBe('h2');
    const h1 = await get(s.url, '/metrics', { ca, user: 'alice', password: 'correct horse' });
    expect(h1.alpn).toBe('http/1.1');
    expect(h1.status).toBe(200);
    expect(h1.headers['strict-transport-security']).toBe('max-age=31536000');
  });

  it('http2: false offers only HTTP/1.1', async () => {
    const s = await start('noh2.yml', `${tlsBlock()}http_server_config:\n  http2: false\n`);
    expect(await alpnChoice(s.url, ca)).not.toBe('h2');
    const a = await get(s.url, '/healthz', { ca });
    expect(a.status).toBe(200);
  });
});

describe('client certificates (client_auth_type)', () => {
  const cert = () => ({ cert: readFileSync(client.cert), key: readFileSync(client.key) });
  const strangerCert = () => ({ cert: readFileSync(stranger.cert), key: readFileSync(stranger.key) });

  it('RequireAndVerifyClientCert refuses a client without a certificate or with one from another CA', async () => {
    const s = await start(
      'mtls.yml',
      `${tlsBlock()}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n`,
    );
    await refused(get(s.url, '/metrics', { ca }));
    await refused(get(s.url, '/metrics', { ca, ...strangerCert() }));
    const ok = await get(s.url, '/metrics', { ca, ...cert() });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('cdn_edge_requests_total');
  });

  it('RequireAnyClientCert wants a certificate but does not verify it', async () => {
    const s = await start('any.yml', `${tlsBlock()}  client_auth_type: RequireAnyClientCert\n`);
    await refused(get(s.url, '/metrics', { ca }));
    expect((await get(s.url, '/metrics', { ca, ...strangerCert() })).status).toBe(200);
  });

  it('VerifyClientCertIfGiven lets a client without one in, and refuses one that does not verify', async () => {
    const s = await start(
      'ifgiven.yml',
      `${tlsBlock()}  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n`,
    );
    expect((await get(s.url, '/metrics', { ca })).status).toBe(200);
    expect((await get(s.url, '/metrics', { ca, ...cert() })).status).toBe(200);
    await refused(get(s.url, '/metrics', { ca, ...strangerCert() }));
  });

  it('RequestClientCert asks but lets anyone in; NoClientCert does not ask', async () => {
    const s = await start('request.yml', `${tlsBlock()}  client_auth_type: RequestClientCert\n`);
    expect((await get(s.url, '/metrics', { ca })).status).toBe(200);
    expect((await get(s.url, '/metrics', { ca, ...strangerCert() })).status).toBe(200);
    const n = await start('none.yml', `${tlsBlock()}  client_auth_type: NoClientCert\n`);
    expect((await get(n.url, '/metrics', { ca })).status).toBe(200);
  });

  it('client_allowed_sans: a verified certificate must also carry one of the listed SANs', async () => {
    const base = `${tlsBlock()}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n`;
    const good = await start(
      'san-good.yml',
      `${base}  client_allowed_sans: [other, spiffe://mon/prometheus]\n`,
    );
    expect((await get(good.url, '/metrics', { ca, ...cert() })).status).toBe(200);
    const bad = await start('san-bad.yml', `${base}  client_allowed_sans: [grafana]\n`);
    await refused(get(bad.url, '/metrics', { ca, ...cert() }));
  });
});

describe('TLS versions, ciphers and curves', () => {
  it('min_version TLS13 refuses a TLS 1.2 client; the default (TLS12..TLS13) takes both', async () => {
    const s = await start('tls13.yml', `${tlsBlock()}  min_version: TLS13\n`);
    await expect(get(s.url, '/healthz', { ca, maxVersion: 'TLSv1.2' })).rejects.toThrow(/version|alert/i);
    expect((await get(s.url, '/healthz', { ca })).protocol).toBe('TLSv1.3');
    const d = await start('default.yml', tlsBlock());
    expect((await get(d.url, '/healthz', { ca, maxVersion: 'TLSv1.2' })).protocol).toBe('TLSv1.2');
  });

  it('cipher_suites and max_version TLS12 decide what is negotiated', async () => {
    const s = await start(
      'ciphers.yml',
      `${tlsBlock()}  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n`,
    );
    const a = await get(s.url, '/healthz', { ca });
    expect(a.protocol).toBe('TLSv1.2');
    // prefer_server_cipher_suites defaults to true: the server's first choice wins.
    expect(a.cipher).toBe('ECDHE-ECDSA-AES256-GCM-SHA384');
  });

  it('curve_preferences limits the key exchange groups', async () => {
    const s = await start('curves.yml', `${tlsBlock()}  curve_preferences: [CurveP384]\n`);
    expect((await get(s.url, '/healthz', { ca })).status).toBe(200);
  });
});

describe('rate_limit', () => {
  it('a burst of 2 with a long interval lets two requests through, then 429', async () => {
    const s = await start('rate.yml', `${tlsBlock()}rate_limit:\n  interval: 1h\n  burst: 2\n`);
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await get(s.url, '/metrics', { ca })).status);
    expect(codes).toEqual([200, 200, 429]);
  });
});

describe('changes while running', () => {
  it('a replaced certificate is presented by the next handshake, without a restart', async () => {
    const first = pki.issue('live');
    const s = await start('rotate.yml', 'tls_server_config:\n  cert_file: live.crt\n  key_file: live.key\n');
    const before = await get(s.url, '/healthz', { ca });
    const next = pki.issue('next');
    // As a Secret volume does: the new files are renamed into place.
    renameSync(next.key, join(dir, 'live.key'));
    renameSync(next.cert, join(dir, 'live.crt'));
    const after = await get(s.url, '/healthz', { ca });
    expect(after.status).toBe(200);
    expect(after.fingerprint).toBe(next.fingerprint);
    expect(before.fingerprint).toBe(first.fingerprint);
    expect(after.fingerprint).not.toBe(before.fingerprint);
  });

  it('a new user works at once; a broken file keeps the last good one and is logged', async () => {
    const { log, lines } = captureLog();
    const file = 'users.yml';
    const s = await start(file, `${tlsBlock()}basic_auth_users:\n  alice: ${hash}\n`, [], log);
    const bob = htpasswd('bob', 'hunter2');
    writeFile(dir, file, `${tlsBlock()}basic_auth_users:\n  alice: ${hash}\n  bob: ${bob}\n`);
    expect((await get(s.url, '/metrics', { ca, user: 'bob', password: 'hunter2' })).status).toBe(200);
    writeFile(dir, file, `${tlsBlock()}basic_auth_users:\n  alice: not-a-hash\n  bob: ${bob}\n  carol: [\n`);
    expect((await get(s.url, '/metrics', { ca, user: 'bob', password: 'hunter2' })).status).toBe(200);
    expect((await get(s.url, '/metrics', { ca, user: 'alice', password: 'correct horse' })).status).toBe(200);
    const errors = lines.filter((l) => l.includes('cannot be used'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).not.toContain(bob);
    expect(lines.some((l) => l.includes('web config reloaded'))).toBe(true);
  });
});

/**
 * Keys the toolkit added after the one in Debian's promtool (2.42): that promtool reports them as unknown fields.
 * Every other line of every file above must pass its check.
 */
const NEWER_THAN_DEBIAN_PROMTOOL = ['rate_limit', 'client_allowed_sans', 'cert', 'key', 'client_ca'];
/** Written broken on purpose. */
const BROKEN = new Set(['users.yml']);
const promtool = findTool('promtool');

describe.skipIf(!promtool)('promtool check web-config', () => {
  it('accepts every web config file these tests served', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.yml') && !BROKEN.has(f));
    expect(files.length).toBeGreaterThan(15);
    for (const f of files) {
      const run = spawnSync(promtool!, ['check', 'web-config', f], { cwd: dir, encoding: 'utf8' });
      const out = `${run.stdout}${run.stderr}`;
      if (run.status === 0) {
        expect(out, f).toContain('SUCCESS');
        continue;
      }
      const complaints = out.split('\n').filter((l) => /^\s+line \d+:/.test(l));
      expect(complaints.length, `${f}: ${out}`).toBeGreaterThan(0);
      for (const l of complaints) {
        expect(NEWER_THAN_DEBIAN_PROMTOOL, `${f}: ${out}`).toContain(/field (\S+) not found/.exec(l)?.[1]);
      }
    }
  });
});
