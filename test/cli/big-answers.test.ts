/**
 * Big DVR and recordings answers (issue 15): the exporter, run as a user runs it (`cdn-exporter run`), polls an
 * upstream on loopback that answers a 10 MB DVR stream (3 hosts, 100k ranges each) and a 10 MB recordings listing
 * (350 settings with 240 instances each: a listing with `?all` grows with history), every 5 s. /healthz is asked
 * every 20 ms from before the first answer is sent until three of each are applied.
 *
 * What a user checks: /healthz answers every time, and /metrics shows what the answers say. How long /healthz
 * waits (the target: never 100 ms) is wall time, which a loaded machine stretches whatever the exporter
 * does: `npm run bench` measures it ("exporter process: big DVR and recordings answers"), this test does not.
 */
import { writeFileSync } from 'node:fs';
import { Agent, createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { cliTestFolder, servingUrl, startCli } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { probeHealth } from '../helpers/health-probe.js';
import { waitFor } from '../helpers/stack.js';

const HOSTS = 3;
const RANGES = 100_000;
const SETTINGS = 350;
const RECORDS = 240;
const NOW_S = Math.floor(Date.now() / 1000);
/** Ranges of 15 s every 20 s, the last one ending an hour before the test starts. */
const FIRST = NOW_S - 3600 - 20 * RANGES;

function dvrBody(): Buffer {
  const ranges = Array.from({ length: RANGES }, (_, i) => `{"from":${FIRST + 20 * i},"duration":15}`).join(
    ',',
  );
  const data = Array.from(
    { length: HOSTS },
    (_, h) =>
      `{"stream_name":"live/main","host":"edge-${h}.cdn.example","is_alive":true,` +
      `"dvr":{"enabled":true,"window":86400,"duration":${15 * RANGES},"from":${FIRST},"ranges":[${ranges}]}}`,
  );
  return Buffer.from(`{"status":"Completed","stream_name":"live/main","data":[${data.join(',')}]}`);
}

/** Instance `i` of every setting starts `i` hours after 2026-01-01T00:00Z and lasts 30 minutes. */
function startOf(i: number): string {
  return new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString().replace('.000Z', 'Z');
}

function recordingsBody(): Buffer {
  const settings: unknown[] = [];
  for (let s = 0; s < SETTINGS; s++) {
    const records = Array.from({ length: RECORDS }, (_, i) => ({
      start: startOf(i),
      stop: startOf(i).replace(':00:00Z', ':30:00Z'),
      init_path: `/records/rec-${s}/${i}/init.mp4`,
      status: 'finish',
    }));
    settings.push({
      id: `rec-${s}`,
      resource_id: String(1000 + s),
      account_name: 'acme',
      source_domain: 'live.example',
      source_path: `/live/channel-${s}/playlist.m3u8`,
      stream_type: 'long',
      launch_type: 'stream_start',
      stop_timeout: 1800,
      storage_time: 7,
      dvr_enabled: true,
      dvr_window: 3600,
      smil: false,
      qualities: { [`https://live.example/channel-${s}/720.m3u8`]: '720p' },
      records,
      path: `/records/rec-${s}/playlist.m3u8`,
    });
  }
  return Buffer.from(JSON.stringify(settings));
}

let server: Server;
let base: string;
const dir = cliTestFolder('cli-big-answers-');
/** Requests that arrived, and answers sent (Date.now() of each, the clock of the exporter's timestamps). */
const asked = { dvr: 0, recordings: 0 };
const served: { dvr: number[]; recordings: number[] } = { dvr: [], recordings: [] };
let dvr: Buffer;
let recordings: Buffer;
/** The DVR and recordings answers are held until the test probes (the first polls are the ones that create series). */
let release: () => void = () => undefined;
const released = new Promise<void>((resolve) => {
  release = resolve;
});

beforeAll(async () => {
  dvr = dvrBody();
  recordings = recordingsBody();
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (body: Buffer | string) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    if (url.pathname === '/app/dvr-net/v1/acme/streams/live/main') {
      asked.dvr++;
      void released.then(() => {
        served.dvr.push(Date.now());
        send(dvr);
      });
    } else if (url.pathname === '/app/recorder-cloud/v1/acme/record') {
      asked.recordings++;
      void released.then(() => {
        served.recordings.push(Date.now());
        send(recordings);
      });
    } else if (url.pathname === '/app/metrics/v1/resources') {
      send(JSON.stringify({ account: 'acme', metrics: [], data: [] }));
    } else res.writeHead(404, { 'content-type': 'application/json' }).end('{"description":"Not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const agent = new Agent({ keepAlive: true, maxSockets: 2 });

/** GET over a kept-alive connection: status and text. */
function getText(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`${url}: no answer in 30 s`)));
  });
}

