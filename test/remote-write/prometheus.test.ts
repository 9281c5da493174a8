/**
 * The remote-write transport against a real Prometheus 2.42 (`--web.enable-remote-write-receiver`): two series
 * pushed with their own timestamps come back exactly (labels, values, timestamps), and a sample older than the head
 * takes (out of bounds: 3 h behind samples it holds) is refused with 400, dropped, counted and logged, while the
 * next batch still goes through.
 */
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { createRemoteWriter } from '../../src/remote-write/index.js';
import type { RemoteWriter, SeriesSamples, WriteOutcome } from '../../src/remote-write/types.js';
import { captureLog } from '../helpers/log-capture.js';
import { type Prometheus, startPrometheus } from '../helpers/prometheus.js';
import { rwConfig } from '../helpers/remote-writer.js';
import { findTool } from '../helpers/tools.js';

const bin = findTool('prometheus');

const HOUR = 3_600_000;

describe.skipIf(!bin)('remote write into a real Prometheus', () => {
  let prom: Prometheus;
  let writer: RemoteWriter;
  const registry = new Registry();
  const { log, lines } = captureLog();

  beforeAll(async () => {
    prom = await startPrometheus({
      bin: bin!,
      // Nothing listens there: the job only gives the head samples of `up` at the current time.
      target: '127.0.0.1:9',
      job: 'nothing',
      ruleFiles: [],
      flags: ['--web.enable-remote-write-receiver'],
    });
    writer = createRemoteWriter(rwConfig(`${prom.url}/api/v1/write`, { timeoutMs: 10_000 }), {
      clock: systemClock,
      log,
      registry,
      version: 'test',
    });
  }, 60_000);

  afterAll(async () => {
    await writer?.close(Date.now());
    await prom?.stop();
  });

  const push = (end: number, series: SeriesSamples[]) =>
    new Promise<WriteOutcome>((resolve, reject) => {
      if (!writer.offer({ account: 'acme', end, series }, resolve)) reject(new Error('queue full'));
    });

  /** The raw samples of `selector` over the last `range`, as [ms, value] per series (labels as a sorted text). */
  async function raw(selector: string, range = '4h'): Promise<Map<string, [number, number][]>> {
    const url = `${prom.url}/api/v1/query?${new URLSearchParams({ query: `${selector}[${range}]` })}`;
    const body = (await (await fetch(url)).json()) as {
      data: { result: { metric: Record<string, string>; values: [number, string][] }[] };
    };
    const out = new Map<string, [number, number][]>();
    for (const s of body.data.result) {
      const labels = Object.entries(s.metric)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      out.set(
        labels,
        s.values.map(([t, v]) => [Math.round(t * 1000), Number(v)]),
      );
    }
    return out;
  }

  it('stores two series at their own timestamps, exactly; refuses an out-of-bounds sample with 400 (dropped)', async () => {
    // Whole seconds with milliseconds in them: the timestamps must come back to the millisecond.
    const t0 = Math.floor((Date.now() - 50 * 60_000) / 1000) * 1000 + 123;
    const t1 = t0 + 5 * 60_000;
    const t2 = t1 + 5 * 60_000;
    const own: [string, string][] = [
      ['job', 'cdn-exporter-settled'],
      ['instance', 'test-host'],
      ['account', 'acme'],
    ];
    const outcome = await push(t2, [
      {
        labels: [['__name__', 'cdn_edge_requests_total'], ['resource', '1001'], ...own],
        samples: [
          { value: 0, timestampMs: t0 },
          { value: 1234, timestampMs: t1 },
          { value: 5678.5, timestampMs: t2 },
        ],
      },
      {
        labels: [['__name__', 'cdn_edge_bandwidth_bytes_per_second'], ['resource', '1001'], ...own],
        samples: [
          { value: 1.25e9, timestampMs: t1 },
          { value: 0.1 + 0.2, timestampMs: t2 },
        ],
      },
    ]);
    expect(outcome).toBe('sent');
    const common = 'account=acme,instance=test-host,job=cdn-exporter-settled,resource=1001';
    expect(await raw('cdn_edge_requests_total')).toEqual(
      new Map([
        [
          `__name__=cdn_edge_requests_total,${common}`,
          [
            [t0, 0],
            [t1, 1234],
            [t2, 5678.5],
          ],
        ],
      ]),
    );
    expect(await raw('cdn_edge_bandwidth_bytes_per_second')).toEqual(
      new Map([
        [
          `__name__=cdn_edge_bandwidth_bytes_per_second,${common}`,
          [
            [t1, 1.25e9],
            [t2, 0.1 + 0.2],
          ],
        ],
      ]),
    );

    // 3 h behind the newest samples the head holds: out of bounds for the head, refused for good.
    const old = Date.now() - 3 * HOUR;
    const refused = await push(old, [
      {
        labels: [['__name__', 'cdn_edge_requests_total'], ['resource', '2002'], ...own],
        samples: [{ value: 1, timestampMs: old }],
      },
    ]);
    expect(refused).toBe('dropped');
    const text = await registry.metrics();
    expect(text).toContain('cdn_exporter_remote_write_samples_total{result="dropped"} 1');
    expect(text).toContain('cdn_exporter_remote_write_samples_total{result="sent"} 5');
    expect(text).toContain('cdn_exporter_remote_write_samples_total{result="retried"} 0');
    expect(text).toContain('cdn_exporter_remote_write_requests_total{code="400"} 1');
    expect(lines.find((l) => l.includes('refused samples for good'))).toContain('400: out of bounds');

    // The queue goes on after a drop.
    const later = await push(t2 + 60_000, [
      {
        labels: [['__name__', 'cdn_edge_requests_total'], ['resource', '1001'], ...own],
        samples: [{ value: 6000, timestampMs: t2 + 60_000 }],
      },
    ]);
    expect(later).toBe('sent');
    expect(
      (await raw('cdn_edge_requests_total')).get(`__name__=cdn_edge_requests_total,${common}`),
    ).toHaveLength(4);
  }, 60_000);
});
