/**
 * Settled windows in a real Prometheus 2.42 (`--web.enable-remote-write-receiver`), written by `cdn-exporter run`
 * (the built CLI) from a simulator with late data and faults: the exporter is SIGKILLed mid catch-up and started
 * again, and the receiver is stopped for two minutes (of real time, the exporter's clock) while windows wait for it
 * and new ones settle, then started again on the same data; the exporter's self-metrics show what it saw of the
 * outage (every send failed and kept, nothing sent or dropped, samples pending). Then every counter series the
 * receiver stored is read back raw: between two consecutive samples it grew by exactly the simulator's final truth
 * for those minutes (the first sample a zero just after its series' first window starts), no window is missing
 * between the first and the last, and PromQL's increase() over a window at its end gives the same. Nothing lost,
 * nothing twice, each window at the minutes it happened.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { floorMinute, MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SimAccount } from '../../src/simulator/types.js';
import { cliTestFolder, servingUrl, startCli } from '../helpers/cli-process.js';
import { Scrape } from '../helpers/exposition.js';
import { cursorOf } from '../helpers/ground-truth.js';
import { freePort, type Prometheus, startPrometheus } from '../helpers/prometheus.js';
import { waitFor } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';

const bin = findTool('prometheus');
const dir = cliTestFolder('cdn-remote-write-');

const TOKEN = 'rw-token-32';
const ACCOUNTS = ['north', 'south'];
const JOB = 'cdn-exporter-settled';
const LOOKBACK_MIN = 40;
const DELAY_MIN = 1;
const REVISIT_MIN = 1;
/** How long the receiver is down: issue 32's "stopped for two minutes". */
const OUTAGE_MS = 2 * MINUTE;

function world(): SimAccount[] {
  return ACCOUNTS.map((name, a) => ({
    name,
    token: TOKEN,
    resources: Array.from({ length: 4 }, (_, i) => ({
      id: String(100 * (a + 1) + i),
      name: `r${i}`,
      cname: `r${i}.${name}.example`,
    })),
    streams: [],
    recordings: [],
  }));
}

interface Stored {
  metric: Record<string, string>;
  values: [number, string][];
}

/** Windows the settled writer read from the API itself, all accounts. */
const readsOf = (s: Scrape) =>
  s.all('cdn_exporter_remote_write_reads_total').reduce((n, x) => n + x.value, 0);

async function raw(prom: Prometheus, expr: string): Promise<Stored[]> {
  const res = await fetch(
    `${prom.url}/api/v1/query?${new URLSearchParams({ query: `${expr}[3h]`, time: String(Date.now() / 1000) })}`,
  );
  const body = (await res.json()) as { data: { result: Stored[] } };
  return body.data.result;
}

