import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, silentLogger } from '../../src/log.js';
import { createApp, type ExporterStatus } from '../../src/server/app.js';
import { createSelfMetrics } from '../../src/server/self-metrics.js';
import { SeriesStore } from '../../src/store/series-store.js';
import type { Exposition } from '../../src/store/types.js';
import { CountingLedger } from '../../src/traffic/counting-ledger.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';
import { FakeExposition, sampleFamilies } from '../helpers/fake-exposition.js';
import { waitFor } from '../helpers/stack.js';
import { findTool } from '../helpers/tools.js';
import { listen, type Running, request } from './http.js';

/** What Prometheus 2.x sends by default. */
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const SECRET = 'tok-9f8e7d6c5b4a3921';
const SECRET2 = 'other/secret+value=&1';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

function statusFixture(clock: FakeClock, over: Partial<ExporterStatus> = {}): ExporterStatus {
  const now = clock.now();
  return {
    ready: true,
    version: '1.2.3',
    startedAt: new Date(now - 3_600_000),
    accounts: [
      {
        name: 'acme',
        api: 'metrics',
        up: true,
        cursor: new Date(now - 330_000),
        lagSeconds: 330,
        windowMinutes: 5,
        lastSuccess: new Date(now - 12_000),
      },
      {
        name: 'globex',
        api: 'dvr',
        up: false,
        lastError: `403 <script>alert("x")</script> token ${SECRET} rejected; url ?t=${encodeURIComponent(SECRET2)}`,
      },
    ],
    problems: {
      dvr: [{ account: 'acme', stream: 'live/main', host: 'edge-1', problem: 'not alive' }],
      recordings: [{ account: 'acme', id: '42', status: 'error', problem: `source <i>down</i> ${SECRET}` }],
    },
    ...over,
  };
}

interface Setup {
  app: ReturnType<typeof createApp>;
  registry: Registry;
  store: Exposition;
  clock: FakeClock;
  state: { status: ExporterStatus };
}

function setup(
  opts: { defaultMetrics?: boolean; store?: Exposition; status?: (s: Setup) => ExporterStatus } = {},
) {
  const clock = new FakeClock();
  const registry = new Registry();
  const self = createSelfMetrics(registry, {
    version: '1.2.3',
    apis: ['metrics', 'dvr', 'recordings'],
    defaultMetrics: opts.defaultMetrics ?? false,
  });
  self.setPollResult('metrics', 'acme', true, clock.now());
  self.setPollResult('dvr', 'globex', false, clock.now());
  self.observeRequest('metrics', 200, 0.3);
  self.observeRequest('dvr', 403, 0.07);
  self.observeRequest('dvr', 'error', 30);
  self.parseErrors.inc({ api: 'metrics' }, 2);
  const store = opts.store ?? new FakeExposition(sampleFamilies());
  const state = { status: statusFixture(clock) };
  const s = { registry, store, clock, state } as Setup;
  s.app = createApp({
    registry,
    store,
    status: () => state.status,
    log: silentLogger,
    secrets: () => [SECRET, SECRET2],
    clock,
  });
  return s;
}

async function start(s: Setup): Promise<Running> {
  const r = await listen(s.app);
  running.push(r);
  return r;
}

function typeNames(body: string): string[] {
  return body
    .split('\n')
    .filter((l) => l.startsWith('# TYPE '))
    .map((l) => l.split(' ')[2] ?? '');
}

