/**
 * `backfill --remote-write` (the built CLI) into a remote-write receiver on loopback
 * (test/helpers/remote-write-receiver.ts decodes what it gets, independently of src/remote-write/): the samples
 * accepted are exactly the ones `--output` writes for the same range, with job, instance and the external labels; a
 * receiver that stops answering mid-way and a SIGTERM leave a progress file beside state_file, and --resume (to a
 * receiver that answers) sends the rest: both receivers together hold every sample, each series in time order.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/clock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cliTestFolder, EXIT_WAIT_MS, exitWithin, runCli, startCli } from '../helpers/cli-process.js';
import { type Receiver, startReceiver } from '../helpers/remote-write-receiver.js';
import { waitFor } from '../helpers/stack.js';
import { closedEnd, iso, readOm, simConfig } from './om.js';

const dir = cliTestFolder('cdn-backfill-rw-');

/** `name{a=b,...}@ts value`, labels sorted: one sample whatever the format it came in. */
function sampleKey(labels: Record<string, string>, ts: number, value: number): string {
  const pairs = Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`);
  return `${pairs.join(',')}@${ts} ${value}`;
}

function received(...receivers: Receiver[]): { samples: Set<string>; ordered: boolean } {
  const samples = new Set<string>();
  let ordered = true;
  for (const r of receivers)
    for (const [key, list] of r.accepted()) {
      const labels = Object.fromEntries(key.split(',').map((p) => p.split('=') as [string, string]));
      const { __name__: name, ...rest } = labels;
      list.forEach((s, i) => {
        if (i > 0 && s.timestampMs < list[i - 1]!.timestampMs) ordered = false;
        samples.add(sampleKey({ __name__: name!, ...rest }, s.timestampMs, s.value));
      });
    }
  return { samples, ordered };
}

function config(sim: Simulator, receiver: Receiver, name: string): string {
  return simConfig(
    dir,
    sim.url,
    [
      '  requests_per_second: 20',
      `state_file: ${join(dir, 'state.json')}`,
      'remote_write:',
      `  url: ${receiver.url}`,
      '  instance: rw-host',
      '  external_labels: {cluster: c1}',
      '  timeout: 1s',
      '  queue: {max_samples_per_send: 400}',
    ],
    name,
  );
}

describe('backfill --remote-write', () => {
  it('sends what --output writes, and resumes after a receiver outage and a SIGTERM', async () => {
    const sim = await startSimulator({ seed: 38 }, { host: '127.0.0.1', port: 0 });
    const receivers: Receiver[] = [];
    try {
      const to = closedEnd(6 * MINUTE);
      const range = ['--from', iso(to - 60 * MINUTE), '--to', iso(to)];
      const whole = await startReceiver();
      receivers.push(whole);
      // A 503 and a reset on the way: retried, nothing lost.
      whole.script({ status: 503 }, { reset: true });
      const first = await runCli(
        ['backfill', '--config', config(sim, whole, 'a.yml'), ...range, '--remote-write'],
        {},
        60_000,
      );
      expect(first.code, first.stderr).toBe(0);
      const sent = received(whole);
      expect(first.stdout).toMatch(
        new RegExp(
          `^backfill done: 12 windows \\(0 skipped\\), \\d+ requests, ${sent.samples.size} samples .*; remote write: ${sent.samples.size} samples sent, 0 dropped\\n$`,
        ),
      );
      expect(sent.ordered).toBe(true);
      expect(existsSync(join(dir, 'state.backfill.json')), 'progress removed once done').toBe(false);

      const om = join(dir, 'same.om');
      const file = await runCli(
        ['backfill', '--config', config(sim, whole, 'a.yml'), ...range, '--output', om],
        {},
        60_000,
      );
      expect(file.code, file.stderr).toBe(0);
      const written = new Set(
        readOm(readFileSync(om, 'utf8')).samples.map((s) =>
          sampleKey({ __name__: s.name, ...s.labels }, s.timestampMs, s.value),
        ),
      );
      expect(sent.samples).toEqual(written);
      for (const s of written) expect(s).toMatch(/,cluster=c1,.*instance=rw-host,job=cdn-exporter-settled,/);

      // A receiver that takes three requests, then holds every other one: SIGTERM while windows wait for it.
      const stuck = await startReceiver();
      receivers.push(stuck);
      stuck.script({ status: 204 }, { status: 204 }, { status: 204 }, ...Array(10_000).fill({ hang: true }));
      const cut = startCli(['backfill', '--config', config(sim, stuck, 'b.yml'), ...range, '--remote-write']);
      const progress = join(dir, 'state.backfill.json');
      await waitFor(
        () => stuck.requests.length > 4 && existsSync(progress),
        30_000,
        'requests held by the receiver',
      );
      cut.child.kill('SIGTERM');
      const exit = await exitWithin(cut, EXIT_WAIT_MS);
      expect(exit?.code, cut.stderr()).toBe(143);
      expect(cut.stdout()).toMatch(/^backfill interrupted: /);

      // Resumed (same flags) to a receiver that answers: the rest is sent.
      const fine = await startReceiver();
      receivers.push(fine);
      const resumed = await runCli(
        ['backfill', '--config', config(sim, fine, 'c.yml'), ...range, '--remote-write', '--resume'],
        {},
        60_000,
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      const parts = received(stuck, fine);
      expect(parts.samples).toEqual(written);
      expect(received(fine).ordered).toBe(true);
      // The resume sent less than everything: it continued from what the first receiver acknowledged.
      expect(received(fine).samples.size).toBeLessThan(written.size);
      expect(existsSync(progress)).toBe(false);
    } finally {
      for (const r of receivers) await r.stop();
      await sim.close();
    }
  }, 120_000);
});
