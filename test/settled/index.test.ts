/**
 * The settled writer as the exporter starts it (src/settled/index.ts), from a configuration read by the real
 * loader: nothing without `remote_write`; with it, series labelled job, instance and the external labels (sorted
 * by name), sent to the receiver (the fake on loopback), the acknowledged state written beside `state_file`
 * (`state.settled.json`) and resumed by the next start; a settled state file that cannot be read refuses the start
 * with the file named (docs/remote-write.md, "Across restarts").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { MINUTE } from '../../src/clock.js';
import { type Config, loadConfig } from '../../src/config/index.js';
import { type Settled, settledLabels, settledSeries, startSettled } from '../../src/settled/index.js';
import type { TrafficResponse } from '../../src/traffic/response.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { perTest } from '../helpers/per-test.js';
import { startReceiver } from '../helpers/remote-write-receiver.js';

const tests = perTest();
const T = Date.UTC(2026, 5, 1, 12, 0);

function config(over: Record<string, unknown> = {}): Config {
  const text = stringify({
    api: { base_url: 'https://api.cdn.example', token: 'secret-token-0123456789' },
    accounts: [{ name: 'acme' }],
    ...over,
  });
  return loadConfig({ file: 'cdn.yaml', env: {}, readFile: () => text, hostname: 'host-1' });
}

const answer = (requests: number): TrafficResponse => ({
  account: 'acme',
  metrics: [],
  records: [
    {
      resource: '42',
      edge: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map(), requests },
      origin: { codes: new Map(), classes: new Map(), requestTimeSeconds: new Map() },
    },
  ],
  issues: [],
  unknownKeys: [],
});

const deps = (clock: FakeClock) => ({
  clock,
  log: captureLog().log,
  registry: new Registry(),
  version: '1.2.3',
  random: () => 0.5,
});

describe('settledLabels and settledSeries', () => {
  it('end every series with job, instance and the external labels by name; none without remote_write', () => {
    const c = config({
      state_file: '/var/lib/cdn/state.json',
      remote_write: { url: 'http://127.0.0.1:9/api/v1/push', external_labels: { zone: 'b', env: 'prod' } },
    });
    expect(settledLabels(c)).toEqual([
      ['job', 'cdn-exporter-settled'],
      ['instance', 'host-1'],
      ['env', 'prod'],
      ['zone', 'b'],
    ]);
    expect(settledLabels(config())).toEqual([]);
  });

  it("keep the scraped side's allow-lists: metrics.resources leaves other resources out", () => {
    const c = config({
      metrics: { resources: ['42'] },
      state_file: '/var/lib/cdn/state.json',
      remote_write: { url: 'http://127.0.0.1:9/api/v1/push', job: 'settled', instance: 'i' },
    });
    const response = answer(5);
    response.records.push({ ...response.records[0]!, resource: '43' });
    const points = settledSeries(c).points('acme', T, T + MINUTE, response);
    const requests = points.filter((p) => p.family === 'cdn_edge_requests_total');
    expect(requests.map((p) => p.labels)).toEqual([
      [
        ['__name__', 'cdn_edge_requests_total'],
        ['account', 'acme'],
        ['resource', '42'],
        ['job', 'settled'],
        ['instance', 'i'],
      ],
    ]);
  });
});

describe('startSettled', () => {
  it('starts nothing without remote_write', async () => {
    const d = deps(new FakeClock(T));
    expect(await startSettled(config(), d)).toBeUndefined();
    expect(d.registry.getMetricsAsArray()).toEqual([]);
  });

  it('refuses to start on a settled state it cannot read, naming the file', async () => {
    const dir = tests.folder('cdn-settled-index-');
    const stateFile = join(dir, 'state.json');
    writeFileSync(join(dir, 'state.settled.json'), '{"version":1,"accounts":{"acme":');
    const c = config({ state_file: stateFile, remote_write: { url: 'http://127.0.0.1:9/api/v1/push' } });
    await expect(startSettled(c, deps(new FakeClock(T)))).rejects.toThrow(
      `settled state ${join(dir, 'state.settled.json')}: not valid JSON`,
    );
  });

  it('sends settled windows with their labels, saves the acknowledged state beside state_file, and resumes there', async () => {
    const receiver = await startReceiver();
    try {
      const dir = tests.folder('cdn-settled-index-');
      const c = config({
        state_file: join(dir, 'state.json'),
        remote_write: { url: receiver.url, instance: 'i', external_labels: { env: 'prod' } },
      });
      const clock = new FakeClock(T + 30 * MINUTE);
      const stopAll = async (s: Settled, stop: AbortController, loop: Promise<void>) => {
        await s.close(clock.now() + 60_000);
        stop.abort();
        await loop;
      };
      const first = (await startSettled(c, deps(clock)))!;
      const stop = new AbortController();
      const loop = first.run(stop.signal);
      const reader = async () => answer(0);
      first.writer.attach('acme', reader, T);
      first.writer.settled('acme', T, T + MINUTE, answer(7));
      await receiver.received(1);
      await stopAll(first, stop, loop);

      const sent = receiver.requests[0]!.series.find((s) =>
        s.labels.some(([k, v]) => k === '__name__' && v === 'cdn_edge_requests_total'),
      );
      expect(Object.fromEntries(sent!.labels)).toEqual({
        __name__: 'cdn_edge_requests_total',
        account: 'acme',
        resource: '42',
        job: 'cdn-exporter-settled',
        instance: 'i',
        env: 'prod',
      });
      expect(sent!.samples).toEqual([
        { value: 0, timestampMs: T + 1 },
        { value: 7, timestampMs: T + MINUTE },
      ]);
      const onDisk = JSON.parse(readFileSync(join(dir, 'state.settled.json'), 'utf8'));
      expect(onDisk.accounts.acme.cursor).toBe(new Date(T + MINUTE).toISOString());

      // The next start resumes at the acknowledged cursor with its totals: the series continue, no zero.
      const second = (await startSettled(c, deps(clock)))!;
      const stop2 = new AbortController();
      const loop2 = second.run(stop2.signal);
      second.writer.attach('acme', reader, T + MINUTE);
      expect(second.writer.cursor('acme')?.acked).toBe(T + MINUTE);
      second.writer.settled('acme', T + MINUTE, T + 2 * MINUTE, answer(3));
      await receiver.received(2);
      await stopAll(second, stop2, loop2);
      const next = receiver.requests[1]!.series.find((s) =>
        s.labels.some(([k, v]) => k === '__name__' && v === 'cdn_edge_requests_total'),
      );
      expect(next!.samples).toEqual([{ value: 10, timestampMs: T + 2 * MINUTE }]);
    } finally {
      await receiver.stop();
    }
  });
});
