/**
 * `--web.config.file` on the built command line: check-config validates the file (exit 2 naming the key when it
 * is bad, its shape without secrets when good), a bad file refuses to start, and the demo served over HTTPS with
 * basic auth, /healthz open only with --web.healthz-open.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makePki } from '../helpers/certs.js';
import { killAll, requireBuild, runCli, startCli } from '../helpers/cli-process.js';
import { waitFor } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';
import { get, htpasswd, writeFile } from './harness.js';

const promtool = findTool('promtool');
let dir: string;
let hash: string;
beforeAll(() => {
  requireBuild();
  dir = mkdtempSync(join(tmpdir(), 'cdn-web-cli-'));
  makePki(dir).issue('server');
  hash = htpasswd('alice', 'pa55word');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killAll);

const TLS = 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n';
const ENV = { CDN_API_URL: 'http://127.0.0.1:9', CDN_API_TOKEN: 'tok-abcdef-123456', CDN_ACCOUNTS: 'acme' };

describe('check-config --web.config.file', () => {
  it('a good file: exit 0, its shape printed, never the hash', async () => {
    const f = writeFile(dir, 'good.yml', `${TLS}basic_auth_users:\n  alice: ${hash}\n`);
    const r = await runCli(['check-config', '--web.config.file', f], ENV);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`# web config ${f}: valid`);
    expect(r.stdout).toContain('basic_auth_users: alice');
    expect(r.stdout).not.toContain(hash);
    if (promtool) {
      const run = spawnSync(promtool, ['check', 'web-config', f], { encoding: 'utf8' });
      expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    }
  });

  it('an unknown key: exit 2 with its path', async () => {
    const f = writeFile(dir, 'typo.yml', 'tls_server_config:\n  cert_filse: server.crt\n');
    const r = await runCli(['check-config', '--web.config.file', f], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('tls_server_config.cert_filse: unknown key');
  });

  it('a certificate file that is not there: exit 2 naming cert_file', async () => {
    const f = writeFile(
      dir,
      'missing.yml',
      'tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n',
    );
    const r = await runCli(['check-config', '--web.config.file', f], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/tls_server_config.cert_file: failed to read .*nope.crt: ENOENT/);
  });

  it('run refuses to start with a bad file, before serving anything', async () => {
    const f = writeFile(dir, 'bad.yml', `${TLS}basic_auth_users:\n  alice: plain-text-password\n`);
    const r = await runCli(['--web.config.file', f, '--web.listen-address', '127.0.0.1:0'], ENV);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('basic_auth_users.alice: not a bcrypt hash');
    expect(r.stderr).not.toContain('plain-text-password');
  });
});

describe('serving with a web config', () => {
  it('the demo over HTTPS: basic auth on everything, /healthz open only with --web.healthz-open', async () => {
    const f = writeFile(dir, 'demo.yml', `${TLS}basic_auth_users:\n  alice: ${hash}\n`);
    const ca = readFileSync(join(dir, 'ca.crt'));
    const p = startCli([
      'demo',
      '--web.config.file',
      f,
      '--web.healthz-open',
      '--web.listen-address',
      '127.0.0.1:0',
    ]);
    const line = await p.logLine((l) => typeof l.address === 'string' && l.tls === true, 20_000);
    expect(String(line.msg)).toMatch(/^serving \/metrics on https:\/\//);
    const url = `https://${String(line.address)}`;
    expect((await get(url, '/healthz', { ca })).status).toBe(200);
    for (const path of ['/metrics', '/', '/readyz'])
      expect((await get(url, path, { ca })).status, path).toBe(401);
    const ok = await get(url, '/metrics', { ca, user: 'alice', password: 'pa55word' });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('cdn_exporter_build_info');
  });

  it('with state_file: a credential accepted is kept beside it, hashed and owner-only, for the next run', async () => {
    const f = writeFile(dir, 'verdicts.yml', `${TLS}basic_auth_users:\n  alice: ${hash}\n`);
    const state = join(dir, 'verdicts-state.json');
    const config = writeFile(
      dir,
      'verdicts-config.yml',
      `api: {base_url: "http://127.0.0.1:9", token: tok-abcdef-123456}\naccounts: [{name: acme}]\nstate_file: ${state}\n`,
    );
    const ca = readFileSync(join(dir, 'ca.crt'));
    const p = startCli([
      'run',
      '--config',
      config,
      '--web.config.file',
      f,
      '--web.listen-address',
      '127.0.0.1:0',
    ]);
    const line = await p.logLine((l) => typeof l.address === 'string' && l.tls === true, 20_000);
    const url = `https://${String(line.address)}`;
    expect((await get(url, '/metrics', { ca, user: 'alice', password: 'pa55word' })).status).toBe(200);
    const file = join(dir, 'verdicts-state.auth-verdicts.json');
    await waitFor(() => existsSync(file), 10_000, 'the verdict file');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('pa55word');
    expect(text).not.toContain('alice');
  });
});
