/**
 * The remote writer as the exporter makes it (src/remote-write/index.ts, createRemoteWriter): what comes out of
 * the wiring of client, queue and metrics from `remote_write`. Its metrics on the registry given (never the global
 * one), credential files read through the `fs` given at each request, the jitter from `random`, and the contract's
 * names exported from one place. The receiver is the fake on loopback (test/helpers/remote-write-receiver.ts).
 * The client's and queue's own behaviours are in test/remote-write/client.test.ts and queue.test.ts.
 */
import { register as globalRegistry, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { TokenFs } from '../../src/config/token.js';
import {
  createRemoteWriter,
  type RemoteWriter,
  RemoteWriterClosed,
  type WriteOutcome,
} from '../../src/remote-write/index.js';
import { RemoteWriterClosed as ClosedInTypes } from '../../src/remote-write/types.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLog } from '../helpers/log-capture.js';
import { type Receiver, startReceiver } from '../helpers/remote-write-receiver.js';
import { rwConfig, series } from '../helpers/remote-writer.js';

const AT = Date.UTC(2026, 0, 1, 11);

let receiver: Receiver | undefined;
let writer: RemoteWriter | undefined;
let clock: FakeClock | undefined;
afterEach(async () => {
  await writer?.close(clock?.now() ?? 0);
  await receiver?.stop();
  receiver = undefined;
  writer = undefined;
  clock = undefined;
});

/** A file system holding one file, whose content the test changes (stat moves with it). */
function memoryFs(path: string, content: string) {
  const files = new Map([[path, content]]);
  let version = 1n;
  const reads: string[] = [];
  const fs: TokenFs = {
    stat: (p) => {
      if (!files.has(p)) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
      return { ino: 1n, size: BigInt(files.get(p)!.length), mtimeNs: version, ctimeNs: version };
    },
    read: (p) => {
      reads.push(p);
      return files.get(p)!;
    },
  };
  return {
    fs,
    reads,
    set: (text: string) => {
      files.set(path, text);
      version++;
    },
  };
}

describe('createRemoteWriter', () => {
  it("puts the cdn_exporter_remote_write_* families on the registry given, and none on prom-client's global one", async () => {
    const registry = new Registry();
    const globalBefore = globalRegistry.getMetricsAsArray().map((m) => m.name);
    clock = new FakeClock(AT);
    writer = createRemoteWriter(rwConfig('http://127.0.0.1:9/api/v1/push'), {
      clock,
      log: captureLog().log,
      registry,
      version: '1.2.3',
    });
    expect(
      registry
        .getMetricsAsArray()
        .map((m) => m.name)
        .sort(),
    ).toEqual([
      'cdn_exporter_remote_write_pending_samples',
      'cdn_exporter_remote_write_requests_total',
      'cdn_exporter_remote_write_samples_total',
      'cdn_exporter_remote_write_settled_timestamp_seconds',
    ]);
    expect(globalRegistry.getMetricsAsArray().map((m) => m.name)).toEqual(globalBefore);
  });

  it('reads bearer_token_file through the fs given, at each request, never from disk', async () => {
    receiver = await startReceiver();
    clock = new FakeClock(AT);
    // A path that does not exist on disk: only the fs given has it.
    const path = '/nonexistent/cdn-exporter-test/bearer';
    const mem = memoryFs(path, 'token-from-the-given-fs-0123456789\n');
    const registry = new Registry();
    writer = createRemoteWriter(rwConfig(receiver.url, { bearerTokenFile: path }), {
      clock,
      log: captureLog().log,
      registry,
      version: '1.2.3',
      fs: mem.fs,
    });
    const outcomes: WriteOutcome[] = [];
    writer.offer({ account: 'acme', end: AT, series: series(1, 1, AT) }, (o) => outcomes.push(o));
    await receiver.received(1);
    mem.set('token-rotated-in-the-given-fs-9876543210\n');
    writer.offer({ account: 'acme', end: AT + 60_000, series: series(1, 1, AT + 60_000) }, (o) =>
      outcomes.push(o),
    );
    await receiver.received(2);
    expect(receiver.requests.map((r) => r.headers.authorization)).toEqual([
      'Bearer token-from-the-given-fs-0123456789',
      'Bearer token-rotated-in-the-given-fs-9876543210',
    ]);
    expect(mem.reads).toEqual([path, path]);
  });

  it('waits between attempts as `random` draws the jitter within the backoff', async () => {
    receiver = await startReceiver();
    receiver.script({ status: 503 }, { status: 503 });
    const fake = new FakeClock(AT);
    clock = fake;
    const sleeps: number[] = [];
    const draws = [0, 0.999];
    writer = createRemoteWriter(rwConfig(receiver.url), {
      clock: {
        now: () => fake.now(),
        sleep: (ms, signal) => {
          sleeps.push(ms);
          return fake.sleep(ms, signal);
        },
      },
      log: captureLog().log,
      registry: new Registry(),
      version: '1.2.3',
      random: () => draws.shift() ?? 0.5,
    });
    let outcome: WriteOutcome | undefined;
    writer.offer({ account: 'acme', end: AT, series: series(1, 1, AT) }, (o) => (outcome = o));
    for (let i = 0; i < 2000 && outcome === undefined; i++) {
      if (fake.pending > 0) await fake.advance(5000);
      else await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(outcome).toBe('sent');
    expect(receiver.requests).toHaveLength(3);
    // Full jitter (30 ms doubling, docs/remote-write.md): a draw of 0 waits the least there is (1 ms, never 0), one
    // of 0.999 nearly the whole ceiling of the second wait (at least 60 ms).
    expect(sleeps).toHaveLength(2);
    expect(sleeps[0]).toBe(1);
    expect(sleeps[1]).toBeGreaterThanOrEqual(Math.floor(0.999 * 60));
  });

  it('exports the contract from one place: room() after close() rejects with its RemoteWriterClosed', async () => {
    expect(RemoteWriterClosed).toBe(ClosedInTypes);
    clock = new FakeClock(AT);
    const w = createRemoteWriter(
      rwConfig('http://127.0.0.1:9/api/v1/push', { queue: { maxPendingSamples: 1, maxSamplesPerSend: 1 } }),
      { clock, log: captureLog().log, registry: new Registry(), version: '1.2.3' },
    );
    await w.close(clock.now());
    expect(w.offer({ account: 'acme', end: AT, series: series(1, 1, AT) }, () => {})).toBe(false);
    const err = await w.room(10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteWriterClosed);
    expect((err as Error).message).toBe('the remote writer is closed');
  });
});
