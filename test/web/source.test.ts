/**
 * The reloader on its own: what needs a restart is refused at reload (and logged), a file that names new files
 * starts watching them, a deleted file keeps the last good config, and TLS 1.0 asks OpenSSL for security level 0
 * with a warning.
 */
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebConfigSource } from '../../src/web/source.js';
import { makePki, type Pki } from '../helpers/certs.js';
import { captureLog } from '../helpers/log-capture.js';
import { htpasswd, writeFile } from './harness.js';

let dir: string;
let pki: Pki;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-source-'));
  pki = makePki(dir);
  pki.issue('server');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TLS = 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n';

describe('WebConfigSource', () => {
  it('turning TLS off, or changing http2, is not applied without a restart, and says so', () => {
    const { log, lines } = captureLog();
    const file = writeFile(dir, 'switch.yml', TLS);
    const source = new WebConfigSource(file, log);
    writeFile(dir, 'switch.yml', 'http_server_config:\n  http2: true\n');
    expect(source.current().tls).toBeDefined();
    expect(lines.filter((l) => l.includes('needs a restart'))).toHaveLength(1);
    writeFile(dir, 'switch.yml', `${TLS}http_server_config:\n  http2: false\n`);
    const state = source.current();
    expect(state.config.http2).toBe(true);
    expect(lines.some((l) => l.includes('takes effect at the next restart'))).toBe(true);
  });

  it('a file that now names another certificate is watched there; a deleted file keeps the last good one', () => {
    const { log, lines } = captureLog();
    const file = writeFile(dir, 'moving.yml', TLS);
    const source = new WebConfigSource(file, log);
    const other = pki.issue('other');
    writeFile(dir, 'moving.yml', 'tls_server_config:\n  cert_file: other.crt\n  key_file: other.key\n');
    expect(source.current().config.tls?.certFile).toBe(other.cert);
    const v = source.current().version;
    // Replacing other.crt/other.key (not server.*) is what changes the config now.
    pki.issue('other');
    expect(source.current().version).toBe(v + 1);
    unlinkSync(file);
    expect(source.current().config.tls?.certFile).toBe(other.cert);
    expect(lines.filter((l) => l.includes('cannot be used'))).toHaveLength(1);
  });

  it('reads nothing again while nothing changed', () => {
    let reads = 0;
    const file = writeFile(dir, 'still.yml', `${TLS}basic_auth_users:\n  alice: ${htpasswd('alice', 'x')}\n`);
    const source = new WebConfigSource(file, captureLog().log, {
      readFile: (p) => {
        reads++;
        return readFileSync(p);
      },
    });
    const after = reads;
    for (let i = 0; i < 10; i++) source.current();
    expect(reads).toBe(after);
  });

  it('min_version TLS10 asks OpenSSL for security level 0, with a warning', () => {
    const { log, lines } = captureLog();
    const file = writeFile(dir, 'legacy.yml', `${TLS}  min_version: TLS10\n`);
    const state = new WebConfigSource(file, log).current();
    expect(state.tls?.context.minVersion).toBe('TLSv1');
    expect(state.tls?.context.ciphers).toMatch(/:@SECLEVEL=0$/);
    expect(lines.some((l) => l.includes('security level 0'))).toBe(true);
  });
});
