/**
 * Express over HTTP/2 (src/web/bridge.ts): an Express app handed HTTP/2 requests through `http2Bridge` answers as
 * over HTTP/1.1 (params, query, headers, `req.app`, `res.set`/`status`/`json`, Express' own 404), and the app's
 * request and response prototypes are as they were after each request. On loopback, plain HTTP/2 (h2c) and HTTP/1.1.
 */
import http, { type Server } from 'node:http';
import http2, { type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import type { AnyRequest, AnyResponse } from '../../src/web/auth.js';
import { http2Bridge } from '../../src/web/bridge.js';

const servers: (Server | Http2Server)[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
});

function app() {
  const a = express();
  a.set('label', 'the app');
  a.get('/things/:id', (req, res) => {
    res
      .status(201)
      .set('x-echo', req.get('x-ask') ?? 'none')
      .json({
        id: req.params.id,
        q: req.query.q,
        label: req.app.get('label'),
        path: req.path,
        version: req.httpVersion,
      });
  });
  return a;
}

async function listen<S extends Server | Http2Server>(server: S): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function h2get(port: number, path: string) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await new Promise<{ status: number; echo: string | undefined; type: string; body: string }>(
      (resolve, reject) => {
        const req = session.request({ ':path': path, 'x-ask': 'hello' });
        let body = '';
        let head: http2.IncomingHttpHeaders = {};
        req.setEncoding('utf8');
        req.on('response', (h) => {
          head = h;
        });
        req.on('data', (chunk: string) => {
          body += chunk;
        });
        req.on('end', () =>
          resolve({
            status: Number(head[':status']),
            echo: head['x-echo'] as string | undefined,
            type: String(head['content-type']),
            body,
          }),
        );
        req.on('error', reject);
        // Bounded: without the bridge an HTTP/2 request is never answered.
        req.setTimeout(10_000, () => {
          req.close();
          reject(new Error(`no answer to ${path} within 10 s`));
        });
        req.end();
      },
    );
  } finally {
    session.destroy();
  }
}

describe('http2Bridge', () => {
  it('serves an Express app over HTTP/2 as over HTTP/1.1: params, query, headers, req.app, status and JSON', async () => {
    const a = app();
    const handler = http2Bridge(a);
    const h2port = await listen(
      http2.createServer((req, res) => handler(req as AnyRequest, res as AnyResponse)),
    );
    const h1port = await listen(
      http.createServer((req, res) => handler(req as AnyRequest, res as AnyResponse)),
    );

    const over2 = await h2get(h2port, '/things/42?q=a%20b');
    expect(over2.status).toBe(201);
    expect(over2.echo).toBe('hello');
    expect(over2.type).toMatch(/^application\/json/);
    expect(JSON.parse(over2.body)).toEqual({
      id: '42',
      q: 'a b',
      label: 'the app',
      path: '/things/42',
      version: '2.0',
    });

    const res = await fetch(`http://127.0.0.1:${h1port}/things/42?q=a%20b`, {
      headers: { 'x-ask': 'hello' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-echo')).toBe('hello');
    expect(await res.json()).toEqual({
      id: '42',
      q: 'a b',
      label: 'the app',
      path: '/things/42',
      version: '1.1',
    });
  });

  it("answers Express' own 404 over HTTP/2 for a path no route takes", async () => {
    const handler = http2Bridge(app());
    const port = await listen(
      http2.createServer((req, res) => handler(req as AnyRequest, res as AnyResponse)),
    );
    const missing = await h2get(port, '/nowhere');
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('Cannot GET /nowhere');
  });

  it("leaves the app's request and response prototypes as they were after HTTP/2 requests (HTTP/1.1 ones use them)", async () => {
    const a = app();
    const [request, response] = [a.request, a.response];
    const handler = http2Bridge(a);
    const port = await listen(
      http2.createServer((req, res) => handler(req as AnyRequest, res as AnyResponse)),
    );
    for (let i = 0; i < 3; i++) expect((await h2get(port, `/things/${i}`)).status).toBe(201);
    expect(a.request).toBe(request);
    expect(a.response).toBe(response);
  });
});
