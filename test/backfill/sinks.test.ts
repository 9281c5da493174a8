/**
 * The two outputs of a backfill (src/backfill/sinks.ts). RemoteSink over ./fake-writer.ts (the RemoteWriter
 * interface alone): a window with samples is one batch, offered once the writer has room;
 * a window with nothing to send is acknowledged at once, sending nothing; a batch the writer has no room for is not
 * counted as pending (the caller waits and offers it again); `acknowledged` follows the writer's outcome, `dropped`
 * counts the batches refused for good, and `drained` resolves once every batch offered is acknowledged, or at the
 * interruption. FileSink puts each account's lines in the parts of its index. FileSink's bound on buffered lines:
 * test/backfill/openmetrics.test.ts.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenMetricsSpool } from '../../src/backfill/openmetrics.js';
import { FileSink, RemoteSink } from '../../src/backfill/sinks.js';
import type { SettledSeries } from '../../src/settled/running-totals.js';
import { settle } from '../helpers/fake-clock.js';
import { FakeWriter } from './fake-writer.js';

const series = (account: string, samples: number): SettledSeries => ({
  labels: [
    ['__name__', 'cdn_edge_requests_total'],
    ['account', account],
  ],
  samples: Array.from({ length: samples }, (_, i) => ({ value: i, timestampMs: 60_000 * (i + 1) })),
});

describe('RemoteSink', () => {
  it('acknowledges a window with nothing to send at once, offering nothing and waiting for no room', async () => {
    const writer = new FakeWriter(0);
    const sink = new RemoteSink(writer, new AbortController().signal);
    await sink.ready(0);
    let acked = 0;
    expect(sink.put('acme', 0, 60_000, [], () => acked++)).toBe(true);
    expect([acked, writer.offered.length, writer.roomAsked.length]).toEqual([1, 0, 0]);
    await sink.drained(new AbortController().signal);
  });

  it('offers a window as one batch once there is room, acknowledged when the receiver took it', async () => {
    const writer = new FakeWriter(1);
    const sink = new RemoteSink(writer, new AbortController().signal);
    await sink.ready(6);
    expect(writer.roomAsked).toEqual([6]);
    const acks: string[] = [];
    expect(sink.put('acme', 3, 600_000, [series('acme', 2), series('acme', 4)], () => acks.push('w3'))).toBe(
      true,
    );
    expect(writer.offered.map((o) => [o.batch.account, o.batch.end, o.batch.series.length])).toEqual([
      ['acme', 600_000, 2],
    ]);
    expect(acks).toEqual([]);
    writer.answer('sent');
    expect(acks).toEqual(['w3']);
    expect(sink.dropped).toBe(0);
  });

  it('returns false for a batch the writer has no room for, and does not wait for it when draining', async () => {
    const writer = new FakeWriter(1);
    const sink = new RemoteSink(writer, new AbortController().signal);
    expect(sink.put('acme', 0, 60_000, [series('acme', 1)])).toBe(true);
    // Another account's window took the room: nothing queued, the caller offers again later.
    let acked = false;
    expect(sink.put('globex', 0, 60_000, [series('globex', 1)], () => (acked = true))).toBe(false);
    expect(writer.refusals).toBe(1);
    let drained = false;
    const draining = sink.drained(new AbortController().signal).then(() => (drained = true));
    await settle();
    expect(drained).toBe(false);
    writer.answer('sent');
    await draining;
    expect(acked).toBe(false);
  });

  it('counts the batches refused for good, acknowledged all the same, and drains once all are answered', async () => {
    const writer = new FakeWriter(3);
    const sink = new RemoteSink(writer, new AbortController().signal);
    const acks: number[] = [];
    for (const i of [0, 1, 2]) sink.put('acme', i, (i + 1) * 60_000, [series('acme', 1)], () => acks.push(i));
    let drained = false;
    const draining = sink.drained(new AbortController().signal).then(() => (drained = true));
    writer.answer('dropped');
    writer.answer('sent');
    await settle();
    expect([acks, drained]).toEqual([[0, 1], false]);
    writer.answer('dropped');
    await draining;
    expect(acks).toEqual([0, 1, 2]);
    expect(sink.dropped).toBe(2);
  });

  it('stops draining at the interruption, and its wait for room ends with the signal', async () => {
    const writer = new FakeWriter(1);
    const stop = new AbortController();
    const sink = new RemoteSink(writer, stop.signal);
    sink.put('acme', 0, 60_000, [series('acme', 1)]);
    const waiting = sink.ready(1);
    const interrupted = new AbortController();
    const draining = sink.drained(interrupted.signal);
    interrupted.abort();
    await draining;
    stop.abort(new Error('SIGINT'));
    await expect(waiting).rejects.toThrow('SIGINT');
    // Already interrupted: drained at once.
    await sink.drained(interrupted.signal);
  });
});

describe('FileSink', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("puts each account's lines in the parts of its index, and takes every window", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cdn-sinks-'));
    dirs.push(dir);
    const spool = new OpenMetricsSpool(join(dir, 'x.om.parts'));
    const sink = new FileSink(spool, 1 << 20, async () => {});
    expect(sink.put('acme', 0, 60_000, [series('acme', 1)])).toBe(true);
    expect(sink.put('globex', 1, 60_000, [series('globex', 2)])).toBe(true);
    await sink.ready();
    await spool.write(spool.take());
    expect(readdirSync(spool.dir).sort()).toEqual([
      'cdn_edge_requests.counter.0',
      'cdn_edge_requests.counter.1',
    ]);
  });
});
