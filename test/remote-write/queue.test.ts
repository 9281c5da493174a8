import { afterEach, describe, expect, it } from 'vitest';
import { RemoteWriterClosed } from '../../src/remote-write/types.js';
import { type Receiver, seriesKey, startReceiver } from '../helpers/remote-write-receiver.js';
import { rwConfig, series, startWriter, type WriterUnderTest } from '../helpers/remote-writer.js';

const AT = Date.UTC(2026, 0, 1, 11);

let receiver: Receiver | undefined;
let under: WriterUnderTest | undefined;

afterEach(async () => {
  await under?.writer.close(under.clock.now());
  await receiver?.stop();
  receiver = undefined;
  under = undefined;
});

async function setUp(queue = { maxPendingSamples: 2_000_000, maxSamplesPerSend: 5000 }) {
  receiver = await startReceiver();
  under = startWriter(rwConfig(receiver.url, { queue }));
  return { r: receiver, w: under };
}

const sorted = (labels: readonly (readonly [string, string])[]) =>
  [...labels].sort((a, b) => (a[0] < b[0] ? -1 : 1));

describe('remote-write queue', () => {
  it('sends batches in the order offered, cut at max_samples_per_send, every series in time order', async () => {
    const { r, w } = await setUp({ maxPendingSamples: 1000, maxSamplesPerSend: 4 });
    const batches = [0, 1, 2].map((b) => ({
      account: 'acme',
      end: AT + (b + 1) * 300_000,
      series: series(3, 3, AT + b * 300_000),
    }));
    for (const b of batches) expect(w.offer(b)).toBe(true);
    expect(w.writer.pendingSamples()).toBe(27);
    await w.until(() => w.outcomes.every((o) => o !== undefined));

    expect(w.outcomes).toEqual(['sent', 'sent', 'sent']);
    expect(r.requests.every((q) => q.samples <= 4)).toBe(true);
    // 9 samples per batch, cut at 4: 3 requests each (4, 4, 1); a request never mixes batches.
    expect(r.requests.map((q) => q.samples)).toEqual([4, 4, 1, 4, 4, 1, 4, 4, 1]);
    const accepted = r.accepted();
    for (let i = 0; i < 3; i++) {
      const offered = batches.flatMap((b) => b.series[i]!.samples);
      expect(accepted.get(seriesKey(sorted(batches[0]!.series[i]!.labels)))).toEqual(offered);
    }
    expect(w.writer.pendingSamples()).toBe(0);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="sent"')).toBe(27);
    expect(await w.metric('cdn_exporter_remote_write_pending_samples')).toBe(0);
    expect(await w.metric('cdn_exporter_remote_write_requests_total', 'code="204"')).toBe(9);
    expect(await w.metric('cdn_exporter_remote_write_settled_timestamp_seconds', 'account="acme"')).toBe(
      (AT + 900_000) / 1000,
    );
  });

  it('retries 500, 503, 429 (after its Retry-After) and a reset connection with a growing backoff, then sends once', async () => {
    const { r, w } = await setUp();
    r.script(
      { status: 500, body: 'internal' },
      { status: 503 },
      { status: 429, headers: { 'retry-after': '7' } },
      { reset: true },
    );
    expect(w.offer({ account: 'acme', end: AT + 300_000, series: series(2, 1, AT) })).toBe(true);
    await w.until(() => w.outcomes[0] !== undefined);

    expect(w.outcomes).toEqual(['sent']);
    expect(r.requests).toHaveLength(5);
    // Full jitter at random 0.5: half of 30 ms doubling; the 429 waits its Retry-After instead.
    expect(w.sleeps).toEqual([15, 30, 7000, 120]);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="retried"')).toBe(8);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="sent"')).toBe(2);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="dropped"')).toBe(0);
    for (const [code, n] of [
      ['500', 1],
      ['503', 1],
      ['429', 1],
      ['error', 1],
      ['204', 1],
    ] as const)
      expect(await w.metric('cdn_exporter_remote_write_requests_total', `code="${code}"`)).toBe(n);
    // Every request carried the same samples; the receiver took them once.
    expect([...r.accepted().values()].map((s) => s.length)).toEqual([1, 1]);
    // Logged once per reason, and once when requests went through again.
    const failing = w.lines.filter((l) => l.includes('request failed'));
    expect(failing).toHaveLength(4);
    expect(failing[0]).toContain('500: internal');
    expect(w.lines.some((l) => l.includes('go through again'))).toBe(true);
  });

  it('waits at most 5 s between attempts however long a 5xx lasts', async () => {
    const { r, w } = await setUp();
    r.script(...Array.from({ length: 12 }, () => ({ status: 502 })));
    w.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
    await w.until(() => w.outcomes[0] !== undefined);
    expect(Math.max(...w.sleeps)).toBe(2500);
    expect(w.sleeps.slice(-3)).toEqual([2500, 2500, 2500]);
    // One log line for twelve failures of one reason.
    expect(w.lines.filter((l) => l.includes('request failed'))).toHaveLength(1);
  });

  it('drops a request refused with 400, counts it, logs once per reason, and sends newer batches', async () => {
    const { r, w } = await setUp({ maxPendingSamples: 1000, maxSamplesPerSend: 5000 });
    r.script(
      { status: 400, body: 'out of bounds: sample at 1767265200000 for {__name__="x"}' },
      { status: 400, body: 'out of bounds: sample at 1767265500000 for {__name__="y"}' },
      { status: 204 },
      { status: 401, body: 'no such tenant' },
    );
    for (let b = 0; b < 4; b++)
      w.offer({ account: 'acme', end: AT + b * 300_000, series: series(2, 1, AT + b * 300_000) });
    await w.until(() => w.outcomes.every((o) => o !== undefined));

    expect(w.outcomes).toEqual(['dropped', 'dropped', 'sent', 'dropped']);
    expect(r.requests).toHaveLength(4);
    expect(w.sleeps).toEqual([]);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="dropped"')).toBe(6);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="sent"')).toBe(2);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="retried"')).toBe(0);
    const drops = w.lines.filter((l) => l.includes('refused samples for good'));
    expect(drops).toHaveLength(2);
    expect(drops[0]).toContain('400: out of bounds');
    expect(drops[1]).toContain('401: no such tenant');
    // A dropped batch is done too: the settled timestamp moves past it.
    expect(await w.metric('cdn_exporter_remote_write_settled_timestamp_seconds', 'account="acme"')).toBe(
      (AT + 900_000) / 1000,
    );
  });

  it('refuses a batch over max_pending_samples until room() says the samples before it are sent', async () => {
    const { r, w } = await setUp({ maxPendingSamples: 10, maxSamplesPerSend: 5 });
    r.script({ status: 503 });
    expect(w.offer({ account: 'acme', end: AT, series: series(8, 1, AT) })).toBe(true);
    await r.received(1);
    await w.until(() => w.clock.pending > 0);
    // 8 pending: 3 more fit, 5 do not.
    expect(w.writer.pendingSamples()).toBe(8);
    expect(await w.metric('cdn_exporter_remote_write_pending_samples')).toBe(8);
    expect(w.offer({ account: 'acme', end: AT + 1, series: series(5, 1, AT + 1) })).toBe(false);
    let roomy = false;
    const room = w.writer.room(5).then(() => {
      roomy = true;
    });
    await w.writer.room(2);
    expect(roomy).toBe(false);
    await w.until(() => roomy);
    await room;
    // The first request of 5 went through: 3 left, and 5 more fit.
    expect(w.writer.pendingSamples()).toBeLessThanOrEqual(5);
    expect(w.offer({ account: 'acme', end: AT + 1, series: series(5, 1, AT + 1) })).toBe(true);
    await w.until(() => w.outcomes.every((o) => o !== undefined));
    expect(w.writer.pendingSamples()).toBe(0);
  });

  it('takes a batch bigger than the whole bound when nothing is pending', async () => {
    const { w } = await setUp({ maxPendingSamples: 10, maxSamplesPerSend: 5 });
    expect(w.offer({ account: 'acme', end: AT, series: series(25, 1, AT) })).toBe(true);
    expect(w.offer({ account: 'acme', end: AT, series: series(1, 1, AT) })).toBe(false);
    await w.until(() => w.outcomes[0] !== undefined);
    expect(w.outcomes).toEqual(['sent']);
    expect(await w.metric('cdn_exporter_remote_write_samples_total', 'result="sent"')).toBe(25);
  });

  it('close() sends until its deadline, then stops: no done for what is left, nothing taken after', async () => {
    const { r, w } = await setUp();
    r.script(...Array.from({ length: 1000 }, () => ({ status: 500 })));
    w.offer({ account: 'acme', end: AT, series: series(1, 1, AT) });
    await r.received(1);
    const deadline = w.clock.now() + 20_000;
    let closed = false;
    const closing = w.writer.close(deadline).then(() => {
      closed = true;
    });
    await w.until(() => closed);
    await closing;
    expect(w.clock.now()).toBeGreaterThanOrEqual(deadline);
    expect(w.outcomes).toEqual([undefined]);
    expect(w.offer({ account: 'acme', end: AT, series: series(1, 1, AT) })).toBe(false);
    await expect(w.writer.room(1)).rejects.toBeInstanceOf(RemoteWriterClosed);
    expect(w.lines.some((l) => l.includes('stopped with samples not sent'))).toBe(true);
    const attempts = r.requests.length;
    // Stopped for good: the clock moving on sends nothing more.
    await w.clock.advance(60_000);
    expect(r.requests.length).toBe(attempts);
  });

  it('close() returns at once when everything was sent, and room() waiters get RemoteWriterClosed', async () => {
    const { w } = await setUp({ maxPendingSamples: 2, maxSamplesPerSend: 2 });
    w.offer({ account: 'acme', end: AT, series: series(2, 1, AT) });
    const waiting = w.writer.room(2);
    await w.until(() => w.outcomes[0] !== undefined);
    await waiting;
    w.offer({ account: 'acme', end: AT, series: series(2, 1, AT) });
    const rejected = expect(w.writer.room(2)).rejects.toBeInstanceOf(RemoteWriterClosed);
    await w.writer.close(w.clock.now() + 60_000);
    await rejected;
    expect(w.outcomes).toEqual(['sent', 'sent']);
  });

  it('a done callback that throws is logged and the queue goes on', async () => {
    const { r, w } = await setUp();
    w.writer.offer({ account: 'acme', end: AT, series: series(1, 1, AT) }, () => {
      throw new Error('caller bug');
    });
    w.offer({ account: 'acme', end: AT + 1, series: series(1, 1, AT + 1) });
    await w.until(() => w.outcomes[0] !== undefined);
    expect(w.outcomes).toEqual(['sent']);
    expect(r.requests).toHaveLength(2);
    expect(w.lines.some((l) => l.includes('caller bug'))).toBe(true);
  });
});
