import express from 'express';
import { Counter, register as globalRegistry, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets } from '../../src/redact.js';
import { textToOpenMetrics } from '../../src/server/exposition.js';
import { escapeHtml, formatDuration } from '../../src/server/landing.js';
import { acceptsGzip, negotiateFormat } from '../../src/server/negotiate.js';
import { createSelfMetrics, REQUEST_DURATION_BUCKETS } from '../../src/server/self-metrics.js';
import { listen, type Running, request } from './http.js';

/** An express app answering what the negotiation decided for each request, exactly as the headers were sent. */
let negotiated: Running;
beforeAll(async () => {
  const app = express();
  app.get('/', (req, res) => {
    res.json({ format: negotiateFormat(req), gzip: acceptsGzip(req) });
  });
  negotiated = await listen(app);
});
afterAll(() => negotiated.close());

async function negotiate(headers: Record<string, string | undefined>) {
  const sent = Object.fromEntries(
    Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const res = await request(negotiated.url, { headers: sent });
  return JSON.parse(res.body.toString('utf8')) as { format: string; gzip: boolean };
}

describe('negotiateFormat', () => {
  it.each([
    [undefined, 'text'],
    ['', 'text'],
    ['*/*', 'text'],
    ['text/plain', 'text'],
    // Prometheus 2.x default
    [
      'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      'openmetrics',
    ],
    // scrape_protocols: [PrometheusText0.0.4, OpenMetricsText1.0.0]
    ['text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,*/*;q=0.1', 'text'],
    // Prometheus 3 with protobuf first
    [
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2',
      'protobuf',
    ],
    // Prometheus 2.53 with --enable-feature=created-timestamp-zero-ingestion (protobuf first)
    [
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
      'protobuf',
    ],
    [
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.2',
      'protobuf',
    ],
    // Another protobuf message or encoding is not what we write
    [
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text,text/plain;q=0.1',
      'text',
    ],
    ['application/vnd.google.protobuf;proto=other.Message;encoding=delimited,text/plain;q=0.1', 'text'],
    ['application/openmetrics-text', 'openmetrics'],
    ['application/openmetrics-text; version="1.0.0"', 'openmetrics'],
    ['application/openmetrics-text;version=2.0.0', 'text'],
    ['application/openmetrics-text;q=0, text/plain', 'text'],
    ['application/openmetrics-text;q=0.1,*/*', 'text'],
    ['*/*;q=0.5, application/openmetrics-text;q=0.5', 'openmetrics'],
    // Prometheus 3's defaults and its other escaping schemes
    [
      'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
      'openmetrics',
    ],
    [
      'application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.5,text/plain;version=0.0.4;q=0.2',
      'openmetrics',
    ],
    [
      'text/plain;version=0.0.4;escaping=underscores;q=0.5,application/openmetrics-text;version=1.0.0;q=0.2',
      'text',
    ],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'text'],
    ['text/*, application/openmetrics-text;q=0.9', 'text'],
    ['application/json', 'text'],
  ])('%s -> %s', async (accept, format) => {
    expect((await negotiate({ accept })).format).toBe(format);
  });
});

describe('acceptsGzip', () => {
  it.each([
    [undefined, false],
    ['identity', false],
    ['gzip', true],
    ['deflate, gzip;q=1.0, *;q=0.5', true],
    ['gzip;q=0', false],
    ['*', true],
    ['*;q=0', false],
    ['br, *;q=0.1', true],
    ['gzip;q=0, *', false],
  ])('%s -> %s', async (header, expected) => {
    expect((await negotiate({ 'accept-encoding': header })).gzip).toBe(expected);
  });
});

describe('redactSecrets', () => {
  const secret = 'a1b2/c3+d4=e5&f6';
  it('replaces the secret verbatim, URL-encoded and JSON-escaped, every time it occurs', () => {
    const text = `x ${secret} y ${encodeURIComponent(secret)} z ${secret} {"t":${JSON.stringify(`q"${secret}`)}}`;
    const out = redactSecrets(text, [secret]);
    expect(out).not.toContain(secret);
    expect(out).not.toContain(encodeURIComponent(secret));
    expect(out.split(REDACTED)).toHaveLength(5);
    expect(out.startsWith('x <redacted> y <redacted> z')).toBe(true);
  });
  it('replaces a secret that contains another one whole', () => {
    expect(redactSecrets('key=abcdefgh12', ['abcd', 'abcdefgh12'])).toBe(`key=${REDACTED}`);
  });
  it('leaves text alone when there is nothing to hide, and ignores empty secrets', () => {
    expect(redactSecrets('503 Service Unavailable', ['', 'zzzzzz'])).toBe('503 Service Unavailable');
  });
});

describe('landing helpers', () => {
  it('escapes the five HTML specials', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;',
    );
  });
  it('formats durations', () => {
    expect(formatDuration(12)).toBe('12s');
    expect(formatDuration(330)).toBe('5m 30s');
    expect(formatDuration(3723)).toBe('1h 2m 3s');
    expect(formatDuration(90_000)).toBe('1d 1h 0m');
    expect(formatDuration(-1)).toBe('-');
  });
});

