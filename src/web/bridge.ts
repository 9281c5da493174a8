/**
 * Express 5 serves HTTP/1 only: `app.handle` re-parents each request and response onto prototypes built on
 * `http.IncomingMessage`/`http.ServerResponse`, which breaks Node's HTTP/2 compatibility objects. For an HTTP/2
 * request this hands Express the same methods (its `request`/`response` objects) on prototypes built on
 * `Http2ServerRequest`/`Http2ServerResponse` instead. Swapping `app.request`/`app.response` around the call is
 * safe: `app.handle` reads them synchronously, before anything can interleave.
 */
import { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import express, { type Express } from 'express';
import type { AnyRequest, AnyResponse, Handler } from './auth.js';

export function http2Bridge(app: Express): Handler {
  const own = { configurable: true, enumerable: true, writable: true, value: app };
  const request = Object.create(
    Object.create(Http2ServerRequest.prototype, Object.getOwnPropertyDescriptors(express.request)),
    { app: own },
  ) as Express['request'];
  const response = Object.create(
    Object.create(Http2ServerResponse.prototype, Object.getOwnPropertyDescriptors(express.response)),
    { app: own },
  ) as Express['response'];
  const handle = app as unknown as (req: AnyRequest, res: AnyResponse) => void;
  return (req, res) => {
    if (req.httpVersionMajor !== 2) {
      handle(req, res);
      return;
    }
    const [r, s] = [app.request, app.response];
    app.request = request;
    app.response = response;
    try {
      handle(req, res);
    } finally {
      app.request = r;
      app.response = s;
    }
  };
}
