/**
 * A loopback proxy in front of the simulator that can rewrite answers: an upstream that drops a host, or answers
 * a body of the wrong shape, without touching the simulator's internals. Everything it does not rewrite passes
 * through unchanged (method, path, query, token header, JSON body; status, Content-Type, Retry-After).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** Path without the query string, as sent (still URL-encoded). */
  path: string;
}

export interface ProxiedAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** Returns the answer to send instead, or undefined to pass the upstream's answer on. */
export type Tamper = (req: ProxiedRequest, upstream: ProxiedAnswer) => ProxiedAnswer | undefined;

export interface TamperProxy {
  url: string;
  /** The current rewrite; set to undefined to pass everything through. */
  tamper: Tamper | undefined;
  /** Requests the tamper rewrote. */
  rewritten: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startTamperProxy(target: string): Promise<TamperProxy> {
  const proxy: TamperProxy = {
    url: '',
    tamper: undefined,
    rewritten: 0,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const body = await readBody(req);
        const headers: Record<string, string> = {};
        for (const name of ['cdn-auth-token', 'content-type']) {
          const v = req.headers[name];
          if (typeof v === 'string') headers[name] = v;
        }
        const up = await fetch(`${target}${req.url ?? '/'}`, {
          method: req.method,
          headers,
          body: body.length > 0 ? body : undefined,
        });
        const answer: ProxiedAnswer = {
          status: up.status,
          contentType: up.headers.get('content-type') ?? '',
          body: await up.text(),
        };
        const path = (req.url ?? '/').split('?')[0]!;
        const changed = proxy.tamper?.({ method: req.method ?? 'GET', path }, answer);
        if (changed) proxy.rewritten++;
        const out = changed ?? answer;
        const outHeaders: Record<string, string> = {};
        if (out.contentType) outHeaders['content-type'] = out.contentType;
        const retryAfter = up.headers.get('retry-after');
        if (retryAfter !== null && !changed) outHeaders['retry-after'] = retryAfter;
        res.writeHead(out.status, outHeaders);
        res.end(out.body);
      } catch {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('proxy failed');
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  proxy.url = `http://127.0.0.1:${port}`;
  proxy.close = () =>
    new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    });
  return proxy;
}

/** A JSON answer with status 200, for tampers. */
export function json(body: unknown, status = 200): ProxiedAnswer {
  return { status, contentType: 'application/json', body: JSON.stringify(body) };
}
