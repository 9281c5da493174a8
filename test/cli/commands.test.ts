/**
 * The commands that answer and exit: --version, --help, bad command lines (exit 2), and check-config (the
 * effective configuration with tokens redacted, exit 0; a bad configuration exits 2 naming the key).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliTestFolder, runCli } from '../helpers/cli-process.js';

const SECRET = 's3cret-Token-7f3a9';
const ACCOUNT_SECRET = 'acct-Secret-51c2e';

const dir = cliTestFolder('cli-commands-');

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('flags', () => {
  it('--version prints the package version and exits 0', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(`cdn-exporter ${pkg.version}`);
  });

  it('--help prints the usage with every command and exits 0', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const word of ['run', 'simulate', 'demo', 'check-config', '--web.listen-address', '--config'])
      expect(r.stdout).toContain(word);
  });

  it('simulate --help lists every simulator flag and exits 0', async () => {
    const r = await runCli(['simulate', '--help']);
    expect(r.code).toBe(0);
    for (const flag of [
      '--port',
      '--seed',
      '--lag',
      '--rate-limit',
      '--request-time-shape',
      '--fault-KIND',
      'malformed',
    ])
      expect(r.stdout).toContain(flag);
  });

  it.each([
    [['--no-such-flag'], '--no-such-flag'],
    [['check-config', '--bogus=1'], '--bogus'],
    [['frobnicate'], 'frobnicate'],
    [['--log.level', 'loud', 'check-config'], '--log.level'],
    [['--web.listen-address', 'nowhere', 'check-config'], '--web.listen-address'],
  ])('%j exits 2 naming %s, with the usage on stderr', async (args, named) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(named);
    expect(r.stderr).toContain('Usage:');
    expect(r.stdout).toBe('');
  });
});

describe('check-config', () => {
  const good = () =>
    file(
      'good.yml',
      [
        'api:',
        '  base_url: https://api.cdn.example',
        `  token: ${SECRET}`,
        '  requests_per_second: 7',
        'metrics:',
        '  window: 2m',
        'accounts:',
        '  - name: acme',
        `    token: ${ACCOUNT_SECRET}`,
        '    dvr_streams: [live/main]',
        '    recordings: true',
        '  - name: other',
        `    token_file: ${join(dir, 'other-token')}`,
        'state_file: /var/lib/cdn-exporter/state.json',
        '',
      ].join('\n'),
    );

  it('prints the effective configuration, tokens redacted, and exits 0', async () => {
    const r = await runCli(['check-config', '--config', good()]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(SECRET);
    expect(r.stdout).not.toContain(ACCOUNT_SECRET);
    expect(r.stderr).not.toContain(SECRET);
    const printed = parse(r.stdout) as Record<string, Record<string, unknown> & unknown[]>;
    expect(printed.api).toMatchObject({
      base_url: 'https://api.cdn.example',
      token: '<redacted>',
      requests_per_second: 7,
    });
    // Defaults are filled in, given values kept.
    expect(printed.metrics).toMatchObject({ window: '2m', breakdown: 'resource' });
    expect(printed.accounts).toEqual([
      { name: 'acme', token: '<redacted>', dvr_streams: ['live/main'], recordings: true },
      { name: 'other', token_file: join(dir, 'other-token'), dvr_streams: [], recordings: false },
    ]);
    expect(printed.state_file).toBe('/var/lib/cdn-exporter/state.json');
  });

  it('prints a configuration that check-config accepts again, unchanged', async () => {
    const first = await runCli(['check-config', '--config', good()]);
    const again = await runCli(['check-config', '--config', file('printed.yml', first.stdout)]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout);
  });

  it('a login from the environment: the username shown, the password <redacted>', async () => {
    const r = await runCli(['check-config'], {
      CDN_API_URL: 'http://127.0.0.1:9',
      CDN_API_USERNAME: 'sre@example.com',
      CDN_API_PASSWORD: SECRET,
      CDN_ACCOUNTS: 'acme',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
    const printed = parse(r.stdout) as { api: Record<string, unknown> };
    expect(printed.api).toMatchObject({ username: 'sre@example.com', password: '<redacted>' });
  });

  it('refuses a token and a login in one place, naming the key and never the password', async () => {
    const bad = file(
      'both.yml',
      `api: {base_url: "https://api.cdn.example", token: ${SECRET}, username: u, password: ${ACCOUNT_SECRET}}\naccounts: [{name: a}]\n`,
    );
    const r = await runCli(['check-config', '--config', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('api.username: a token (api.token) and a login cannot be set in one place');
    expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
    expect(`${r.stdout}${r.stderr}`).not.toContain(ACCOUNT_SECRET);
  });

  it('works from the environment alone (the quick start), token redacted', async () => {
    const r = await runCli(['check-config'], {
      CDN_API_URL: 'http://127.0.0.1:9',
      CDN_API_TOKEN: SECRET,
      CDN_ACCOUNTS: 'acme, other',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(SECRET);
    const printed = parse(r.stdout) as { api: Record<string, unknown>; accounts: Array<{ name: string }> };
    expect(printed.api.base_url).toBe('http://127.0.0.1:9');
    expect(printed.api.token).toBe('<redacted>');
    expect(printed.accounts.map((a) => a.name)).toEqual(['acme', 'other']);
  });

  it('refuses a bad file with exit 2, naming every bad key, and never echoes a token', async () => {
    const bad = file(
      'bad.yml',
      [
        'api:',
        '  base_url: https://api.cdn.example',
        `  token: ${SECRET}`,
        '  timeout: soon',
        'metrics:',
        '  window: 20m',
        'accounts:',
        '  - name: acme',
        '    token: 12345',
        '',
      ].join('\n'),
    );
    const r = await runCli(['check-config', '--config', bad]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('api.timeout');
    expect(r.stderr).toContain('metrics.window');
    expect(r.stderr).toContain('accounts[0].token');
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stderr).not.toContain('12345');
  });

  it('refuses an unknown key with exit 2, naming it', async () => {
    const r = await runCli([
      'check-config',
      '--config',
      file('typo.yml', 'api:\n  base_url: http://x\n  tokn: abc\naccounts: [{name: a}]\n'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('api.tokn');
  });

  it('refuses a missing file and a missing base URL with exit 2', async () => {
    const missing = await runCli(['check-config', '--config', join(dir, 'nope.yml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.yml');
    const noUrl = await runCli(['check-config'], { CDN_API_TOKEN: SECRET, CDN_ACCOUNTS: 'acme' });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('api.base_url');
    expect(noUrl.stderr).not.toContain(SECRET);
  });
});