describe('/metrics', () => {
  it('serves the classic text format by default: self metrics, then the store, each family once', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['content-encoding']).toBeUndefined();
    const body = res.body.toString();
    expect(body).toContain('cdn_exporter_build_info{version="1.2.3"} 1');
    expect(body).toContain('cdn_api_requests_total{api="dvr",code="error"} 1');
    expect(body).toContain('cdn_edge_requests_total{account="acme",resource="101"} 1234');
    expect(body.indexOf('cdn_up')).toBeLessThan(body.indexOf('cdn_edge_requests_total'));
    expect(body).not.toContain('# EOF');
    const names = typeNames(body);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('cdn_edge_cache_hit_ratio');
  });

  it('serves OpenMetrics when Prometheus asks for it, with one # EOF at the very end', async () => {
    const r = await start(setup({ defaultMetrics: true }));
    const res = await request(`${r.url}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    const body = res.body.toString();
    expect(body.endsWith('\n# EOF\n')).toBe(true);
    expect(body.match(/^# EOF$/gm)).toHaveLength(1);
    expect(body.split('\n').slice(0, -1)).not.toContain('');
    // Counter families are named without _total; their samples carry it (ours, the defaults' and the store's).
    expect(body).toContain('# TYPE cdn_api_requests counter');
    expect(body).toContain('cdn_api_requests_total{api="metrics",code="200"} 1');
    expect(body).toContain('# TYPE process_cpu_seconds counter');
    expect(body).toMatch(/^process_cpu_seconds_total [0-9.e+-]+$/m);
    expect(body).toContain('# TYPE cdn_edge_requests counter');
    expect(body).toContain('cdn_edge_requests_total{account="acme",resource="101"} 1234');
    const names = typeNames(body);
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((n) => n.endsWith('_total'))).toEqual([]);
  });

  it('keeps serving classic text after an OpenMetrics scrape (counter names are not altered)', async () => {
    const r = await start(setup());
    await request(`${r.url}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } });
    const body = (await request(`${r.url}/metrics`)).body.toString();
    expect(body).toContain('# TYPE cdn_api_requests_total counter');
  });

  for (const accept of [undefined, PROMETHEUS_ACCEPT]) {
    it(`gzips when asked, and the gzip decodes to the plain body (accept: ${accept ? 'openmetrics' : 'none'})`, async () => {
      const r = await start(setup());
      const headers: Record<string, string> = accept ? { accept } : {};
      const plain = await request(`${r.url}/metrics`, { headers });
      const gz = await request(`${r.url}/metrics`, {
        headers: { ...headers, 'accept-encoding': 'gzip, deflate' },
      });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers['content-type']).toBe(plain.headers['content-type']);
      expect(gz.headers.vary).toMatch(/Accept-Encoding/);
      expect(Number(gz.headers['content-length'])).toBe(gz.body.length);
      expect(gunzipSync(gz.body).toString()).toBe(plain.body.toString());
    });
  }

  it('does not gzip when gzip is refused', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/metrics`, { headers: { 'accept-encoding': 'gzip;q=0, identity' } });
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.body.toString()).toContain('cdn_up');
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const r = await start(setup());
    const get = await request(`${r.url}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } });
    const head = await request(`${r.url}/metrics`, {
      method: 'HEAD',
      headers: { accept: PROMETHEUS_ACCEPT },
    });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.headers['content-length']).toBe(String(get.body.length));
  });

  it('makes the counted cursors of the bytes it serves durable before sending them, and not for HEAD', async () => {
    const store = new SeriesStore();
    new CountingLedger(store).setCounted('acme', 1_800_000_000_000);
    const saved: string[] = [];
    let release: () => void = () => {};
    const app = createApp({
      registry: new Registry(),
      store,
      status: () => statusFixture(new FakeClock()),
      log: silentLogger,
      beforeServe: (counted) =>
        new Promise<void>((resolve) => {
          saved.push(JSON.stringify([...counted]));
          release = resolve;
        }),
    });
    const r = await start({ app } as Setup);
    await request(`${r.url}/metrics`, { method: 'HEAD' });
    expect(saved).toEqual([]);
    let answered = false;
    const get = request(`${r.url}/metrics`).then((res) => {
      answered = true;
      return res;
    });
    await waitFor(() => saved.length > 0, 10_000, 'the save to begin');
    expect(saved).toEqual([JSON.stringify([['acme', 1_800_000_000_000]])]);
    // Not one byte before the save returns: the server has since answered a request sent after the save began,
    // so an answer to /metrics that did not wait for the save would have been written first.
    expect((await request(`${r.url}/healthz`)).status).toBe(200);
    await settle();
    expect(answered).toBe(false);
    release();
    expect((await get).status).toBe(200);
  });

  it('uses the store cache it is given, rendering nothing of its own for the store part', async () => {
    const store = new FakeExposition(sampleFamilies());
    const r = await start(setup({ store }));
    await request(`${r.url}/metrics`);
    await request(`${r.url}/metrics`, { headers: { 'accept-encoding': 'gzip' } });
    expect(store.renders).toBe(2);
  });

  it('passes promtool check metrics, process defaults included', async (ctx) => {
    const promtool = findTool('promtool');
    if (!promtool) return ctx.skip();
    const r = await start(setup({ defaultMetrics: true }));
    const body = (await request(`${r.url}/metrics`)).body;
    const out = execFileSync(promtool, ['check', 'metrics'], {
      input: body,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out.trim()).toBe('');
  });

  it('refuses to start when a family is both in the registry and the store', () => {
    const store = new FakeExposition([
      ...sampleFamilies(),
      { name: 'cdn_up', help: 'dup', type: 'gauge', series: [] },
    ]);
    expect(() => setup({ store })).toThrow(/cdn_up/);
  });
});

