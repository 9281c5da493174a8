/**
 * prom-client's registry in the protobuf exposition (src/server/registry-protobuf.ts), read back with
 * test/helpers/protobuf.ts (protobufjs over the official schema): one delimited MetricFamily per family with its
 * help and type, counters and histograms created at `startedMs` (to the millisecond: seconds and nanos), a
 * histogram's buckets cumulative without the +Inf one (its count is the sample count), one Metric per label set,
 * labels and values exact whatever they hold (UTF-8, quotes), and a family without a series left out.
 */
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registryToProtobuf } from '../../src/server/registry-protobuf.js';
import { decodeProtobuf } from '../helpers/protobuf.js';

const STARTED = Date.UTC(2026, 0, 1, 12, 0, 0) + 123;

function registry() {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: 'x_requests_total',
    help: 'Requests "sent".',
    labelNames: ['code'],
    registers,
  });
  const queue = new Gauge({ name: 'x_queue_length', help: 'Queued.', registers });
  const duration = new Histogram({
    name: 'x_duration_seconds',
    help: 'Duration.',
    labelNames: ['api'],
    buckets: [0.1, 1, 10],
    registers,
  });
  const sizes = new Summary({ name: 'x_size_bytes', help: 'Sizes.', percentiles: [0.5], registers });
  new Counter({ name: 'x_never_total', help: 'No child yet.', labelNames: ['api'], registers });
  return { registry, requests, queue, duration, sizes };
}

describe('registryToProtobuf', () => {
  it('writes each family with series as one message, with its help and type, in the registry order', async () => {
    const r = registry();
    r.requests.inc({ code: '200' }, 3);
    r.queue.set(7);
    r.duration.observe({ api: 'metrics' }, 0.5);
    r.sizes.observe(100);
    const families = decodeProtobuf(await registryToProtobuf(r.registry, STARTED));
    expect(families.map((f) => [f.name, f.type, f.help])).toEqual([
      ['x_requests_total', 'counter', 'Requests "sent".'],
      ['x_queue_length', 'gauge', 'Queued.'],
      ['x_duration_seconds', 'histogram', 'Duration.'],
      ['x_size_bytes', 'summary', 'Sizes.'],
    ]);
  });

  it('gives counters their values and labels, created at the start to the millisecond', async () => {
    const r = registry();
    r.requests.inc({ code: '200' }, 3);
    r.requests.inc({ code: 'ünï "q" \\ x' }, 0.5);
    const [counter] = decodeProtobuf(await registryToProtobuf(r.registry, STARTED));
    expect(counter!.metrics.map((m) => [m.labels, m.counter])).toEqual([
      [{ code: '200' }, 3],
      [{ code: 'ünï "q" \\ x' }, 0.5],
    ]);
    for (const m of counter!.metrics) expect(m.created).toBeCloseTo(STARTED / 1000, 6);
    // A start on a whole second has no nanos.
    const [whole] = decodeProtobuf(await registryToProtobuf(r.registry, STARTED - 123));
    expect(whole!.metrics[0]!.created).toBe((STARTED - 123) / 1000);
  });

  it('gives a histogram per label set: cumulative buckets without +Inf, count, sum and the start', async () => {
    const r = registry();
    for (const v of [0.05, 0.5, 5, 50]) r.duration.observe({ api: 'metrics' }, v);
    r.duration.observe({ api: 'dvr-net' }, 2);
    const h = decodeProtobuf(await registryToProtobuf(r.registry, STARTED)).find(
      (f) => f.name === 'x_duration_seconds',
    )!;
    expect(h.metrics.map((m) => [m.labels, m.histogram])).toEqual([
      [
        { api: 'metrics' },
        {
          count: 4,
          sum: 55.55,
          buckets: [
            { le: 0.1, count: 1 },
            { le: 1, count: 2 },
            { le: 10, count: 3 },
          ],
        },
      ],
      [
        { api: 'dvr-net' },
        {
          count: 1,
          sum: 2,
          buckets: [
            { le: 0.1, count: 0 },
            { le: 1, count: 0 },
            { le: 10, count: 1 },
          ],
        },
      ],
    ]);
    for (const m of h.metrics) expect(m.created).toBeCloseTo(STARTED / 1000, 6);
  });

  it('gives a summary its count and sum, and a gauge its value without a start', async () => {
    const r = registry();
    r.sizes.observe(100);
    r.sizes.observe(300);
    r.queue.set(-2.5);
    const families = decodeProtobuf(await registryToProtobuf(r.registry, STARTED));
    expect(families.find((f) => f.name === 'x_size_bytes')!.metrics[0]!.summary).toEqual({
      count: 2,
      sum: 400,
    });
    const gauge = families.find((f) => f.name === 'x_queue_length')!.metrics[0]!;
    expect(gauge.gauge).toBe(-2.5);
    expect(gauge.created).toBeUndefined();
  });

  it('is empty for a registry without a series', async () => {
    expect((await registryToProtobuf(new Registry(), STARTED)).length).toBe(0);
    const r = new Registry();
    new Counter({ name: 'x_never_total', help: 'h', labelNames: ['api'], registers: [r] });
    expect((await registryToProtobuf(r, STARTED)).length).toBe(0);
  });
});
