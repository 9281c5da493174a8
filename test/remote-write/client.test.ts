import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteWriteConfig } from '../../src/config/typed-config.js';
import { createRemoteWriter } from '../../src/remote-write/index.js';
import { makePki, type Pki } from '../helpers/certs.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { type Receiver, startReceiver } from '../helpers/remote-write-receiver.js';
import { rwConfig, series, startWriter, type WriterUnderTest } from '../helpers/remote-writer.js';

const AT = Date.UTC(2026, 0, 1, 11);

let receiver: Receiver | undefined;
let under: WriterUnderTest | undefined;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdn-rw-client-'));
  return () => rmSync(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await under?.writer.close(under.clock.now());
  await receiver?.stop();
  receiver = undefined;
  under = undefined;
});

async function sendOne(
  config: (url: string) => RemoteWriteConfig,
  tls?: Parameters<typeof startReceiver>[0],
) {
  receiver = await startReceiver(tls);
  under = startWriter(config(receiver.url));
  under.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
  return { r: receiver, w: under };
}

describe('remote-write client', () => {
  it('POSTs snappy protobuf with the remote-write 1.0 headers, User-Agent and the configured headers', async () => {
    const { r, w } = await sendOne((url) => rwConfig(url, { headers: { 'X-Scope-OrgID': 'tenant-1' } }));
    await w.until(() => w.outcomes[0] !== undefined);
    const [req] = r.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/api/v1/push');
    expect(req!.headers).toMatchObject({
      'content-encoding': 'snappy',
      'content-type': 'application/x-protobuf',
      'x-prometheus-remote-write-version': '0.1.0',
      'user-agent': 'cdn-exporter/9.8.7',
      'x-scope-orgid': 'tenant-1',
    });
    expect(req!.headers.authorization).toBeUndefined();
    expect(req!.samples).toBe(1);
  });

  it('sends the bearer token of bearer_token_file, and the new one once the file changes', async () => {
    const file = join(dir, 'bearer');
    writeFileSync(file, 'first-bearer-token-0123456789\n');
    const { r, w } = await sendOne((url) => rwConfig(url, { bearerTokenFile: file }));
    await w.until(() => w.outcomes[0] !== undefined);
    writeFileSync(file, 'second-bearer-token-9876543210-longer\n');
    w.offer({ account: 'acme', end: AT + 1, series: series(1, 1, AT + 1) });
    await w.until(() => w.outcomes[1] !== undefined);
    expect(r.requests.map((q) => q.headers.authorization)).toEqual([
      'Bearer first-bearer-token-0123456789',
      'Bearer second-bearer-token-9876543210-longer',
    ]);
  });

  it('sends basic auth with an inline password or a password_file', async () => {
    const file = join(dir, 'password');
    writeFileSync(file, 'file-password-42\n');
    const basic = (url: string) => rwConfig(url, { basicAuth: { username: 'pusher', passwordFile: file } });
    const { r, w } = await sendOne(basic);
    await w.until(() => w.outcomes[0] !== undefined);
    expect(r.requests[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('pusher:file-password-42').toString('base64')}`,
    );
    await w.writer.close(w.clock.now());
    await r.stop();
    const inline = await sendOne((url) =>
      rwConfig(url, { basicAuth: { username: 'pusher', password: 'inline pass word' } }),
    );
    await inline.w.until(() => inline.w.outcomes[0] !== undefined);
    expect(inline.r.requests[0]!.headers.authorization).toBe(
      `Basic ${Buffer.from('pusher:inline pass word').toString('base64')}`,
    );
  });

  it('a missing bearer_token_file sends nothing and is retried, the file named; it goes once the file is there', async () => {
    const file = join(dir, 'later');
    rmSync(file, { force: true });
    const { r, w } = await sendOne((url) => rwConfig(url, { bearerTokenFile: file }));
    await w.until(() => w.sleeps.length >= 2);
    expect(r.requests).toHaveLength(0);
    expect(w.lines.some((l) => l.includes(`remote_write.bearer_token_file ${file}: does not exist`))).toBe(
      true,
    );
    writeFileSync(file, 'late-token-abcdefgh');
    await w.until(() => w.outcomes[0] !== undefined);
    expect(r.requests[0]!.headers.authorization).toBe('Bearer late-token-abcdefgh');
  });

  it('never writes a credential into a log line, even when the receiver echoes it', async () => {
    const file = join(dir, 'echoed');
    const token = 'echoed-secret-token-5f3a9c';
    writeFileSync(file, token);
    receiver = await startReceiver();
    receiver.script(
      { status: 400, body: `bad token Bearer ${token}` },
      { status: 503, body: `retry later, token ${token}` },
    );
    under = startWriter(rwConfig(receiver.url, { bearerTokenFile: file }));
    under.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
    under.offer({ account: 'acme', end: AT + 1, series: series(1, 1, AT + 1) });
    const w = under;
    await w.until(() => w.outcomes[1] !== undefined);
    const refused = w.lines.find((l) => l.includes('refused samples for good'));
    expect(refused).toContain('bad token Bearer <redacted>');
    expect(w.lines.find((l) => l.includes('request failed'))).toContain('<redacted>');
    for (const line of w.lines) expect(line).not.toContain(token.slice(0, 12));
    const password = 'inline-basic-password-77';
    await w.writer.close(w.clock.now());
    await receiver.stop();
    receiver = await startReceiver();
    receiver.script({ status: 403, body: `user pusher password ${password} refused` });
    under = startWriter(rwConfig(receiver.url, { basicAuth: { username: 'pusher', password } }));
    under.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
    const v = under;
    await v.until(() => v.outcomes[0] !== undefined);
    for (const line of v.lines) expect(line).not.toContain(password.slice(0, 10));
    // (The word "password" is masked too: an earlier test's password file holds it.)
    expect(v.lines.find((l) => l.includes('refused samples for good'))).toMatch(
      /403: user pusher .*<redacted>/,
    );
  });

  it('a request with no whole answer within remote_write.timeout is retried', async () => {
    receiver = await startReceiver();
    receiver.script({ hang: true });
    under = startWriter(rwConfig(receiver.url, { timeoutMs: 200 }));
    under.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
    const w = under;
    await w.until(() => w.outcomes[0] !== undefined);
    expect(w.outcomes).toEqual(['sent']);
    expect(receiver.requests).toHaveLength(2);
    expect(w.lines.find((l) => l.includes('request failed'))).toContain('remote_write.timeout');
    expect(await w.metric('cdn_exporter_remote_write_requests_total', 'code="error"')).toBe(1);
  });

  describe('TLS', () => {
    let pki: Pki;
    beforeAll(() => {
      pki = makePki(dir);
      pki.issue('receiver');
      pki.issue('pusher', { client: true });
    });
    const serverTls = (clientCa = false) => ({
      cert: readFileSync(join(dir, 'receiver.crt')),
      key: readFileSync(join(dir, 'receiver.key')),
      ...(clientCa ? { ca: readFileSync(pki.ca.cert) } : {}),
    });

    it('verifies the receiver against ca_file and presents cert_file/key_file', async () => {
      const { r, w } = await sendOne(
        (url) =>
          rwConfig(url, {
            tls: {
              caFile: pki.ca.cert,
              certFile: join(dir, 'pusher.crt'),
              keyFile: join(dir, 'pusher.key'),
              insecureSkipVerify: false,
            },
          }),
        serverTls(true),
      );
      await w.until(() => w.outcomes[0] !== undefined);
      expect(w.outcomes).toEqual(['sent']);
      expect(r.requests[0]!.url).toBe('/api/v1/push');
    });

    it('checks server_name against the certificate', async () => {
      const { w } = await sendOne(
        (url) =>
          rwConfig(url.replace('127.0.0.1', 'localhost'), {
            tls: { caFile: pki.ca.cert, serverName: 'localhost', insecureSkipVerify: false },
          }),
        serverTls(),
      );
      await w.until(() => w.outcomes[0] !== undefined);
      expect(w.outcomes).toEqual(['sent']);
    });

    it('without the CA the receiver is not trusted: retried, the reason logged; insecure_skip_verify sends', async () => {
      const { r, w } = await sendOne((url) => rwConfig(url), serverTls());
      await w.until(() => w.sleeps.length >= 2);
      expect(r.requests).toHaveLength(0);
      expect(w.lines.find((l) => l.includes('request failed'))).toMatch(/certificate/i);
      await w.writer.close(w.clock.now());
      await r.stop();
      const skip = await sendOne((url) => rwConfig(url, { tls: { insecureSkipVerify: true } }), serverTls());
      await skip.w.until(() => skip.w.outcomes[0] !== undefined);
      expect(skip.w.outcomes).toEqual(['sent']);
    });

    it('a TLS file that cannot be read is an error at start, naming the key', () => {
      const config = rwConfig('https://127.0.0.1:9/api/v1/push', {
        tls: { caFile: join(dir, 'missing.crt'), insecureSkipVerify: false },
      });
      const deps = { clock: new FakeClock(), log: captureLog().log, registry: new Registry(), version: '0' };
      expect(() => createRemoteWriter(config, deps)).toThrow(
        /remote_write\.tls\.ca_file .*missing\.crt: ENOENT/,
      );
    });
  });
});