describe.skipIf(!bin)('settled windows through remote write into a real Prometheus', () => {
  it('stores every window at its own minutes, exact, through a SIGKILL and a receiver outage', async () => {
    const sim: Simulator = await startSimulator(
      { seed: 32, accounts: world(), lagSeconds: 45, faults: { '500': 0.05, '429': 0.03, reset: 0.03 } },
      { host: '127.0.0.1', port: 0 },
    );
    const dataDir = join(dir, 'prometheus-data');
    // The exporter on one port across its restarts, so the same Prometheus also scrapes it (job cdn-exporter):
    // what /metrics shows, beside what was written, for the figures below.
    const exporterPort = await freePort();
    const scraped = { target: `127.0.0.1:${exporterPort}`, job: 'cdn-exporter', interval: '1s' };
    let prom = await startPrometheus({
      bin: bin!,
      ...scraped,
      ruleFiles: [],
      storagePath: dataDir,
      flags: ['--web.enable-remote-write-receiver'],
    });
    const port = Number(new URL(prom.url).port);
    const configFile = join(dir, 'config.yml');
    writeFileSync(
      configFile,
      [
        'api:',
        `  base_url: ${sim.url}`,
        `  token: ${TOKEN}`,
        '  requests_per_second: 8',
        'metrics:',
        '  window: 1m',
        `  delay: ${DELAY_MIN}m`,
        `  revisit: ${REVISIT_MIN}m`,
        `  lookback: ${LOOKBACK_MIN}m`,
        'accounts:',
        ...ACCOUNTS.map((a) => `  - name: ${a}`),
        `state_file: ${join(dir, 'state.json')}`,
        'remote_write:',
        `  url: http://127.0.0.1:${port}/api/v1/write`,
        '  instance: test',
        '  queue: {max_pending_samples: 400, max_samples_per_send: 100}',
        '',
      ].join('\n'),
    );
    const run = () =>
      startCli(['run', '--config', configFile, '--web.listen-address', `127.0.0.1:${exporterPort}`]);
    const settledAt = async (url: string) => {
      const s = await Scrape.from(url);
      return Math.min(
        ...ACCOUNTS.map(
          (account) => s.value('cdn_exporter_remote_write_settled_timestamp_seconds', { account }) ?? 0,
        ),
      );
    };
    const start = floorMinute(Date.now() - LOOKBACK_MIN * MINUTE);
    try {
      // 1. Killed mid catch-up, once some windows are in the receiver.
      let p = run();
      let url = await servingUrl(p, 30_000);
      await waitFor(
        async () => (await settledAt(url)) * 1000 > start + 8 * MINUTE,
        60_000,
        'windows written',
      );
      p.child.kill('SIGKILL');
      await p.exited;

      // 2. The receiver down for two minutes (issue 32), while the restarted exporter has windows for it and new ones
      //    settle every minute; then back on the same data and port.
      await prom.stop();
      const stoppedAt = Date.now();
      p = run();
      url = await servingUrl(p, 30_000);
      const remoteWrite = (s: Scrape, result: string) =>
        s.value('cdn_exporter_remote_write_samples_total', { result }) ?? 0;
      await waitFor(
        async () => remoteWrite(await Scrape.from(url), 'retried') > 0,
        60_000,
        'sends retried while the receiver is down',
      );
      // The exporter's clock is real time: the outage is two minutes of it. Held until then, with the exporter's
      // self-metrics read about once a second meanwhile: what it saw of the outage.
      const seen = {
        scrapes: 0,
        pending: 0,
        retried: 0,
        errors: 0,
        sent: 0,
        dropped: 0,
        reads: 0,
        walked: [0, 0],
      };
      for (let i = 0; i < 1000; i++) {
        const s = await Scrape.from(url);
        seen.scrapes++;
        seen.pending = Math.max(seen.pending, s.value('cdn_exporter_remote_write_pending_samples') ?? 0);
        seen.retried = remoteWrite(s, 'retried');
        seen.sent = remoteWrite(s, 'sent');
        seen.dropped = remoteWrite(s, 'dropped');
        seen.errors = s.value('cdn_exporter_remote_write_requests_total', { code: 'error' }) ?? 0;
        seen.reads = readsOf(s);
        // How far the walk went meanwhile: the windows that kept coming while nothing could be written.
        const walked = Math.min(...ACCOUNTS.map((account) => cursorOf(s, account)));
        seen.walked = [seen.walked[0] || walked, walked];
        const left = OUTAGE_MS - (Date.now() - stoppedAt);
        if (left <= 0) break;
        await new Promise((r) => setTimeout(r, Math.min(1000, left)));
      }
      prom = await startPrometheus({
        bin: bin!,
        ...scraped,
        ruleFiles: [],
        storagePath: dataDir,
        port,
        flags: ['--web.enable-remote-write-receiver'],
      });
      const outageMs = Date.now() - stoppedAt;
      console.log(
        `receiver down ${(outageMs / 1000).toFixed(1)} s; the exporter meanwhile (${seen.scrapes} scrapes): ` +
          `samples sent ${seen.sent}, retried ${seen.retried}, dropped ${seen.dropped}, pending at most ` +
          `${seen.pending}, failed requests ${seen.errors}, windows it read itself ${seen.reads}; walked from ` +
          `${new Date(seen.walked[0]!).toISOString()} to ${new Date(seen.walked[1]!).toISOString()}`,
      );
      expect(outageMs).toBeGreaterThanOrEqual(OUTAGE_MS);
      // Every send failed and was kept for a retry: none sent, none dropped, samples waiting in the queue.
      expect(seen.sent, 'samples sent while the receiver was down').toBe(0);
      expect(seen.dropped, 'samples dropped while the receiver was down').toBe(0);
      expect(seen.errors, 'requests failed while the receiver was down').toBeGreaterThan(0);
      expect(seen.pending, 'samples pending while the receiver was down').toBeGreaterThan(0);
      // Windows came and settled meanwhile: the walk went on, a minute a window.
      expect(
        seen.walked[1]! - seen.walked[0]!,
        'minutes walked while the receiver was down',
      ).toBeGreaterThanOrEqual(MINUTE);

      // 3. Caught up: every window final by now written.
      const horizon = floorMinute(Date.now() - (DELAY_MIN + REVISIT_MIN) * MINUTE - 45_000) - MINUTE;
      await waitFor(async () => (await settledAt(url)) * 1000 >= horizon, 120_000, 'the settled horizon');
      // A window sent again after the kill, that the receiver already held, may be refused as out of order (and
      // counted dropped): the samples below show it is there once.

      // While the receiver was down the queue (400 samples) filled: windows settled meanwhile were not held, the
      // writer read them again itself once there was room.
      const reads = readsOf(await Scrape.from(url));
      expect(reads, 'windows the writer read itself').toBeGreaterThan(0);
      console.log(`windows the writer read itself: ${seen.reads} by the outage's end, ${reads} in all`);
      let windows = 0;
      /** Windows whose increase() at their own end, over their own length, is the truth: settled and scraped. */
      const exactAtOwnTime = { settled: 0, scraped: 0, windows: 0 };
      const minutesExact = { settled: 0, scraped: 0, all: 0 };
      for (const account of ACCOUNTS) {
        const series = await raw(prom, `cdn_edge_requests_total{job="${JOB}",account="${account}"}`);
        expect(series.length, account).toBe(4);
        for (const s of series) {
          const resource = s.metric.resource!;
          expect(s.metric.instance).toBe('test');
          const samples = s.values.map(([t, v]) => [Math.round(t * 1000), Number(v)] as const);
          expect(samples[0]![1], `${resource} starts at zero`).toBe(0);
          expect(samples[0]![0] % MINUTE, `${resource} zero 1 ms after a window's start`).toBe(1);
          expect(samples[0]![0]).toBeLessThan(start + 5 * MINUTE);
          for (let i = 1; i < samples.length; i++) {
            const [t0, v0] = samples[i - 1]!;
            const [t1, v1] = samples[i]!;
            const from = t0 % MINUTE === 1 ? t0 - 1 : t0;
            expect(t1 % MINUTE, 'window ends on minutes').toBe(0);
            const truth = sim.truth(account, resource, from, t1).edge.requests;
            expect(
              v1 - v0,
              `${account}/${resource} [${new Date(from).toISOString()}, ${new Date(t1).toISOString()})`,
            ).toBe(truth);
            windows++;
            if (t0 % MINUTE === 1) continue;
            exactAtOwnTime.windows++;
            minutesExact.all += (t1 - t0) / MINUTE;
            const range = `${Math.round((t1 - t0) / 1000)}s`;
            for (const job of ['settled', 'scraped'] as const) {
              const name = job === 'settled' ? JOB : 'cdn-exporter';
              const answer = await prom.query(
                `increase(cdn_edge_requests_total{job="${name}",account="${account}",resource="${resource}"}[${range}])`,
                t1 / 1000,
              );
              const got = Number(answer.result[0]?.value[1] ?? Number.NaN);
              if (Math.abs(got - truth) <= 1e-9 * Math.max(1, truth)) {
                exactAtOwnTime[job]++;
                minutesExact[job] += (t1 - t0) / MINUTE;
              }
            }
          }
          expect(samples.at(-1)![0]).toBeGreaterThanOrEqual(horizon);
        }
        // What a user queries: increase() over one window, at its end.
        const [one] = series;
        const [t0, v0] = one!.values.at(-2)!;
        const [t1, v1] = one!.values.at(-1)!;
        const answer = await prom.query(
          `increase(cdn_edge_requests_total{job="${JOB}",account="${account}",resource="${one!.metric.resource}"}[${Math.round(t1 - t0)}s])`,
          t1,
        );
        expect(Number(answer.result[0]?.value[1])).toBeCloseTo(Number(v1) - Number(v0), 6);
      }
      expect(windows).toBeGreaterThan(ACCOUNTS.length * 4 * 3);
      expect(exactAtOwnTime.settled, 'every settled window exact at its own time').toBe(
        exactAtOwnTime.windows,
      );
      // The figure the issue asks for: printed, not asserted (the scraped series are not meant to be exact there).
      console.log(
        `windows exact at their own time: settled ${exactAtOwnTime.settled} of ${exactAtOwnTime.windows} ` +
          `(${minutesExact.settled} of ${minutesExact.all} resource-minutes), scraped ${exactAtOwnTime.scraped} ` +
          `of ${exactAtOwnTime.windows} (${minutesExact.scraped} resource-minutes)`,
      );
      p.child.kill('SIGTERM');
      await p.exited;
    } finally {
      await prom.stop();
      await sim.close();
    }
  }, 480_000);
});
