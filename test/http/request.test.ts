/**
 * The request helper against a bare node:http server on loopback, for what the simulator does not do: Retry-After
 * dates, a server that never answers, a body cut off, a refused connection, a server that echoes the token.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError, parseRetryAfter } from '../../src/http/errors.js';
import { buildQuery, HttpClient, type HttpClientOptions, reportingSends } from '../../src/http/request.js';
import { apiFailure, expectNoSecret } from '../helpers/api-errors.js';
import { FakeClock } from '../helpers/fake-clock.js';

const TOKEN = 'tok-SECRET-4f9a2c';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

let server: Server | undefined;
let client: HttpClient | undefined;

afterEach(async () => {
  await client?.close();
  client = undefined;
  if (server) {
    const s = server;
    server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

async function serve(handler: Handler): Promise<string> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => handler(req, res, body));
  });
  server = s;
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

function make(baseUrl: string, extra: Partial<HttpClientOptions> = {}): HttpClient {
  client = new HttpClient({ baseUrl, token: () => TOKEN, ...extra });
  return client;
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

describe('request', () => {
  it('sends the token as CDN-AUTH-TOKEN, JSON bodies, and repeated or bare query parameters', async () => {
    let seen:
      | { headers: IncomingMessage['headers']; url?: string; method?: string; body: string }
      | undefined;
    const base = await serve((req, res, body) => {
      seen = { headers: req.headers, url: req.url, method: req.method, body };
      json(res, 200, { ok: true });
    });
    const http = make(`${base}/prefix/`);
    const res = await http.request({
      api: 'recorder-cloud',
      method: 'PATCH',
      path: '/x/y',
      query: [
        ['metric', 'a'],
        ['metric', 'b c'],
        ['all', null],
      ],
      json: { action: 'stop' },
    });
    expect(res).toEqual({ status: 200, body: { ok: true } });
    expect(seen?.headers['cdn-auth-token']).toBe(TOKEN);
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.method).toBe('PATCH');
    expect(seen?.url).toBe('/prefix/x/y?metric=a&metric=b%20c&all');
    expect(JSON.parse(seen!.body)).toEqual({ action: 'stop' });
  });

  it('reads the token on every request (rotation needs no restart)', async () => {
    const tokens: string[] = [];
    const base = await serve((req, res) => {
      tokens.push(String(req.headers['cdn-auth-token']));
      res.writeHead(200).end();
    });
    let current = 'first-token';
    client = new HttpClient({ baseUrl: base, token: () => current });
    expect((await client.request({ api: 'metrics', method: 'GET', path: '/' })).body).toBeUndefined();
    current = 'second-token';
    await client.request({ api: 'metrics', method: 'GET', path: '/' });
    expect(tokens).toEqual(['first-token', 'second-token']);
  });

  it('reports every request to onRequest with its status code or "error"', async () => {
    const base = await serve((req, res) => {
      if (req.url === '/cut') req.socket.destroy();
      else json(res, req.url === '/ok' ? 200 : 503, {});
    });
    const seen: [string, string, number][] = [];
    const http = make(base, { onRequest: (api, code, s) => seen.push([api, code, s]) });
    await http.request({ api: 'metrics', method: 'GET', path: '/ok' });
    await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path: '/no' }));
    await apiFailure(http.request({ api: 'recorder-cloud', method: 'GET', path: '/cut' }));
    expect(seen.map(([api, code]) => [api, code])).toEqual([
      ['metrics', '200'],
      ['dvr-net', '503'],
      ['recorder-cloud', 'error'],
    ]);
    for (const [, , seconds] of seen) {
      expect(seconds).toBeGreaterThanOrEqual(0);
      expect(seconds).toBeLessThan(10);
    }
  });

  it('maps Retry-After in seconds and as an HTTP date against the injected clock', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0));
    const base = await serve((req, res) => {
      const after = req.url === '/date' ? new Date(Date.UTC(2026, 0, 1, 12, 0, 30)).toUTCString() : '7';
      json(res, 429, { description: 'Too many requests' }, { 'retry-after': after });
    });
    const http = make(base, { clock });
    const bySeconds = await apiFailure(http.request({ api: 'metrics', method: 'GET', path: '/secs' }));
    expect(bySeconds).toMatchObject({
      kind: 'rate-limited',
      status: 429,
      retryable: true,
      retryAfterMs: 7000,
    });
    expect(bySeconds.description).toBe('Too many requests');
    const byDate = await apiFailure(http.request({ api: 'metrics', method: 'GET', path: '/date' }));
    expect(byDate.retryAfterMs).toBe(30_000);
  });

  it('gives a network error for a refused connection', async () => {
    const base = await serve((_req, res) => res.end());
    const s = server!;
    server = undefined;
    await new Promise<void>((resolve) => s.close(() => resolve()));
    const err = await apiFailure(make(base).request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(err).toMatchObject({ kind: 'network', status: undefined, retryable: true, code: 'ECONNREFUSED' });
    expectNoSecret(err, [TOKEN]);
  });

  it('tells reportingSends when each request was written, before the server saw it; nothing for a refused one', async () => {
    const events: string[] = [];
    const base = await serve((req, res) => {
      events.push(`arrived ${req.url}`);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
    const c = make(base);
    const get = (path: string) => c.request({ api: 'metrics', method: 'GET', path });
    await reportingSends(
      () => events.push('written /a'),
      () => get('/a'),
    );
    await get('/b'); // outside: nothing reported
    await reportingSends(
      () => events.push('written /c'),
      async () => {
        await new Promise((r) => setImmediate(r)); // the context survives awaits before the request
        return get('/c');
      },
    );
    expect(events).toEqual(['written /a', 'arrived /a', 'arrived /b', 'written /c', 'arrived /c']);

    await c.close();
    const s = server!;
    server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
    let written = 0;
    await apiFailure(
      reportingSends(
        () => written++,
        () => make(base).request({ api: 'metrics', method: 'GET', path: '/' }),
      ),
    );
    expect(written).toBe(0);
  });

  it('hands a 2xx body to decode; its failure is malformed with the status, the token scrubbed', async () => {
    const base = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(`{"echo": "${TOKEN}"}`);
    });
    const c = make(base);
    const get = (decode: (bytes: Uint8Array) => Promise<unknown>) =>
      c.request({ api: 'metrics', method: 'GET', path: '/x', decode });
    const ok = await get(async (bytes) => ({ length: bytes.byteLength }));
    expect(ok).toEqual({ status: 200, body: { length: TOKEN.length + 12 } });

    const thrown = await apiFailure(
      get(async (bytes) => {
        throw new Error(`cannot read ${new TextDecoder().decode(bytes)}`);
      }),
    );
    expect(thrown).toMatchObject({ kind: 'malformed', status: 200, endpoint: 'GET /x', retryable: true });
    expect(thrown.detail).toContain('cannot read');
    expectNoSecret(thrown, [TOKEN]);
    expect(thrown.detail).not.toContain(TOKEN);

    const apiError = await apiFailure(
      get(async () => {
        throw new ApiError({ api: 'metrics', kind: 'malformed', detail: `top level holds ${TOKEN}` });
      }),
    );
    expect(apiError).toMatchObject({ kind: 'malformed', status: 200, endpoint: 'GET /x' });
    expect(apiError.message).toContain('top level holds <redacted>');
    expectNoSecret(apiError, [TOKEN]);
  });

  it('gives a network error when the server never answers within headersTimeout', async () => {
    const base = await serve(() => {
      // never answers
    });
    const http = make(base, { headersTimeoutMs: 150 });
    const err = await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path: '/' }));
    expect(err).toMatchObject({ kind: 'network', status: undefined, retryable: true });
    expect(err.code).toBe('UND_ERR_HEADERS_TIMEOUT');
  });

  it('gives a network error when the body breaks off after the headers', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":[');
      setImmediate(() => res.socket?.destroy());
    });
    const err = await apiFailure(make(base).request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(err).toMatchObject({ kind: 'network', retryable: true });
    expect(err.message).toContain('after 200');
  });

  it('gives a network error when a 2xx body trickles past api.timeout (the whole answer has one deadline)', async () => {
    let timer: NodeJS.Timeout | undefined;
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const text = '{"data":[]}'.padEnd(200, ' ');
      let i = 0;
      // One byte every 20 ms: never idle for the per-chunk body timeout, never done within the deadline.
      timer = setInterval(() => {
        if (i < text.length) res.write(text[i++]!);
        else res.end();
      }, 20);
    });
    const err = await apiFailure(
      make(base, { timeoutMs: 300, bodyTimeoutMs: 10_000 }).request({
        api: 'metrics',
        method: 'GET',
        path: '/',
      }),
    );
    clearInterval(timer);
    expect(err).toMatchObject({ kind: 'network', retryable: true });
    expect(err.code).toBe('ANSWER_TIMEOUT');
    // The body takes 4 s and is never idle 10 s: only the 300 ms deadline of the whole answer can end it so.
    expect(err.message).toContain('whole answer not received within 300ms');
  });

  it('gives the same network error for a gzip body trickled past api.timeout, not a decoding error', async () => {
    let timer: NodeJS.Timeout | undefined;
    const zipped = gzipSync(Buffer.from(JSON.stringify({ data: Array(200).fill({ a: 1 }) })));
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      let i = 0;
      timer = setInterval(() => {
        if (i < zipped.length) res.write(zipped.subarray(i, ++i));
        else res.end();
      }, 20);
    });
    const err = await apiFailure(
      make(base, { timeoutMs: 300 }).request({ api: 'metrics', method: 'GET', path: '/' }),
    );
    clearInterval(timer);
    expect(err).toMatchObject({ kind: 'network', code: 'ANSWER_TIMEOUT' });
  });

  it('refuses a body over maxBodyBytes as too_large without reading it whole', async () => {
    let written = 0;
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      // 8 MiB unless the client stops reading first.
      const pump = () => {
        while (written < 8 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    const err = await apiFailure(
      make(base, { maxBodyBytes: 100_000 }).request({ api: 'metrics', method: 'GET', path: '/' }),
    );
    expect(err).toMatchObject({ kind: 'too_large', status: 200, retryable: true, api: 'metrics' });
    expect(err.message).toContain('more than 100000 bytes');
  });

  it('asks for gzip, deflate and br and decodes each; a body that does not decode is malformed', async () => {
    const doc = { data: [{ resource: 'r1', edge_bandwidth: 12 }] };
    const encoders: Record<string, (b: Buffer) => Buffer> = {
      compress: (b) => b,
      gzip: (b) => gzipSync(b),
      deflate: (b) => deflateSync(b),
      br: (b) => brotliCompressSync(b),
    };
    let accept: string | undefined;
    let encoding = 'gzip';
    const base = await serve((req, res) => {
      accept = req.headers['accept-encoding'];
      const corrupt = encoding === 'corrupt';
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': corrupt ? 'gzip' : encoding,
      });
      res.end(
        corrupt ? Buffer.from('not gzip at all') : encoders[encoding]!(Buffer.from(JSON.stringify(doc))),
      );
    });
    const http = make(base);
    for (const e of ['gzip', 'deflate', 'br']) {
      encoding = e;
      const res = await http.request({ api: 'metrics', method: 'GET', path: '/' });
      expect(res.body).toEqual(doc);
    }
    expect(accept).toBe('gzip, deflate, br');
    encoding = 'corrupt';
    const err = await apiFailure(http.request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(err).toMatchObject({ kind: 'malformed', status: 200 });
    expect(err.message).toContain('does not decode as content-encoding gzip');
    encoding = 'compress';
    const odd = await apiFailure(http.request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(odd).toMatchObject({ kind: 'malformed', status: 200 });
    expect(odd.message).toContain('unsupported content-encoding "compress"');
  });

  it('keeps the kind of an error status whose body is too big or does not decode', async () => {
    let encoding = 'gzip';
    const base = await serve((_req, res) => {
      res.writeHead(503, {
        'content-type': 'application/json',
        'content-encoding': encoding,
        'retry-after': '7',
      });
      res.end(encoding === 'gzip' ? Buffer.from('not gzip') : Buffer.alloc(200_000, 0x20));
    });
    const http = make(base, { maxBodyBytes: 100_000 });
    const undecodable = await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path: '/' }));
    expect(undecodable).toMatchObject({ kind: 'server', status: 503, retryAfterMs: 7000 });
    encoding = 'identity';
    const big = await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path: '/' }));
    expect(big).toMatchObject({ kind: 'server', status: 503 });
  });

  it('applies maxBodyBytes to the decoded size too (a gzip bomb is too_large)', async () => {
    // 50 MB of spaces compress to about 50 kB.
    const bomb = gzipSync(Buffer.alloc(50_000_000, 0x20));
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(bomb);
    });
    const err = await apiFailure(
      make(base, { maxBodyBytes: 1_000_000 }).request({ api: 'metrics', method: 'GET', path: '/' }),
    );
    expect(bomb.length).toBeLessThan(1_000_000);
    expect(err).toMatchObject({ kind: 'too_large', status: 200 });
    expect(err.message).toContain('decoded');
  });

  it('gives malformed with the status for a 2xx body that is not JSON', async () => {
    const base = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":[{"edge_');
    });
    const err = await apiFailure(make(base).request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(err).toMatchObject({ kind: 'malformed', status: 200, retryable: true, api: 'metrics' });
  });

  it('does not follow redirects (the token would go elsewhere)', async () => {
    let hits = 0;
    const base = await serve((req, res) => {
      hits++;
      res.writeHead(302, { location: `${req.url}/elsewhere` }).end();
    });
    const err = await apiFailure(make(base).request({ api: 'metrics', method: 'GET', path: '/' }));
    expect(hits).toBe(1);
    expect(err.status).toBe(302);
    expect(err.retryable).toBe(false);
  });

  it('scrubs the token from text an upstream echoes back', async () => {
    const base = await serve((req, res) => {
      const t = String(req.headers['cdn-auth-token']);
      if (req.url === '/json') json(res, 403, { status: 'Forbidden', description: `token ${t} is invalid` });
      else if (req.url === '/hosts') json(res, 500, { status: 'Failed', failed_hosts: [`h-${t}`] });
      else res.writeHead(401, { 'content-type': 'text/plain' }).end(`Invalid token ${t}`);
    });
    const http = make(base);
    for (const path of ['/json', '/hosts', '/text']) {
      const err = await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path }));
      expectNoSecret(err, [TOKEN]);
    }
    const err = await apiFailure(http.request({ api: 'dvr-net', method: 'GET', path: '/json' }));
    expect(err.description).toBe('token <redacted> is invalid');
  });

  it.each([
    [400, 'invalid', false],
    [401, 'auth', false],
    [403, 'auth', false],
    [404, 'invalid', false],
    [405, 'invalid', false],
    [409, 'invalid', false],
    [418, 'invalid', false],
    [422, 'invalid', false],
    [429, 'rate-limited', true],
    [500, 'server', true],
    [501, 'server', true],
    [502, 'server', true],
    [503, 'server', true],
    [504, 'timeout', true],
  ] as const)('status %i is kind %s (retryable %s), the token absent', async (status, kind, retryable) => {
    const base = await serve((_req, res) => json(res, status, { description: `said ${status}` }));
    const err = await apiFailure(make(base).request({ api: 'metrics', method: 'GET', path: '/a' }));
    expect(err).toMatchObject({ status, kind, retryable, description: `said ${status}`, endpoint: 'GET /a' });
    expect(err.message).toContain(String(status));
    expectNoSecret(err, [TOKEN]);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  it.each([
    ['0', 0],
    ['120', 120_000],
    ['1.5', 1500],
    [new Date(now + 90_000).toUTCString(), 90_000],
    [new Date(now - 90_000).toUTCString(), 0],
    ['-5', undefined],
    ['soon', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%s -> %s', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });
});

describe('buildQuery', () => {
  it('is empty without parameters and encodes keys and values', () => {
    expect(buildQuery([])).toBe('');
    expect(buildQuery([['resource', 'a&b=c']])).toBe('?resource=a%26b%3Dc');
  });
});