describe('a scrape never waits on a poll', () => {
  it('answers /metrics, /readyz and / at once while an upstream API hangs and polls are in flight', async () => {
    // The "CDN": accepts the request and never answers.
    const hanging = http.createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const upstream = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
    const abort = new AbortController();
    try {
      const s = setup();
      s.state.status = statusFixture(s.clock, {
        ready: false,
        accounts: [{ name: 'acme', api: 'metrics', up: false }],
      });
      // A poll in flight: the app must not wait for it.
      const poll = fetch(`${upstream}/resources`, { signal: abort.signal }).catch(() => undefined);
      const r = await start(s);
      // The poll never ends until aborted below: that these are answered at all shows they did not wait for it.
      const [metrics, ready, landing] = await Promise.all([
        request(`${r.url}/metrics`, { timeoutMs: 20_000 }),
        request(`${r.url}/readyz`, { timeoutMs: 20_000 }),
        request(`${r.url}/`, { timeoutMs: 20_000 }),
      ]);
      expect(metrics.status).toBe(200);
      expect(metrics.body.toString()).toContain('cdn_edge_requests_total');
      expect(ready.status).toBe(503);
      expect(landing.status).toBe(200);
      abort.abort();
      await poll;
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  });
});

describe('/healthz and /readyz', () => {
  it('/healthz is 200 ok', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('ok\n');
  });

  it('/readyz is 503 with the accounts still waiting, then 200 once ready', async () => {
    const s = setup();
    s.state.status = statusFixture(s.clock, {
      ready: false,
      accounts: [
        { name: 'acme', api: 'metrics', up: true, lastSuccess: new Date(s.clock.now()) },
        { name: 'globex', api: 'recordings', up: false },
      ],
    });
    const r = await start(s);
    const before = await request(`${r.url}/readyz`);
    expect(before.status).toBe(503);
    expect(before.body.toString()).toMatch(/not ready/);
    expect(before.body.toString()).toContain('globex/recordings');
    expect(before.body.toString()).not.toContain('acme/metrics');
    s.state.status = statusFixture(s.clock);
    const after = await request(`${r.url}/readyz`);
    expect(after.status).toBe(200);
  });
});

