/**
 * Debian's Prometheus scrapes the exporter over HTTPS with `tls_config.ca_file` and `basic_auth`, as a user would
 * configure it: the series arrive; a second job with a wrong password gets 401 and `up 0`. With mutual TLS, its
 * client certificate gets it in and a job without one is down. Then the certificate is replaced while the scrapes
 * go on: new handshakes present the new certificate and no scrape fails.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { makePki, type Pki } from '../helpers/certs.js';
import { settle } from '../helpers/fake-clock.js';
import { type Prometheus, type PromTarget, startPrometheus } from '../helpers/prometheus.js';
import { findTool } from '../helpers/tools.js';
import { get, htpasswd, type Served, serve, writeFile } from './harness.js';

const prometheus = findTool('prometheus');
const promtool = findTool('promtool');

describe.skipIf(!prometheus)('Prometheus scrapes over HTTPS with basic auth', () => {
  let dir: string;
  let pki: Pki;
  let served: Served;
  let mtls: Served;
  let prom: Prometheus;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cdn-web-prom-'));
    pki = makePki(dir);
    pki.issue('server');
    const file = writeFile(
      dir,
      'web.yml',
      `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: ${htpasswd('prometheus', 's3cret pass')}\n`,
    );
    served = await serve(file, silentLogger);
    // A second exporter that wants client certificates signed by the CA (mutual TLS), and Prometheus' own.
    const client = pki.issue('prometheus-client', { client: true });
    const mtlsFile = writeFile(
      dir,
      'mtls.yml',
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n',
    );
    mtls = await serve(mtlsFile, silentLogger);
    const tls = { ca_file: pki.ca.cert, server_name: 'localhost' };
    prom = await startPrometheus({
      bin: prometheus!,
      target: `127.0.0.1:${served.port}`,
      job: 'cdn-exporter',
      // The scrape timeout is the interval: 1 s failed a scrape on a loaded machine (a timeout, not the TLS this
      // checks); 3 s does not.
      interval: '3s',
      ruleFiles: [],
      scrape: {
        scheme: 'https',
        tls_config: tls,
        basic_auth: { username: 'prometheus', password: 's3cret pass' },
      },
      extraJobs: [
        {
          job: 'cdn-exporter-wrong-password',
          target: `127.0.0.1:${served.port}`,
          scrape: {
            scheme: 'https',
            tls_config: tls,
            basic_auth: { username: 'prometheus', password: 'guess' },
          },
        },
        {
          job: 'cdn-exporter-mtls',
          target: `127.0.0.1:${mtls.port}`,
          scrape: { scheme: 'https', tls_config: { ...tls, cert_file: client.cert, key_file: client.key } },
        },
        {
          job: 'cdn-exporter-mtls-no-cert',
          target: `127.0.0.1:${mtls.port}`,
          scrape: { scheme: 'https', tls_config: tls },
        },
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await prom?.stop();
    await served?.web.close(500);
    await mtls?.web.close(500);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Bounded: polls Prometheus' API up to `tries` times, 250 ms apart. */
  async function until(check: () => Promise<boolean>, tries = 100): Promise<void> {
    for (let i = 0; i < tries; i++) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
      await settle();
    }
  }

  /** The targets once Prometheus has scraped each of the four (health known, up or down). */
  async function scrapedTargets(): Promise<PromTarget[]> {
    await until(async () => {
      const t = await prom.targets();
      return t.length === 4 && t.every((x) => x.health !== 'unknown');
    });
    return prom.targets();
  }

  it('promtool check web-config accepts the file this exporter serves with', () => {
    if (!promtool) return;
    const run = spawnSync(promtool, ['check', 'web-config', 'web.yml'], { cwd: dir, encoding: 'utf8' });
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
  });

  it('the series arrive with the right password; the wrong one gets 401 and up 0', async () => {
    const t = await scrapedTargets();
    const good = t.find((x) => x.labels.job === 'cdn-exporter');
    const bad = t.find((x) => x.labels.job === 'cdn-exporter-wrong-password');
    expect(good?.health, prom.logTail()).toBe('up');
    expect(good?.lastError).toBe('');
    expect(bad?.health).toBe('down');
    expect(bad?.lastError).toContain('401');
    const edge = await prom.query('cdn_edge_requests_total{job="cdn-exporter",resource="101"}');
    expect(edge.result.map((r) => r.value[1])).toEqual(['1234']);
    expect((await prom.query('up{job="cdn-exporter-wrong-password"}')).result[0]?.value[1]).toBe('0');
    expect(await prom.query('cdn_edge_requests_total{job="cdn-exporter-wrong-password"}')).toMatchObject({
      result: [],
    });
  });

  it('mutual TLS: Prometheus with a client certificate from the CA is up; without one it is down', async () => {
    const t = await scrapedTargets();
    const withCert = t.find((x) => x.labels.job === 'cdn-exporter-mtls');
    const without = t.find((x) => x.labels.job === 'cdn-exporter-mtls-no-cert');
    expect(withCert?.health, JSON.stringify(t)).toBe('up');
    expect(without?.health).toBe('down');
    expect(without?.lastError).not.toBe('');
    const edge = await prom.query('cdn_edge_requests_total{job="cdn-exporter-mtls",resource="101"}');
    expect(edge.result.map((r) => r.value[1])).toEqual(['1234']);
  });

  it('a certificate replaced while scrapes run: new handshakes get it, no scrape fails', async () => {
    const ca = readFileSync(pki.ca.cert);
    const before = await get(served.url, '/healthz', { ca, user: 'prometheus', password: 's3cret pass' });
    const scrapesBefore = await prom.scrapes();
    const next = pki.issue('next');
    renameSync(next.key, join(dir, 'server.key'));
    renameSync(next.cert, join(dir, 'server.crt'));
    const after = await get(served.url, '/healthz', { ca, user: 'prometheus', password: 's3cret pass' });
    expect(after.fingerprint).toBe(next.fingerprint);
    expect(after.fingerprint).not.toBe(before.fingerprint);
    // Three more scrapes after the swap, then: every scrape of the job so far was up.
    await until(async () => (await prom.scrapes()) >= scrapesBefore + 3);
    expect(await prom.scrapes()).toBeGreaterThanOrEqual(scrapesBefore + 3);
    const down = await prom.query(
      'count_over_time(up{job="cdn-exporter"}[1h]) - sum_over_time(up{job="cdn-exporter"}[1h])',
    );
    expect(down.result[0]?.value[1], prom.logTail()).toBe('0');
  });
});