describe('textToOpenMetrics', () => {
  it('renames counter families, drops blank lines and escapes quotes in HELP', async () => {
    const registry = new Registry();
    const c = new Counter({
      name: 'jobs_total',
      help: 'Jobs "done"\nsecond line \\ backslash',
      labelNames: ['kind'],
      registers: [registry],
    });
    c.inc({ kind: 'a"b' }, 3);
    new Counter({ name: 'bare', help: 'no suffix', registers: [registry] }).inc();
    const om = textToOpenMetrics(await registry.metrics());
    expect(om).toBe(
      [
        '# HELP jobs Jobs \\"done\\"\\nsecond line \\\\ backslash',
        '# TYPE jobs counter',
        'jobs_total{kind="a\\"b"} 3',
        '# HELP bare no suffix',
        '# TYPE bare counter',
        'bare_total 1',
        '',
      ].join('\n'),
    );
  });
});

describe('createSelfMetrics', () => {
  function make() {
    const registry = new Registry();
    const m = createSelfMetrics(registry, { version: '9.9.9', apis: ['metrics'], defaultMetrics: false });
    return { registry, m };
  }

  it('registers the documented names on the given registry only', async () => {
    const globalBefore = globalRegistry.getMetricsAsArray().length;
    const { registry } = make();
    const names = registry.getMetricsAsArray().map((x) => (x as unknown as { name: string }).name);
    expect(names.sort()).toEqual(
      [
        'cdn_up',
        'cdn_api_requests_total',
        'cdn_api_request_duration_seconds',
        'cdn_api_queue_length',
        'cdn_exporter_last_success_timestamp_seconds',
        'cdn_exporter_parse_errors_total',
        'cdn_exporter_build_info',
        'cdn_series_refused_total',
        'cdn_exporter_state_save_failures_total',
        'cdn_exporter_secret_label_values_total',
      ].sort(),
    );
    expect(globalRegistry.getMetricsAsArray().length).toBe(globalBefore);
    const text = await registry.metrics();
    expect(text).toContain('cdn_exporter_build_info{version="9.9.9"} 1');
    expect(text).toContain('cdn_exporter_parse_errors_total{api="metrics"} 0');
    expect(text).toContain('cdn_api_request_duration_seconds_count{api="metrics"} 0');
  });

  it('has HTTP-sized histogram buckets from 50 ms to 30 s', () => {
    expect(REQUEST_DURATION_BUCKETS[0]).toBe(0.05);
    expect(REQUEST_DURATION_BUCKETS.at(-1)).toBe(30);
    expect([...REQUEST_DURATION_BUCKETS].sort((a, b) => a - b)).toEqual(REQUEST_DURATION_BUCKETS);
  });

  it('records requests and poll results, and removes an account', async () => {
    const { registry, m } = make();
    m.observeRequest('metrics', 200, 0.2);
    m.observeRequest('metrics', 'error', 31);
    m.setPollResult('metrics', 'acme', true, 1_767_225_600_000);
    m.setPollResult('metrics', 'globex', false, 1_767_225_600_000);
    let text = await registry.metrics();
    expect(text).toContain('cdn_api_requests_total{api="metrics",code="200"} 1');
    expect(text).toContain('cdn_api_requests_total{api="metrics",code="error"} 1');
    expect(text).toContain('cdn_api_request_duration_seconds_bucket{le="0.25",api="metrics"} 1');
    expect(text).toContain('cdn_api_request_duration_seconds_bucket{le="+Inf",api="metrics"} 2');
    expect(text).toContain('cdn_up{api="metrics",account="acme"} 1');
    expect(text).toContain('cdn_up{api="metrics",account="globex"} 0');
    expect(text).toContain(
      'cdn_exporter_last_success_timestamp_seconds{api="metrics",account="acme"} 1767225600',
    );
    expect(text).not.toContain('cdn_exporter_last_success_timestamp_seconds{api="metrics",account="globex"}');

    m.removeAccount('metrics', 'acme');
    text = await registry.metrics();
    expect(text).not.toContain('account="acme"');
    expect(text).toContain('cdn_up{api="metrics",account="globex"} 0');
  });

  it('reads the queue length at each scrape', async () => {
    const { registry, m } = make();
    let n = 3;
    m.trackQueueLength(() => n);
    expect(await registry.metrics()).toMatch(/^cdn_api_queue_length 3$/m);
    n = 7;
    expect(await registry.metrics()).toMatch(/^cdn_api_queue_length 7$/m);
  });

  it('adds the process and Node.js defaults without the *_total gauges promtool rejects', async () => {
    const registry = new Registry();
    createSelfMetrics(registry, { version: '1' });
    const text = await registry.metrics();
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_active_handles gauge');
    expect(text).not.toMatch(/^# TYPE \S+_total gauge$/m);
  });
});