describe('big DVR and recordings answers', () => {
  it('10 MB each, polled every 5 s: /healthz answers throughout, and /metrics shows what they say', async () => {
    expect(dvr.length).toBeGreaterThan(10_000_000);
    expect(recordings.length).toBeGreaterThan(10_000_000);
    const file = join(dir, 'config.yml');
    writeFileSync(
      file,
      stringify({
        api: { base_url: base, token: 't' },
        metrics: { window: '1m', delay: 0, lookback: '1m' },
        dvr: { interval: '5s' },
        recordings: { interval: '5s' },
        accounts: [{ name: 'acme', dvr_streams: ['live/main'], recordings: true }],
      }),
    );
    const p = startCli([
      'run',
      '--config',
      file,
      '--web.listen-address',
      '127.0.0.1:0',
      '--log.level',
      'info',
    ]);
    const exporter = await servingUrl(p, 20_000);

    const health = probeHealth(exporter, async (url) => (await getText(url)).status, 100_000);
    let scrape = Scrape.of('');
    const scrapeOnce = async () => {
      const r = await getText(`${exporter}/metrics`);
      expect(r.status).toBe(200);
      scrape = Scrape.of(r.text);
    };
    // The answers go once the prober has had an answer and both polls are waiting for theirs.
    await waitFor(
      () => health.probes > 0 && asked.dvr > 0 && asked.recordings > 0,
      30_000,
      'probes and both polls',
    );
    release();
    // Through the first polls (which create the series) and two more of each answer, until the third of each is
    // applied: the exporter's last success of the API is past the moment it was sent.
    const applied = (api: string, sent: number[]) =>
      sent[2] !== undefined &&
      1000 * (scrape.value('cdn_exporter_last_success_timestamp_seconds', { api, account: 'acme' }) ?? 0) >=
        sent[2];
    await waitFor(
      async () => {
        await scrapeOnce();
        return applied('dvr-net', served.dvr) && applied('recorder-cloud', served.recordings);
      },
      120_000,
      'three polls of each API applied',
    );
    await health.stop();

    expect(health.failed).toBe(0);
    expect(health.probes).toBeGreaterThan(0);

    // What the answers say, as a user reads it on /metrics.
    const one = (name: string, labels: Record<string, string>) => scrape.value(name, labels);
    expect(one('cdn_up', { api: 'dvr-net', account: 'acme' })).toBe(1);
    expect(one('cdn_up', { api: 'recorder-cloud', account: 'acme' })).toBe(1);
    expect(scrape.all('cdn_exporter_parse_errors_total').filter((s) => s.value > 0)).toEqual([]);
    for (let h = 0; h < HOSTS; h++) {
      const host = { account: 'acme', stream: 'live/main', host: `edge-${h}.cdn.example` };
      expect(one('cdn_dvr_ranges', host)).toBe(RANGES);
      expect(one('cdn_dvr_recorded_seconds', host)).toBe(15 * RANGES);
      expect(one('cdn_dvr_first_timestamp_seconds', host)).toBe(FIRST);
      expect(one('cdn_dvr_last_timestamp_seconds', host)).toBe(FIRST + 20 * (RANGES - 1) + 15);
      expect(one('cdn_dvr_largest_gap_seconds', host)).toBe(5);
      expect(one('cdn_dvr_window_seconds', host)).toBe(86400);
    }
    expect(scrape.all('cdn_recording_info', { account: 'acme' })).toHaveLength(SETTINGS);
    for (const s of [0, 177, SETTINGS - 1]) {
      const id = { account: 'acme', id: `rec-${s}` };
      expect(scrape.all('cdn_recording_info', id).map((x) => x.labels.source_path)).toEqual([
        `/live/channel-${s}/playlist.m3u8`,
      ]);
      expect(one('cdn_recording_instances', id)).toBe(RECORDS);
      expect(one('cdn_recording_status', { ...id, status: 'finish' })).toBe(1);
      expect(one('cdn_recording_last_start_timestamp_seconds', id)).toBe(
        Date.parse(startOf(RECORDS - 1)) / 1000,
      );
      expect(one('cdn_recording_storage_seconds', id)).toBe(7 * 86_400);
    }
  }, 150_000);
});
