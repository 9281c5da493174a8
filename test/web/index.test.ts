/**
 * The web config's entry point (src/web/index.ts): what `check-config --web.config.file` prints about the file in
 * force (`webConfigReport`): its shape, line by line, never a key, a certificate or a password hash; and the
 * folder's entry points re-exported as the modules define them. (./cli.test.ts runs check-config as a user does.)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as auth from '../../src/web/auth.js';
import * as config from '../../src/web/config.js';
import * as web from '../../src/web/index.js';
import * as server from '../../src/web/server.js';
import * as source from '../../src/web/source.js';
import { makePki } from '../helpers/certs.js';
import { captureLog } from '../helpers/log-capture.js';
import { htpasswd, writeFile } from './harness.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-index-'));
  const pki = makePki(dir);
  pki.issue('server');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function report(name: string, text: string): string {
  const file = writeFile(dir, name, text);
  return web.webConfigReport(new web.WebConfigSource(file, captureLog().log));
}

describe('webConfigReport', () => {
  it('plain HTTP: says TLS is off, names the users, the headers and the rate limit, never a hash', () => {
    const hash = htpasswd('alice', 'correct horse');
    const file = join(dir, 'plain.yml');
    const text = report(
      'plain.yml',
      `basic_auth_users:\n  alice: ${hash}\n  bob: ${htpasswd('bob', 'hunter2')}\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\nrate_limit:\n  interval: 250ms\n  burst: 5\n`,
    );
    expect(text).toBe(
      [
        `# web config ${file}: valid`,
        '#   tls: off (plain HTTP)',
        '#   basic_auth_users: alice, bob',
        '#   headers: X-Frame-Options, X-Content-Type-Options',
        '#   rate_limit: 1 request per 250 ms, burst 5',
        '',
      ].join('\n'),
    );
    expect(text).not.toContain('$2y$');
  });

  it('TLS from files: the certificate file, client_auth_type with its CA, the versions and http2; no basic auth', () => {
    const file = join(dir, 'mtls.yml');
    const text = report(
      'mtls.yml',
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\nhttp_server_config:\n  http2: false\n',
    );
    expect(text).toBe(
      [
        `# web config ${file}: valid`,
        `#   tls: ${join(dir, 'server.crt')}; client_auth_type RequireAndVerifyClientCert (CA: ${join(dir, 'ca.crt')}); TLS13..TLS13; http2 off`,
        '#   basic_auth_users: none (no basic auth)',
        '',
      ].join('\n'),
    );
  });

  it('TLS inline: says inline instead of a path and never prints the PEM; without a client CA, the system roots', () => {
    const cert = readFileSync(join(dir, 'server.crt'), 'utf8');
    const key = readFileSync(join(dir, 'server.key'), 'utf8');
    const indent = (pem: string) => pem.trimEnd().replace(/^/gm, '    ');
    const text = report(
      'inline.yml',
      `tls_server_config:\n  cert: |\n${indent(cert)}\n  key: |\n${indent(key)}\n  client_auth_type: RequestClientCert\n`,
    );
    expect(text.split('\n')[1]).toBe(
      '#   tls: inline cert; client_auth_type RequestClientCert (CA: system roots); TLS12..TLS13; http2 on',
    );
    expect(text).not.toContain('BEGIN');
    const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
    const withCa = report(
      'inline-ca.yml',
      `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca: |\n${indent(ca)}\n`,
    );
    expect(withCa).toContain('client_auth_type VerifyClientCertIfGiven (CA: inline client_ca)');
    expect(withCa).not.toContain('BEGIN');
  });
});

describe('the entry points', () => {
  it("are the modules' own, so an importer of src/web/index.ts gets what the modules define", () => {
    expect(web.startWebServer).toBe(server.startWebServer);
    expect(web.parseWebConfig).toBe(config.parseWebConfig);
    expect(web.WebConfigError).toBe(config.WebConfigError);
    expect(web.WebConfigSource).toBe(source.WebConfigSource);
    expect(web.loadWebConfig).toBe(source.loadWebConfig);
    expect(web.guard).toBe(auth.guard);
    expect(web.AuthCache).toBe(auth.AuthCache);
    expect(web.basicCredentials).toBe(auth.basicCredentials);
    expect(web.verdictFileBeside).toBe(auth.verdictFileBeside);
  });
});
