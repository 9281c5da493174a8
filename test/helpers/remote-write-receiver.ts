/**
 * A fake remote-write 1.0 receiver on 127.0.0.1: it decodes each request with protobufjs and snappy (from the
 * published prompb schema, independently of src/remote-write/encode.ts) and answers as the test scripts it:
 * a status (with a body and headers), or a reset of the connection. Unscripted requests get 204, as Prometheus.
 */
import { once } from 'node:events';
import {
  createServer as createHttp,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';
import { uncompressSync } from 'snappy';

const SCHEMA = `
syntax = "proto3";
package prometheus;
message WriteRequest { repeated TimeSeries timeseries = 1; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
message Label { string name = 1; string value = 2; }
message Sample { double value = 1; int64 timestamp = 2; }
`;
const WriteRequest = protobuf.parse(SCHEMA).root.lookupType('prometheus.WriteRequest');

export interface DecodedSeries {
  labels: [string, string][];
  samples: { value: number; timestampMs: number }[];
}

export interface ReceivedRequest {
  headers: IncomingMessage['headers'];
  method: string;
  url: string;
  series: DecodedSeries[];
  /** Samples in the request. */
  samples: number;
  /** Bytes on the wire (snappy). */
  bytes: number;
  /** The answer it got. */
  answer: Answer;
}

export type Answer =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { reset: true }
  /** Never answered (until the receiver stops): for timeouts. */
  | { hang: true };

export interface Receiver {
  url: string;
  /** Every request decoded, in arrival order. */
  requests: ReceivedRequest[];
  /** Answers for the next requests, in order; after them, 204. */
  script(...answers: Answer[]): void;
  /** Resolves once `n` requests in all have arrived (bounded by `timeoutMs` of real time: then it rejects). */
  received(n: number, timeoutMs?: number): Promise<void>;
  /** Samples of the requests answered 2xx, per series (labels as `a=b,c=d` in order), in arrival order. */
  accepted(): Map<string, { value: number; timestampMs: number }[]>;
  stop(): Promise<void>;
}

export function decodeWriteRequest(body: Buffer): DecodedSeries[] {
  const raw = uncompressSync(body) as Buffer;
  const msg = WriteRequest.toObject(WriteRequest.decode(raw), { longs: Number, defaults: true }) as {
    timeseries: {
      labels: { name: string; value: string }[];
      samples: { value: number; timestamp: number }[];
    }[];
  };
  return msg.timeseries.map((ts) => ({
    labels: ts.labels.map((l) => [l.name, l.value] as [string, string]),
    samples: ts.samples.map((s) => ({ value: s.value, timestampMs: s.timestamp })),
  }));
}

export function seriesKey(labels: readonly (readonly [string, string])[]): string {
  return labels.map(([k, v]) => `${k}=${v}`).join(',');
}

export async function startReceiver(tls?: { cert: Buffer; key: Buffer; ca?: Buffer }): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const answers: Answer[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const hanging: ServerResponse[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let series: DecodedSeries[] = [];
      try {
        series = decodeWriteRequest(body);
      } catch {
        series = [];
      }
      const answer = answers.shift() ?? { status: 204 };
      requests.push({
        headers: req.headers,
        method: req.method ?? '',
        url: req.url ?? '',
        series,
        samples: series.reduce((n, s) => n + s.samples.length, 0),
        bytes: body.length,
        answer,
      });
      for (const w of waiters.filter((w) => requests.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      if ('reset' in answer) {
        req.socket.destroy();
        return;
      }
      if ('hang' in answer) {
        hanging.push(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      res.end(answer.body ?? '');
    });
  };
  const server: Server = tls
    ? createHttps({ cert: tls.cert, key: tls.key, ca: tls.ca, requestCert: tls.ca !== undefined }, handler)
    : createHttp(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/api/v1/push`,
    requests,
    script: (...more) => answers.push(...more),
    received: (n, timeoutMs = 20_000) =>
      requests.length >= n
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`receiver: ${requests.length} requests, waited for ${n}`)),
              timeoutMs,
            );
            waiters.push({
              n,
              resolve: () => {
                clearTimeout(timer);
                resolve();
              },
            });
          }),
    accepted: () => {
      const out = new Map<string, { value: number; timestampMs: number }[]>();
      for (const r of requests) {
        if (!('status' in r.answer) || r.answer.status >= 300) continue;
        for (const s of r.series) {
          const key = seriesKey(s.labels);
          out.set(key, [...(out.get(key) ?? []), ...s.samples]);
        }
      }
      return out;
    },
    stop: async () => {
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