describe('landing page', () => {
  it('links the endpoints and shows one row per account and API', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const html = res.body.toString();
    for (const p of ['/metrics', '/healthz', '/readyz']) expect(html).toContain(`href="${p}"`);
    expect(html).toMatch(
      /<tr><td>acme<\/td><td>metrics<\/td><td class="up">up<\/td><td class="ts">2025-12-31T23:54:30Z<\/td>/,
    );
    expect(html).toMatch(/<td class="num">5m 30s<\/td><td class="num">5m<\/td>/);
    expect(html).toMatch(/<tr><td>globex<\/td><td>dvr<\/td><td class="down">down<\/td>/);
    expect(html).toContain('live/main');
    expect(html).not.toMatch(/<link|<script|src=/i);
  });

  it('escapes HTML and never shows a token, even inside an error string', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/`, {
      headers: { 'x-probe': 'header-marker-77', 'user-agent': 'ua-marker-78' },
    });
    const html = res.body.toString();
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<i>down</i>');
    expect(html).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;');
    expect(html).not.toContain(SECRET);
    expect(html).not.toContain(encodeURIComponent(SECRET2));
    expect(html).not.toContain(SECRET2);
    // The marker is HTML too: escaped like every other text on the page.
    expect(html.match(/&#60;redacted&#62;/g)?.length).toBe(3);
    expect(html).not.toContain('header-marker-77');
    expect(html).not.toContain('ua-marker-78');
  });

  it('answers 500 without details when status() throws, and the log line holds no token', async () => {
    const lines: string[] = [];
    const dest = new PassThrough();
    dest.on('data', (c: Buffer) => lines.push(c.toString()));
    const registry = new Registry();
    createSelfMetrics(registry, { version: 'x', defaultMetrics: false });
    const app = createApp({
      registry,
      store: new FakeExposition([]),
      status: () => {
        throw new Error(`status broke for ${SECRET}`);
      },
      log: createLogger({ destination: dest, level: 'error' }),
      secrets: () => [SECRET],
    });
    const r = await listen(app);
    running.push(r);
    const res = await request(`${r.url}/`);
    expect(res.status).toBe(500);
    expect(res.body.toString()).toBe('internal error\n');
    expect((await request(`${r.url}/metrics`)).status).toBe(200);
    expect(lines.join('')).toContain('status broke');
    expect(lines.join('')).not.toContain(SECRET);
  });
});

describe('unknown paths and methods', () => {
  it('404 for an unknown path, as text', async () => {
    const r = await start(setup());
    const res = await request(`${r.url}/nope`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
  });

  it('matches paths exactly: /METRICS and /metrics/ are not /metrics (issue 25)', async () => {
    const r = await start(setup());
    for (const path of ['/METRICS', '/metrics/', '/Healthz', '/readyz/'])
      expect((await request(`${r.url}${path}`)).status, path).toBe(404);
    expect((await request(`${r.url}/metrics`)).status).toBe(200);
  });

  for (const [method, path] of [
    ['POST', '/metrics'],
    ['DELETE', '/'],
    ['PUT', '/healthz'],
    ['POST', '/readyz'],
  ] as const) {
    it(`405 with Allow for ${method} ${path}`, async () => {
      const r = await start(setup());
      const res = await request(`${r.url}${path}`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    });
  }
});

describe('the store bodies a scrape writes', () => {
  /** A store of `n` series, 70 bytes each; over 10 MB is more than loopback's socket buffers take in. */
  function bigStore(n = 50_000): { store: SeriesStore; bump: () => Promise<void>; body: () => Buffer } {
    const store = new SeriesStore();
    const f = store.family({
      name: 'cdn_edge_requests_total',
      help: 'Requests at the edge.',
      type: 'counter',
      labelNames: ['account', 'resource'],
    });
    for (let i = 0; i < n; i++) f.set(f.slot(['acme', `resource-${i}`]), i);
    const body = () => {
      const held = store.hold('text');
      held.release(true);
      return held.chunks.reduce((a, b) => (b.length > a.length ? b : a));
    };
    const bump = async () => {
      f.add(f.slot(['acme', 'resource-0']), 1);
      await store.refresh();
    };
    return { store, bump, body };
  }

  it('are freed at the next refresh once a scrape has sent them whole', async () => {
    const { store, bump, body } = bigStore();
    const s = setup({ store });
    const r = await start(s);
    const old = body();
    const res = await request(`${r.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toContain(
      'cdn_edge_requests_total{account="acme",resource="resource-49999"} 49999',
    );
    await bump();
    expect(old.buffer.byteLength).toBe(0);
    const next = await request(`${r.url}/metrics`);
    expect(next.body.toString()).toContain(
      'cdn_edge_requests_total{account="acme",resource="resource-0"} 1\n',
    );
  });

  it('are left to the GC when the scraper goes away before it has them all', async () => {
    // ~21 MB: the server's writes cannot all have left when the client hangs up.
    const { store, bump, body } = bigStore(300_000);
    const s = setup({ store });
    const r = await start(s);
    const old = body();
    const copy = Buffer.from(old);
    // A scraper that reads the headers, then nothing, then hangs up: Node may still hold writes of the body.
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${r.url}/metrics`, (res) => {
        res.pause();
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 50);
      });
      req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    });
    await bump();
    // The response's close comes after the client's hang-up: wait until the server has seen it.
    await waitFor(async () => (await r.connections()) === 0, 10_000, 'the server to see the hang-up');
    await settle();
    expect(old.length).toBe(copy.length);
    expect(old.equals(copy)).toBe(true);
  });
});
