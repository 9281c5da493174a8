/**
 * Start (created) timestamps of /metrics in OpenMetrics and protobuf (issue 33, smaller items): a histogram has its
 * `_created` sample in OpenMetrics as it has `created_timestamp` in protobuf, and both formats name the same
 * instant for every counter and histogram, the exporter's own (prom-client's, started at the process start, here
 * a fake clock 123 ms past a whole second) and the series store's.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { createApp } from '../../src/server/app.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { SeriesStore } from '../../src/store/series-store.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { decodeProtobuf } from '../helpers/protobuf.js';
import { listen, type Running, request } from './http.js';

const OPENMETRICS = 'application/openmetrics-text;version=1.0.0';
const PROTOBUF = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited';
/** The process start: not a whole second. */
const STARTED = Date.UTC(2026, 2, 2, 12, 0, 0) + 123;

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

async function start(): Promise<string> {
  const clock = new FakeClock(STARTED);
  const registry = new Registry();
  const self = createSelfMetrics(registry, { version: 'x', apis: ['metrics'], defaultMetrics: false });
  self.observeRequest('metrics', 200, 0.3);
  self.observeRequest('metrics', 500, 2);
  self.parseErrors.inc({ api: 'metrics' }, 2);
  const store = new SeriesStore({ clock });
  const edge = store.family({
    name: 'cdn_edge_requests_total',
    help: 'Requests.',
    type: 'counter',
    labelNames: ['account'],
  });
  edge.add(edge.slot(['acme'], STARTED - 3_600_000 - 456), 7);
  const app = createApp({
    registry,
    store,
    status: () => ({
      ready: true,
      version: 'x',
      startedAt: new Date(STARTED),
      accounts: [],
      problems: { dvr: [], recordings: [] },
    }),
    log: silentLogger,
    clock,
  });
  const r = await listen(app);
  running.push(r);
  return r.url;
}

/** `name{labels}` -> value of every `_created` sample of an OpenMetrics body. */
function createdSamples(body: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of body.split('\n')) {
    const m = /^(\w+)_created(\{[^}]*\})? (\S+)$/.exec(line);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

describe('created timestamps in OpenMetrics and protobuf', () => {
  it('a histogram has one `_created` per label set in OpenMetrics, after its `_count`', async () => {
    const url = await start();
    const body = (await request(`${url}/metrics`, { headers: { accept: OPENMETRICS } })).body.toString();
    const lines = body.split('\n');
    const created = lines.filter((l) => l.startsWith('cdn_api_request_duration_seconds_created'));
    expect(created).toEqual([
      `cdn_api_request_duration_seconds_created{api="metrics"} ${Math.floor(STARTED / 1000)}`,
    ]);
    const at = lines.indexOf(created[0]!);
    expect(lines[at - 1]).toMatch(/^cdn_api_request_duration_seconds_count\{api="metrics"\} 2$/);
    expect(body.endsWith('# EOF\n')).toBe(true);
  });

  it('every counter and histogram starts at the same instant in both formats', async () => {
    const url = await start();
    const om = createdSamples(
      (await request(`${url}/metrics`, { headers: { accept: OPENMETRICS } })).body.toString(),
    );
    const families = decodeProtobuf(
      (await request(`${url}/metrics`, { headers: { accept: PROTOBUF } })).body,
    );
    const fromProtobuf = new Map<string, number>();
    for (const f of families) {
      if (f.type !== 'counter' && f.type !== 'histogram') continue;
      const name = f.type === 'counter' ? f.name.replace(/_total$/, '') : f.name;
      for (const m of f.metrics) {
        const labels = Object.entries(m.labels)
          .map(([k, v]) => `${k}="${v}"`)
          .join(',');
        fromProtobuf.set(`${name}${labels ? `{${labels}}` : ''}`, m.created!);
      }
    }
    expect(fromProtobuf.get('cdn_api_request_duration_seconds{api="metrics"}')).toBe(
      Math.floor(STARTED / 1000),
    );
    expect(fromProtobuf.get('cdn_edge_requests{account="acme"}')).toBe(
      Math.floor((STARTED - 3_600_000 - 456) / 1000),
    );
    expect(fromProtobuf.size).toBeGreaterThanOrEqual(4);
    expect(om).toEqual(fromProtobuf);
  });
});
