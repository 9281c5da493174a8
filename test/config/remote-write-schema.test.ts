import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import {
  type Config,
  ConfigError,
  checkConfigReport,
  formatIssue,
  loadConfig,
} from '../../src/config/index.js';

const HOST = 'exporter-host-7';

function load(remoteWrite: unknown, hostname = HOST): Config {
  const text = stringify({
    api: { base_url: 'https://api.cdn.example', token_file: '/run/secrets/cdn' },
    accounts: [{ name: 'acme' }],
    // The settled series continue across restarts from it: remote_write needs it (crossCheck).
    state_file: '/var/lib/cdn-exporter/state.json',
    ...(remoteWrite === undefined ? {} : { remote_write: remoteWrite }),
  });
  return loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text, hostname });
}

function problems(remoteWrite: unknown): string[] {
  try {
    load(remoteWrite);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map(formatIssue);
  }
  throw new Error('expected the configuration to be refused');
}

const URL = 'https://mimir.example/api/v1/push';

describe('remote_write configuration', () => {
  it('is absent unless configured; a section left empty is absent too', () => {
    expect(load(undefined).remoteWrite).toBeUndefined();
    expect(load(null).remoteWrite).toBeUndefined();
  });

  it('fills every default; instance is the host name the entry point passed', () => {
    expect(load({ url: URL }).remoteWrite).toEqual({
      url: URL,
      job: 'cdn-exporter-settled',
      instance: HOST,
      externalLabels: {},
      headers: {},
      tls: { insecureSkipVerify: false },
      timeoutMs: 30_000,
      queue: { maxPendingSamples: 2_000_000, maxSamplesPerSend: 5000 },
    });
    expect(load({ url: URL, instance: '' }).remoteWrite!.instance).toBe(HOST);
    expect(load({ url: URL, instance: 'pod-0' }).remoteWrite!.instance).toBe('pod-0');
  });

  it('reads every key', () => {
    const rw = load({
      url: 'http://127.0.0.1:9090/api/v1/write',
      job: 'settled',
      external_labels: { region: 'eu', cluster: 'c1' },
      headers: { 'X-Scope-OrgID': 'tenant-1' },
      basic_auth: { username: 'pusher', password_file: '/run/secrets/rw-password' },
      tls: {
        ca_file: '/etc/ca.crt',
        cert_file: '/etc/client.crt',
        key_file: '/etc/client.key',
        server_name: 'mimir.internal',
        insecure_skip_verify: true,
      },
      timeout: '10s',
      queue: { max_pending_samples: 100_000, max_samples_per_send: 2000 },
    }).remoteWrite;
    expect(rw).toEqual({
      url: 'http://127.0.0.1:9090/api/v1/write',
      job: 'settled',
      instance: HOST,
      externalLabels: { region: 'eu', cluster: 'c1' },
      headers: { 'X-Scope-OrgID': 'tenant-1' },
      basicAuth: { username: 'pusher', passwordFile: '/run/secrets/rw-password' },
      tls: {
        caFile: '/etc/ca.crt',
        certFile: '/etc/client.crt',
        keyFile: '/etc/client.key',
        serverName: 'mimir.internal',
        insecureSkipVerify: true,
      },
      timeoutMs: 10_000,
      queue: { maxPendingSamples: 100_000, maxSamplesPerSend: 2000 },
    });
    expect(load({ url: URL, bearer_token_file: '/run/secrets/rw' }).remoteWrite!.bearerTokenFile).toBe(
      '/run/secrets/rw',
    );
  });

  it('refuses unknown keys, naming them, at every level', () => {
    expect(problems({ url: URL, bearer_token: 'x', queue: { capacity: 10 }, tls: { ca: 'x' } })).toEqual([
      'remote_write.tls.ca: unknown key',
      'remote_write.queue.capacity: unknown key',
      'remote_write.bearer_token: unknown key',
    ]);
    expect(problems({})).toEqual(['remote_write.url: required']);
  });

  it('takes an http(s) URL only, without credentials, and never echoes it', () => {
    expect(problems({ url: 'ftp://mimir.example/push' })).toEqual([
      'remote_write.url: must be an http:// or https:// URL',
    ]);
    const withUser = problems({ url: 'https://pusher:s3cret-pw@mimir.example/api/v1/push' });
    expect(withUser).toEqual(['remote_write.url: must not carry a user or password: use basic_auth']);
    expect(withUser.join()).not.toContain('s3cret');
  });

  it('takes external labels with Prometheus label names, none of job, instance, __name__ or __*, not empty', () => {
    expect(
      problems({
        url: URL,
        external_labels: {
          '1x': 'a',
          'a-b': 'a',
          job: 'a',
          instance: 'a',
          __name__: 'a',
          __tenant: 'a',
          resource: 'a',
          ok: '',
        },
      }),
    ).toEqual([
      'remote_write.external_labels.1x: must be a Prometheus label name (letters, digits and _, not starting with a digit)',
      'remote_write.external_labels.a-b: must be a Prometheus label name (letters, digits and _, not starting with a digit)',
      'remote_write.external_labels.job: is set by the exporter (remote_write.job)',
      'remote_write.external_labels.instance: is set by the exporter (remote_write.instance)',
      'remote_write.external_labels.__name__: is set by the exporter',
      'remote_write.external_labels.__tenant: names starting with __ are reserved',
      'remote_write.external_labels.resource: is a label of the traffic series themselves',
      'remote_write.external_labels.ok: must not be empty (an empty value is no label)',
    ]);
    expect(problems({ url: URL, job: '' })).toEqual(['remote_write.job: must not be empty']);
  });

  it('refuses headers the client sets itself, and names that are not header names', () => {
    expect(
      problems({
        url: URL,
        headers: { Authorization: 'Bearer x', 'Content-Type': 'text/plain', 'bad header': 'x', 'X-Ok': 'y' },
      }),
    ).toEqual([
      'remote_write.headers.Authorization: is set by the client: use bearer_token_file or basic_auth',
      'remote_write.headers.Content-Type: is set by the remote-write client',
      'remote_write.headers.bad header: must be an HTTP header name',
    ]);
  });

  it('takes one credential: bearer_token_file or basic_auth with exactly one of password and password_file', () => {
    expect(
      problems({ url: URL, bearer_token_file: '/a', basic_auth: { username: 'u', password: 'pw-123456' } }),
    ).toEqual(['remote_write.basic_auth: bearer_token_file and basic_auth exclude each other: choose one']);
    expect(problems({ url: URL, basic_auth: { username: 'u' } })).toEqual([
      'remote_write.basic_auth: needs exactly one of password and password_file',
    ]);
    expect(problems({ url: URL, basic_auth: { username: 'u', password: 'p', password_file: '/f' } })).toEqual(
      ['remote_write.basic_auth: needs exactly one of password and password_file'],
    );
    // A password written as a YAML number is a secret all the same: not echoed.
    const numeric = problems({ url: URL, basic_auth: { username: 'u', password: 987654321 } });
    expect(numeric).toEqual(['remote_write.basic_auth.password: must be a string, got a number']);
  });

  it('takes cert_file and key_file together only', () => {
    expect(problems({ url: URL, tls: { cert_file: '/c' } })).toEqual([
      'remote_write.tls.key_file: cert_file and key_file go together (a client certificate and its key)',
    ]);
    expect(problems({ url: URL, tls: { key_file: '/k' } })).toEqual([
      'remote_write.tls.cert_file: cert_file and key_file go together (a client certificate and its key)',
    ]);
  });

  it('bounds timeout and the queue at their ceilings, the edges included', () => {
    expect(load({ url: URL, timeout: '10m' }).remoteWrite!.timeoutMs).toBe(600_000);
    expect(problems({ url: URL, timeout: '10m1s' })).toEqual([
      'remote_write.timeout: must be between 1ms and 10m, got 10m1s',
    ]);
    expect(problems({ url: URL, timeout: '0s' })).toEqual([
      'remote_write.timeout: must be between 1ms and 10m, got 0s',
    ]);
    const top = { max_pending_samples: 50_000_000, max_samples_per_send: 1_000_000 };
    expect(load({ url: URL, queue: top }).remoteWrite!.queue).toEqual({
      maxPendingSamples: 50_000_000,
      maxSamplesPerSend: 1_000_000,
    });
    expect(
      problems({ url: URL, queue: { max_pending_samples: 50_000_001, max_samples_per_send: 1_000_001 } }),
    ).toEqual([
      'remote_write.queue.max_pending_samples: must be at most 50000000, got 50000001',
      'remote_write.queue.max_samples_per_send: must be at most 1000000, got 1000001',
    ]);
    expect(problems({ url: URL, queue: { max_pending_samples: 0 } })).toEqual([
      'remote_write.queue.max_pending_samples: must be at least 1, got 0',
    ]);
    expect(problems({ url: URL, queue: { max_pending_samples: 100, max_samples_per_send: 101 } })).toEqual([
      'remote_write.queue.max_samples_per_send: must not be more than queue.max_pending_samples (100)',
    ]);
  });

  it('check-config prints the section with the inline password redacted, and the output loads back', () => {
    // (Not a word of the output: every 8-character stretch of an inline secret is masked wherever it appears.)
    const password = 'Zq8-hunter2-k9Lm';
    const config = load({
      url: URL,
      external_labels: { region: 'eu' },
      headers: { 'X-Scope-OrgID': 'tenant-1' },
      basic_auth: { username: 'pusher', password },
      tls: { ca_file: '/etc/ca.crt' },
    });
    const report = checkConfigReport(config);
    expect(report).not.toContain(password);
    const printed = parse(report) as { remote_write: Record<string, unknown> };
    expect(printed.remote_write).toEqual({
      url: URL,
      job: 'cdn-exporter-settled',
      instance: HOST,
      external_labels: { region: 'eu' },
      headers: { 'X-Scope-OrgID': 'tenant-1' },
      basic_auth: { username: 'pusher', password: '<redacted>' },
      tls: { ca_file: '/etc/ca.crt', insecure_skip_verify: false },
      timeout: '30s',
      queue: { max_pending_samples: 2_000_000, max_samples_per_send: 5000 },
    });
    // With the password in a file, the printed configuration is the same Config again (on another host too).
    const byFile = load({ url: URL, basic_auth: { username: 'pusher', password_file: '/run/secrets/rw' } });
    const again = loadConfig({
      file: 'printed.yaml',
      env: {},
      readFile: () => checkConfigReport(byFile),
      hostname: 'another-host',
    });
    expect(again.remoteWrite).toEqual(byFile.remoteWrite);
  });
});
